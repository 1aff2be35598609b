// Package scenario reads and runs scenario files — rule tests any author
// can write, in any plugin language — and the captures `ruled record`
// writes. `ruled test` is its command.
//
// A scenario names its rules, plugins and grants, then takes steps on a
// virtual clock: events at times, clock advances, restarts, plugin and rule
// replacements, new answers from the HTTP stub, operator commands, replays of captures, and expectations
// (published events, action calls, rule states, run outcomes, execution
// trees, outbound HTTP requests). A scenario reaches no network: plugins'
// requests go to the harness's stub, answered as its `http:` says. Run drives a ruletest.Harness through them and returns a Result:
// the failures with what was expected beside what happened, the timeline,
// the daemon's log, and how much rule time passed in how much wall time.
//
// It owns the file formats (Parse, ReadCapture) and the comparisons. It
// refuses anything it cannot check: unknown keys, steps with two actions,
// a capture that lost events are errors, never skipped.
package scenario
