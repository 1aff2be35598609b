// Package engine owns the engine: the plugin catalog, the rule set, the
// rules' lifecycle states, the worker pool and the sequencer, built
// together from one Config by New and immutable after it. It binds rules
// to plugins (a rule's calls configured on the catalog, wrapped for
// metrics and watchers), resolves the runner's steps (seq.Resolver: the
// rule as loaded now, or a step pinned to the module it was scheduled
// with), connects the runner and the rules' states both ways (the gate,
// errors and completions, transitions that end or release runs), applies
// an operator's commands, and reports what it runs (api.Engine's
// answers, the execution log's queries).
//
// What each lifecycle state does to a rule's runs:
//   - runnable: triggers start runs, due steps run.
//   - paused, sleeping: new triggers are ignored (counted as suppressed);
//     a step that comes due is held, and runs when the rule is runnable
//     again unless it was held longer than the replay window (then it is
//     dropped, as at a restart). A step already running finishes.
//   - killed, failed: live runs end at once (a running step finishes, the
//     rest does not run) and their waiting steps' records are dropped with
//     the reason; new triggers are ignored.
//   - completed (once: true): new triggers are ignored; runs already live
//     finish.
//
// It refuses the world outside: the store, the bus, ingest, the API,
// fleet membership, reload timing and deployed mode are adapters that
// host/daemon wires around it. The wasm runtime comes in built (its
// services are the adapters'), and so do the stores it writes through
// (Config.Hasher, Config.Pending, Config.Log).
//
// Goroutines: the pool's workers, started by New and stopped by Close;
// the sequencer's timers run on Config.Clock.
package engine
