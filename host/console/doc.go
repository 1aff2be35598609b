// Package console is the operator's web page: the files of a small
// single-page app, embedded in the binary (no CDN, no build step, works
// offline), that shows what the daemon's API serves — rules with their
// states and counters and the files that did not load, a rule's page (its
// definition, counters, runs, "why not", state history, a test-event
// form), runs and a run's page (its tree on a timeline, a node's details,
// its commands), waiting steps, plugins — and sends the rule and run
// commands. It follows the daemon through GET /v1/changes (a line
// whenever something it reports changed) and polls when that stream is
// away; below 760 px its tables become cards.
//
// It owns the page's files and the handler that serves them with a strict
// content security policy. It refuses everything else: it holds no state,
// reads nothing from the daemon (the page calls the API from the browser),
// and does no authentication (the API's guard, in front of it, does).
package console
