// Package journal keeps the events a device has acknowledged until the rules
// they trigger have taken them: the accepted-event journal.
//
// Without it, "accepted" meant "queued in memory". An event answered with 202
// waited for a worker to evaluate its rule's condition and write its first
// pending record, and a crash in that window lost it. Within the pool's
// capacity the window is milliseconds; under overload it is the whole queue
// (a 7x overload cut 583 of 675 accepted events on a kill). The journal
// closes it for the events that matter: one that triggers a rule with a
// durable step is written to the store before it is acknowledged, and each
// such rule acknowledges it back once its fate no longer depends on memory —
// its condition said no, its rule refused or suppressed it, its run wrote its
// first pending record, or its run ended. The entry goes when every rule has.
// A start re-admits what is still there, to the rules that had not taken it.
// A step's publish is journaled the same way when it triggers a durable
// rule: the publishing step's own record covers the event until the step
// returns, the journal from then on, so a chain of durable rules loses no
// link to a kill. A paused or sleeping rule that holds a trigger (on-pause:
// hold) has not taken it: its entry stays.
//
// A write the store refused may have landed (its answer lost as the store
// went away): the event was refused, so that entry is deleted like an
// acknowledged one, and a start does not re-admit what its sender was told
// to send again.
//
// It owns the entries' keys and format and the deletion of acknowledged
// entries, batched on one goroutine (Close stops it). It refuses to know
// rules, runs or the bus: which rules an entry waits for, and what a rule
// taking an event means, are the daemon's and the sequencer's.
//
// # Keys
//
//	ruled:journal    one field per acknowledged event still waiting for a
//	                 rule: a random entry id (events' own ids are the
//	                 client's and may repeat), the value the Entry's JSON
//
// # Cost and what it does not promise
//
// One store write per journaled event before its 202 (on bbolt an fsynced
// commit: 1.1-1.35 ms an ingest here against 7.5 µs unjournaled, measured
// by host/daemon's BenchmarkIngestJournal with the runs' own pending records
// contending for bbolt's one writer; concurrent requests do not share a
// commit), and one delete per batch of acknowledgements. A sequential client
// of a durable rule on bbolt is held to under a thousand events a second. Events that trigger no durable rule
// are not journaled and cost nothing: telemetry keeps its speed.
//
// Deletion is asynchronous, so a crash can leave an entry whose rules all
// took it. A start then skips every rule holding a pending record for the
// event; a run that had already ended in the last few milliseconds before the
// crash runs again — at least once, as actions are.
package journal
