package core

import "time"

// GoKind is how a run goes on to its next step.
type GoKind uint8

const (
	// Submit: the step goes to a worker now.
	Submit GoKind = iota
	// Follow: the run's record is written for the step first — the run
	// has passed a durable point, and a crash during the step must run it
	// again — then the step goes to a worker.
	Follow
	// Park: the step waits out Go.After on a timer first, its record
	// written before the timer is armed when Go.Durable.
	Park
)

// Go is how a run goes on to its next step (Schedule).
type Go struct {
	Kind    GoKind
	After   time.Duration
	Durable bool
}

// Schedule is how a run goes on to a step with delay after (durable: its
// rule says so), given what the store holds for the run (rec) and whether
// there is a store. A run with a record is recorded at every step it
// reaches until it ends: it follows it, or parks durably.
func Schedule(after time.Duration, durable bool, rec Record, store bool) Go {
	recorded := rec != NoRecord && store
	switch {
	case after <= 0 && !recorded:
		return Go{Kind: Submit}
	case after <= 0:
		return Go{Kind: Follow}
	}
	return Go{Kind: Park, After: after, Durable: (durable || recorded) && store}
}

// Ending is what ending a run asks of the driver, beside what every end
// does (the run's wait and timer stopped, the end in the execution log).
// The driver carries it out in the order of the fields.
type Ending struct {
	// 1. Close: the run ends as far as its own steps go and runs its
	// finally steps, holding its key's slot (its key's live → closing)
	// until they are done, when it ends again with Run.Why. Without
	// Close the run leaves its key, is counted by its outcome, and
	// (unless it was let go) its rule's OnEnd is told.
	Close bool
	// 2. Settle: the caller's ticket (the journal's, the fleet's item)
	// is settled — the trigger's fate is decided here; else it is
	// abandoned: the run was let go before its first record, and whoever
	// replays or re-admits it decides.
	Settle bool
	// 3. Drop: the run's record goes.
	Drop bool
	// 4. Submit: (Close) the first finally step goes to a worker now;
	// else the step of its own on a worker submits it when it is done, or
	// the record being written for its wait once that write answered
	// (Run.Handover): the finally steps' record must not race it.
	Submit bool
}

// End ends r for why, and says what the driver does; an ended run does
// not end again (false). A run whose rule has finally steps closes first
// (for any cause but a stop); their record is written by the first of them
// when store and the run is recorded or its rule durable, so that a crash
// while they run runs them again; otherwise its waiting step's record
// goes. A run let go of (Stop) keeps its record for whoever replays it.
func End(r *Run, why Outcome, sh Shape, store, durable bool) (Ending, bool) {
	if r.Ended() {
		return Ending{}, false
	}
	if why != Stop && !r.Final && sh.Finally > 0 {
		r.Final, r.Why = true, why
		e := Ending{Close: true, Settle: true}
		switch {
		case store && (r.Record != NoRecord || durable):
			r.FinRecord = true
		case r.Record != NoRecord:
			r.Record = NoRecord
			e.Drop = true
		}
		r.Step, r.Attempt = 0, 0
		if r.Running > 0 || r.Hand != NoHand {
			r.Handover = true
		} else {
			e.Submit = true
		}
		return e, true
	}
	r.Phase = Ended
	if why == Stop {
		r.Phase = Stopped
	}
	e := Ending{Settle: why != Stop}
	if r.Record != NoRecord && why != Stop {
		r.Record = NoRecord
		e.Drop = true
	}
	return e, true
}

// Wrote is how the write of a parking run's record went.
type Wrote uint8

const (
	// NotWritten: the wait is not durable; nothing was written.
	NotWritten Wrote = iota
	WriteOK
	// WriteFailed: the write failed, and may have landed all the same.
	WriteFailed
	// WriteNotHeld: the trigger is no longer this process's to record
	// (a fleet's place moved under it).
	WriteNotHeld
)

// Parking is what the driver does once a parking run's record is down
// (Parked), in the order of the fields.
type Parking struct {
	// LetGo: the run is no longer this process's: it ends as let go
	// (Stop), released, its ticket abandoned — its place's new holder
	// admits the trigger. Nothing else follows.
	LetGo bool
	// Ended: the run ended while its record was written; nothing
	// follows but DropRecord.
	Ended bool
	// DropRecord: (Ended) the record written goes with the run; a run
	// let go of keeps it for whoever replays it next.
	DropRecord bool
	// Settle: the trigger's ticket is settled: the record holds the
	// event now.
	Settle bool
	// Drop: an operator dropped the waiting step while it parked: the
	// run ends, dropped.
	Drop bool
	// Now: an operator asked for the step now while it parked: it comes
	// due at once.
	Now bool
	// Arm: the step's timer is armed (a wait-for also listens).
	Arm bool
}

// Parked is the second half of parking a run, once its record's write
// (w) is done: the driver wrote it without its lock, and anything may have
// happened to the run meanwhile — it ended, it was let go, an operator's
// run-now or drop came (Run.Hand). A record whose write failed may have
// landed: the run goes on from memory, its record Uncertain.
func Parked(r *Run, w Wrote) Parking {
	h := r.Hand
	r.Hand = NoHand
	switch {
	case w == WriteNotHeld:
		return Parking{LetGo: true}
	case r.Over():
		// A run closing whose finally steps write their record (under the
		// same id, once this write answered: Handover) keeps it for them
		// to replace: a drop carried after could remove theirs.
		return Parking{Ended: true, DropRecord: w != NotWritten && !r.LetGo() && !r.FinRecord}
	}
	switch w {
	case WriteOK:
		r.Record = Written
	case WriteFailed:
		r.Record = Uncertain
	default:
		r.Record = NoRecord
	}
	p := Parking{Settle: w == WriteOK}
	switch h {
	case HandDrop:
		p.Drop = true
	case HandNow:
		p.Now = true
	default:
		p.Arm = true
	}
	return p
}
