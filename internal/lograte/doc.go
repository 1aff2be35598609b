// Package lograte folds repeated warnings: a warning that an input can
// trigger — a plugin's dropped lines, a refused message, a failing step —
// is logged at most once a second per cause, with a count of the ones it
// folded. A rule logging per event at 1,500 runs/s wrote ~700 warning
// lines a second about its dropped lines (issue 38): the bound on the
// plugin's lines did not bound the daemon's own.
//
// It owns no goroutine and no logger: the caller asks Allow and writes the
// line itself, so each line keeps its own message and fields. It refuses
// unbounded memory: at most MaxCauses causes are tracked; past them, the
// causes not logged within the period are forgotten, and if none is, the
// rest share one cause.
package lograte
