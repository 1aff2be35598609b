package core

// Run is a run as plain data: where it is in its rule, how it stands, and
// what the store holds for it. The driver keeps one in each of its runs,
// beside what a run needs of the world (its sequence, trigger, timer,
// ticket), and changes it under its lock. Nothing here points anywhere:
// a Run is copied, compared and checked whole.
type Run struct {
	Pos
	// Attempt is the next step's try, from 1 (0 reads as 1): its retry.
	// At most rules.MaxAttempts, so a byte.
	Attempt uint8
	Phase   Phase
	// Record is what the store holds for the step the run waits for.
	Record Record
	// Why is how the run ended, once it runs its finally steps (Final)
	// or has ended.
	Why Outcome
	// Running counts the steps of the run on workers now: a step's end is
	// carried out (its record moved or dropped) after the next step was
	// handed on, which may begin meanwhile, so a flag one step clears
	// could read "idle" while the next runs. At most a few.
	Running uint8
	// Handover: the run ended while a step of its own was on a worker,
	// or while its wait's record was being written; that step once done,
	// or that write once answered, submits the first finally step.
	Handover bool
	// FinRecord: the first finally step writes the record of the run's
	// finally steps before it runs (a durable run's).
	FinRecord bool
	// Hand is where an operator's control of a parking run stands.
	Hand Hand
	// AtStep: the run's timer is a step's (an after, a wait-for's
	// timeout, a retry's backoff), which an operator may bring forward;
	// not a pass's gap.
	AtStep bool
}

// Pos is where a run is in its rule's steps.
type Pos struct {
	// Step is the step the run runs next: an index of the rule's steps,
	// or of its finally steps when Final.
	Step int
	// Pass is the run's pass through its steps, from 0 (repeat:).
	Pass int
	// Final: the run has ended and runs its finally steps.
	Final bool
}

// Phase is where a run is in its life. A run is live until it ends, once,
// for a cause (Outcome): then ended (completed, failed, cancelled,
// dropped: its records go), or stopped (let go of — the runner stopped,
// its place moved: its records stay for whoever replays them next), or, a
// stop that is also a release, released (its place was let go while a
// step of it was queued for a worker: that step does not run, the place's
// new holder runs it from the record). The order is the order of the
// transitions: live → ended | stopped → released.
type Phase uint8

const (
	Live Phase = iota
	Ended
	Stopped
	Released
)

// Record is what the store holds for the step a run waits for.
type Record uint8

const (
	NoRecord Record = iota
	// Written: a pending record covers the step.
	Written
	// Uncertain: the record's write failed and may have landed all the
	// same (a store that went away before it answered). It does not cover
	// the step, but it is dropped when the step is done with it, as a
	// record is, so that a restart does not run the step again.
	Uncertain
)

// Hand is where an operator's control of a parking run stands: a run
// whose record is being written has no timer yet to bring forward or
// stop, so the control waits for the write.
type Hand uint8

const (
	NoHand      Hand = iota
	HandParking      // the driver has opened the wait and writes its record
	HandNow          // run now came while parking: run the step once parked
	HandDrop         // drop came while parking: drop it once parked
)

// Ended reports whether the run has ended, for any cause.
func (r *Run) Ended() bool { return r.Phase != Live }

// Over reports whether the run's own steps are over: it has ended, or
// runs its finally steps. A timer, a retry or a queued step of its own
// steps finds it over and stops there.
func (r *Run) Over() bool { return r.Phase != Live || r.Final }

// LetGo reports whether the run was stopped rather than ended: its
// records are kept.
func (r *Run) LetGo() bool { return r.Phase >= Stopped }

// Release marks a stopped run released: a step of it still queued for a
// worker does not run.
func (r *Run) Release() {
	if r.Phase == Stopped {
		r.Phase = Released
	}
}

// Try is the number of the attempt the run's next step makes, from 1.
func (r *Run) Try() int { return max(int(r.Attempt), 1) }
