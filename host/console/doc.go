// Package console is the operator's web page: the files of a small
// single-page app, embedded in the binary (no CDN, no build step, works
// offline), that shows what the daemon's API serves — rules with their
// states and counters, runs and their trees, waiting steps, plugins — and
// sends the rule commands.
//
// It owns the page's files and the handler that serves them with a strict
// content security policy. It refuses everything else: it holds no state,
// reads nothing from the daemon (the page calls the API from the browser),
// and does no authentication (the API's guard, in front of it, does).
package console
