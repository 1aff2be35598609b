// Package observe lets a watcher see what the engine does without slowing
// it: the events it dispatches (Taps, and Stream, the NDJSON stream of GET
// /v1/events/watch that `ruled record` and the console read), and the
// action calls a step makes (Action, for sdk/ruletest's expectations).
//
// It owns the shapes watchers get (Seen, ActionCall) and the rule that a
// watcher never holds the engine up: a tap runs on the dispatching
// goroutine and must not block, a stream that reads too slowly loses
// events (said in a {"dropped":N} line) rather than holding dispatch, and
// an idle engine pays one atomic load per event. It refuses to decide
// what is dispatched or run; it starts no goroutine.
package observe
