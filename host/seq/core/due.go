package core

// DueKind is what a run does when its parked step comes due (Due).
type DueKind uint8

const (
	// DueGone: the run is over already (cancelled, let go); nothing.
	DueGone DueKind = iota
	// DueLetGo: its key's place moved while it waited. The run ends
	// (Stop): the place's new holder has the record and runs the step.
	DueLetGo
	// DueHold: its rule is paused or asleep. The run is held, its delay
	// closed as held, until the rule admits again (ReleaseHeld).
	DueHold
	// DueDrop: the run is dropped, for Due's reason: its rule is killed
	// or failed, or the step it waited for is gone or changed.
	DueDrop
	// DueJudge: the step is to be judged against the rule as loaded now
	// (the driver's judge, outside its lock: it may read modules), then
	// Due asked again with the verdict.
	DueJudge
	// DueWaitOver: the step is a wait-for whose time is up; the wait
	// ends as its timeout says (go on, or end the run).
	DueWaitOver
	// DueRun: the step goes to a worker.
	DueRun
)

// DueIn is what Due reads: the run's standing and what the driver found.
type DueIn struct {
	// Owned: this process still holds the run's key's place.
	Owned bool
	// Hold and Drop are the rule's gate: paused or asleep (Hold), or
	// killed or failed (Drop, the reason).
	Hold bool
	Drop string
	// Judged: the driver has judged the step; Verdict is the judge's
	// reason to drop it, "" to run it; Wait, that the judged step is a
	// wait-for.
	Judged  bool
	Verdict string
	Wait    bool
}

// Due decides what r does with its parked step now due, and why when it
// is dropped. The driver asks it twice: before judging the step (it
// answers DueJudge when nothing else comes first) and after, with the
// verdict. In between the driver does not hold its lock, so r may have
// ended meanwhile: Due answers DueGone then.
//
// The order is the one a device's operator would expect: a run already
// over does nothing; a key whose place moved is the new holder's; a
// paused rule holds what comes due rather than dropping it; a killed
// rule drops it; only then is the step judged (its module, its
// fingerprint) — a step held while its rule is paused is judged when it
// is released.
func Due(r *Run, in DueIn) (DueKind, string) {
	switch {
	case r.Over():
		return DueGone, ""
	case !in.Judged && !in.Owned:
		return DueLetGo, ""
	case !in.Judged && in.Hold:
		return DueHold, ""
	case !in.Judged && in.Drop != "":
		return DueDrop, in.Drop
	case !in.Judged:
		return DueJudge, ""
	case in.Verdict != "":
		return DueDrop, in.Verdict
	case in.Wait:
		return DueWaitOver, ""
	}
	return DueRun, ""
}
