// Package daemon wires ruled together and owns its start and stop order:
// store → plugins → rules → the rules' task states → replay → bus → ingest
// on the way up, the reverse on the way down (the task states are released
// before the runner stops, so runs cut short by the stop are no rule's
// errors). It holds the pieces (the wasm runtime, the worker pool,
// the scheduler, the sequencer, the bus) and the small adapters between
// them; each piece's logic lives in its own package. The HTTP API is
// host/api's, serving the daemon as its api.Engine, and the metrics are
// host/metrics', reading it as a metrics.Source; watchers are
// host/observe's, when to reload is host/reload's, the plugins and the
// module store are host/catalog's, the loaded rules host/ruleset's, and
// the way in (ingest, journal admissions, dispatch) host/ingest's. The
// rest (binding rules to plugins, deployed mode) still lives here, on
// its way to packages of its own (ARCHITECTURE.md, "Where the split
// stands").
//
// A rule file or plugin that fails to load is reported (log, Status) and
// the daemon boots with what is valid, rather than refusing to start: a
// device with one bad rule should still run the other ninety-nine.
//
// Rule lifecycle: each rule's task state (host/task) gates the sequencer —
// only a runnable rule starts runs; a paused or sleeping rule's due steps
// are held until it runs again, a killed or failed one's are dropped with
// the reason (taskGate says it state by state). Operators command rules
// with Daemon.Command: from the CLI and the HTTP API
// (POST /v1/rules/{id}/{command}), and in Redis mode from the control
// channel as topic "ruled.cmd.<rule>" with an api.Command as JSON payload,
// e.g.
//
//	PUBLISH ruled:control "ruled.cmd.low-battery\n{\"command\":\"sleep\",\"for\":\"1h\"}"
//
// A store that does not answer at start is retried for Config.StoreWait
// before any rule starts.
//
// Execution log: the runner's Tracer is a runlog.Log over segment files in log/ (bbolt mode) or
// the same Redis; it closes after the runner and pool, just before the
// store, and before Replay the runs a stopped process left running with
// nothing to resume them are marked interrupted (or unlogged: they went
// on in the moments before a kill, runlog.Unended). GET /v1/runs and
// /v1/runs/{id}/tree read it. Rule changes are announced on the control
// channel (TriggersChangedTopic, Redis mode) and the rules directory is
// read again on another process's announcement and every
// Config.RulesRefresh. Deployed (Config.Deployed), the rules and plugins
// are what `ruled deploy` put in Redis: written under DataDir/deployed at
// start, on an announcement and every refresh, and loaded from there as
// directories are (deployed.go).
//
// Goroutines: the pool's workers (stopped by Stop), the API's servers
// (api.Server, closed by Stop), the events-file reader (ends at EOF or
// Stop), the file watcher and the rules refresher (reload.Watcher,
// reload.Refresher, closed by Stop), the execution log's writer (closed by Stop),
// and, in Redis mode, the bus subscriptions (closed by Stop).
package daemon
