// Package daemon wires ruled together and owns its start and stop order:
// store → the engine (plugins, rules, the rules' states, pool, runner:
// host/engine) → replay and re-admission → bus → (fleet) → workers
// released → API → watcher and refresher → the events file on the way up,
// the reverse on the way down (the rules' states are released before the
// runner stops, so runs cut short by the stop are no rule's errors). What
// each part does is its package's: the engine's, ingest's (host/ingest),
// the API's (host/api, serving the daemon as its api.Engine), the
// metrics' (host/metrics, reading it as a metrics.Source), the watchers'
// (host/observe), reload timing, announcements and deployed mode
// (host/reload), fleet placement and membership (host/placement), the
// settings (host/config). Its own glue is what meets nowhere else: the kv
// quota as the guest's status, the bus's subscriptions, the control
// channel's dispatch (a command: api.ControlCommand; an announcement:
// reload.FromElsewhere).
// Its Config is host/config's, which also reads the config file.
//
// A rule file or plugin that fails to load is reported (log, Status) and
// the daemon boots with what is valid, rather than refusing to start: a
// device with one bad rule should still run the other ninety-nine. A
// store that does not answer at start is retried for Config.StoreWait
// before any rule starts.
//
// Operators command rules with Daemon.Command (engine.Engine.Command):
// from the CLI and the HTTP API (POST /v1/rules/{id}/{command}), and in
// Redis mode from the control channel as topic "ruled.cmd.<rule>" with an
// status.Command as JSON payload, e.g.
//
//	PUBLISH ruled:control "ruled.cmd.low-battery\n{\"command\":\"sleep\",\"for\":\"1h\"}"
//
// Execution log: the runner's Tracer is a runlog.Log over segment files
// in log/ (bbolt mode) or the same Redis; it closes after the engine,
// just before the store. Rule changes are announced on the control
// channel (reload.TriggersChangedTopic, Redis mode) and the rules directory is
// read again on another process's announcement and every
// Config.RulesRefresh. Deployed (Config.Deployed), the rules and plugins
// are what `ruled deploy` put in Redis: written under DataDir/deployed at
// start, on an announcement and every refresh, and loaded from there as
// directories are (reload.Deployed).
//
// Goroutines: the engine's workers (stopped by Stop, through
// engine.Engine.Close), the API's servers (api.Server, closed by Stop),
// the events-file reader (ends at EOF or Stop), the file watcher and the
// rules refresher (reload.Watcher, reload.Refresher, closed by Stop), the
// execution log's writer (closed by Stop), the fleet member (stopped by
// Stop) and, in Redis mode, the bus subscriptions (closed by Stop).
package daemon
