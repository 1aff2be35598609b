// Package task gives every rule a lifecycle: a durable state (runnable,
// sleeping, paused, fault, completed, killed, failed) that operators change
// with commands and that a rule's errors change through an error handler —
// a rule whose plugins keep failing sleeps, and past its error budget
// fails, without touching the other rules.
//
// It follows seed 001 (Metafora's statemachine): the same states, messages
// and transition table, the same error handler (8 errors within 4 hours →
// failed, otherwise sleep 10 minutes), the same StateStore. What differs, and
// why, is in RATIONALE.md: a task is a rule, not a goroutine running a
// handler, so there is no handler to stop and restart — the sequencer asks
// the task whether to admit triggers and what to do with steps that come
// due; an operator can reset a rule out of a terminal state; a state that
// will not decode fails its rule with the reason instead of ending the task.
//
// Apply is pure (state, message, time in; state out). Tasks holds the
// states of all rules, persists every transition before it takes effect,
// and wakes sleeping rules on the scheduler it is given; it owns no
// goroutine.
package task
