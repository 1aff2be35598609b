// Package seq turns a compiled rule into a sequence of steps and walks it.
//
// A rule is a recipe: its steps run in order, and a step is submitted only
// once the step before it has finished. Nothing here owns a goroutine. Step
// N+1 is submitted from step N's completion callback, which runs on the pool
// worker that just finished step N, so a scooter with a hundred half-finished
// sequences pays for a hundred small structs and nothing else. A step with an
// after delay is the one exception to "submitted right away": it parks on a
// scheduler timer between the step before it finishing and its own submit,
// holding no worker and no goroutine of its own while it waits.
//
// A run that ends for any cause but Stop runs its rule's finally steps
// first, after a step of its own that is on a worker, keeping its key's
// slot until they are done (core.End); a failed step may be tried again
// after a backoff, parked as an after is, its record written whether or not
// the step is durable.
//
// Between a trigger's condition and its rule's mode come the rule's
// debounce (the key's last trigger held, as a record, until the key is
// quiet: debounce.go) and throttle (a key's starts bounded by a rate, the
// excess queued in order or dropped: throttle.go).
//
// A trigger reaches a rule through Fire, which only queues the admission: the
// rule-level condition runs on a pool worker, and only a trigger whose
// condition holds is weighed against the rule's mode (single, restart, queue,
// parallel), its bound and its cooldown. A durable step writes a Pending
// record before it parks, and Replay picks those records up after a restart.
//
// Three parts, one lock. The Runner is the driver: its public methods,
// the pool's jobs (a condition's or a step's call), the store's writes and
// the timers' callbacks. Every change goes through Runner.apply, which
// runs a move of the machine under the lock and then carries out what the
// move left in its effects — cooldowns to keep, records to drop and to
// write (each answer fed back through apply), steps to judge — in that
// order (drive.go). The machine (machine.go) is the state — the rules'
// keys, the runs, what waits — and its moves, which never wait. The
// decisions themselves are pure functions of plain data in host/seq/core
// (a trigger's verdict, a run's next position, how a step settles). A
// logbook tells the execution log; warnings fold what inputs trigger.
//
// What a run does is told to a Tracer (the execution log, host/runlog) as
// it happens: the run when it starts and ends, a node before each step's
// content runs and after, delays while they wait, cancels and drops with
// their reason, sub-runs fired by a step (Trigger.Parent). Telling never blocks; a
// record carries what a replayed run needs to continue its tree. A Gate
// (the rules' lifecycle states) decides whether a trigger starts a run
// and whether a due step runs, waits or is dropped.
//
// Adapted from the sequencer it started from (ARCHITECTURE.md, "Where the design came from"): steps are known by name, not
// index, because rules are edited; CancelMatching takes the cancelling event,
// not only its topic, because cancel-on may be correlated with the trigger
// (the same vehicle); records also carry the remaining delay, the time they
// were written and a format version. RATIONALE.md lists each adaptation.
package seq
