package core

import "time"

// SettleKind is what a run does with a step that has ended (Settle).
type SettleKind uint8

const (
	// SettleCut: the step failed after its run was let go (the process
	// stopping, the key's place taken over). Nobody's error: not counted,
	// not retried, not the run's end; its record, if any, runs the step
	// again wherever it is replayed.
	SettleCut SettleKind = iota
	// SettleRetry: the step is tried again after SettleIn.RetryIn, its
	// attempt counted on.
	SettleRetry
	// SettleFail: the step failed for good, and the run with it (its
	// finally steps, if any, run).
	SettleFail
	// SettleGoOn: the run goes on to what follows the step (Advance):
	// the step did its work, its condition said no, or it failed under
	// on-error: continue.
	SettleGoOn
)

// SettleIn is what Settle reads about the step that ended.
type SettleIn struct {
	// Failed: its condition or its action failed.
	Failed bool
	// RetryIn is the retry plan's wait for a failed action (Retry): 0,
	// not tried again.
	RetryIn time.Duration
	// ContinueOnError is the step's on-error: continue.
	ContinueOnError bool
	// Unread: the failure is that the run's trigger could not be read
	// back (it was another's). on-error: continue does not cover it: the
	// rest of the run would read the same trigger.
	Unread bool
}

// Settle decides what r does with the step that ended, and sets r's
// attempt for it: the next for a retry, none otherwise. A cut changes
// nothing.
//
// The order: a run let go of is cut first, whatever the step did — its
// failure is most often the services going away with the process, and
// whoever replays the record decides. A retry needs the run still live:
// one cancelled or ended while its step ran is not tried again. Then a
// failure fails the run, unless the step says on-error: continue.
func Settle(r *Run, attempt int, in SettleIn) SettleKind {
	switch {
	case in.Failed && r.LetGo():
		return SettleCut
	case in.Failed && in.RetryIn > 0 && !r.Over():
		r.Attempt = uint8(attempt + 1)
		return SettleRetry
	}
	r.Attempt = 0
	if in.Failed && !(in.ContinueOnError && !in.Unread) {
		return SettleFail
	}
	return SettleGoOn
}
