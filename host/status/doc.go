// Package status holds the daemon's words for what it reports and what
// it is told: the status of the daemon, its rules and plugins (Status,
// RuleStatus, PluginStatus …), a waiting step as `ruled pending ls` shows
// it (PendingRecord), an operator's commands (Command, Commands,
// RunCommands, RunControl), and the engine's errors (ErrUnknownRule,
// ErrBadCommand, ErrNotRerunnable, ErrNoExecLog).
//
// They lived in host/api, the HTTP package, so the packages that make the
// answers — engine, catalog, ingest, metrics, placement — and the authors'
// harness imported the HTTP server for their own vocabulary (issue 40).
// They are one package below all of them, not each in its owner, because
// one value gathers several owners' parts: Status has the runner's, the
// journal's, the execution log's, the store's and the fleet's, and
// PendingRecord joins store's record and seq's step. Each type's JSON
// names are the API's contract; the CLI and the console decode them.
//
// It owns the shapes and refuses behaviour: no method here computes an
// answer, and nothing here imports the API, the engine or the daemon.
package status
