// Package task gives every rule a lifecycle: a durable state (runnable,
// sleeping, paused, fault, completed, killed, failed) that operators change
// with commands and that a rule's errors change through an error handler —
// a rule whose plugins keep failing sleeps, and past its error budget
// fails, without touching the other rules.
//
// It follows Metafora's statemachine (ARCHITECTURE.md, "Where the design came from"): the same states, messages
// and transition table, the same error handler (8 errors within 4 hours →
// failed, otherwise sleep 10 minutes), the same StateStore. What differs, and
// why, is in RATIONALE.md: a task is a rule, not a goroutine running a
// handler, so there is no handler to stop and restart — the sequencer asks
// the task whether to admit triggers and what to do with steps that come
// due; an operator can reset a rule out of a terminal state; a state that
// will not decode fails its rule with the reason instead of ending the task.
//
// Apply is pure (state, message, time in; state out); an Error message
// walks through Fault to the error handler's verdict in one Apply, and Walk
// returns the hops. Tasks holds the states of all rules, persists every
// transition before it takes effect (a failed store write refuses it),
// wakes sleeping rules on the scheduler it is given, and on Release stops
// deciding anything so that a process leaves its states as stored; it owns
// no goroutine (a sleeper's wake-up is the scheduler's timer).
//
// It refuses: transitions not in the table (IllegalError naming event and
// state), a sleep without a deadline (MissingUntilError), a reset of a rule
// that is not failed, killed or completed. What a state does to a rule's
// runs is the daemon's business (see its taskGate), not this package's.
package task
