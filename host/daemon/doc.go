// Package daemon wires ruled together and owns its start and stop order:
// store → plugins → rules → replay → bus → ingest on the way up, the reverse
// on the way down. It holds the pieces (the wasm runtime, the worker pool,
// the scheduler, the sequencer, the bus, the HTTP API) and the small
// adapters between them; each piece's logic lives in its own package.
//
// A rule file or plugin that fails to load is reported (log, Status) and
// the daemon boots with what is valid, rather than refusing to start: a
// device with one bad rule should still run the other ninety-nine.
//
// Goroutines: the pool's workers (stopped by Stop), the HTTP servers (shut
// down by Stop), the events-file reader (ends at EOF or Stop), and, in Redis
// mode, the bus subscription (closed by Stop).
package daemon
