package seq

import (
	"errors"
	"fmt"

	"github.com/ruled-dev/ruled/host/seq/core"
)

// An operator's hand on one run: cancel it, bring its waiting step
// forward, or drop that step. Each says who asked (by: the API's peer or
// token) in the node it leaves in the run's tree, as Temporal's cancel,
// reset and signal do in a workflow's history.

// ErrNoRun is a control's answer for a run that is not live here: ended,
// never started, or another process's.
var ErrNoRun = errors.New("no such live run here")

// ErrNotWaiting is ControlNow's and ControlDrop's answer for a live run
// that waits for no step (running one, or between repeat passes).
var ErrNotWaiting = errors.New("the run is not waiting for a step")

// Control is an operator's hand on one live run (Runner.Control).
type Control uint8

const (
	// ControlCancel ends the run as a cancel-on event would: its timer
	// and its steps not yet handed to a worker are dropped, a step on a
	// worker finishes, its finally steps run, and its pending record
	// goes.
	ControlCancel Control = iota
	// ControlNow makes the run's waiting step due now: an after's step
	// runs (judged against the rule as loaded, as at its time), a
	// wait-for stops waiting as if its timeout had come, a retry tries
	// again. Its pending record keeps its time until the step has run: a
	// crash before then waits again.
	ControlNow
	// ControlDrop drops the run's waiting step, as a step whose rule
	// changed under it is dropped: the run ends, dropped, and its record
	// goes.
	ControlDrop
)

// Control applies c to live run id for by, whom the run's tree names:
// ErrNoRun for a run not live here, ErrNotWaiting for ControlNow and
// ControlDrop on a run that waits for no step. One method for the three,
// which were one each with the same shape (issue 40).
func (rn *Runner) Control(id string, c Control, by string) (err error) {
	rn.apply(func(fx *effects) { err = rn.m.controlLocked(id, c, by, fx) })
	return err
}

// controlLocked is Control under the runner's lock.
func (sm *machine) controlLocked(id string, c Control, by string, fx *effects) error {
	r, err := sm.liveLocked(id, c != ControlCancel)
	switch {
	case err != nil:
	case c == ControlCancel:
		r.more().reason = "cancelled by " + by
		r.setBy(by)
		fx.drop(sm.endLocked(r, core.Cancelled)...)
	case r.Hand == core.HandParking: // park carries it out once the record is down
		if c == ControlNow {
			r.Hand = core.HandNow
			r.byHand(by, "run now by ")
		} else {
			r.Hand = core.HandDrop
			r.setBy(by)
		}
	case c == ControlNow && !r.timer.Stop(): // it fired meanwhile: the step is on its way
		err = fmt.Errorf("%w: %s", ErrNotWaiting, id)
	case c == ControlNow:
		r.timer = nil
		r.byHand(by, "run now by ")
		sm.dueLocked(r, fx)
	default:
		sm.unawaitLocked(r)
		r.setBy(by)
		fx.drop(sm.dropRunLocked(r, r.seq.Rule.ID, "dropped by "+by)...)
	}
	return err
}

// RuleOf is the rule of live run id, false when none is live here.
func (rn *Runner) RuleOf(id string) (rule string, ok bool) {
	rn.view(func() {
		if r := rn.m.runs[id]; r != nil && !r.Over() {
			rule, ok = r.seq.Rule.ID, true
		}
	})
	return rule, ok
}

// liveLocked is live run id for a control, one parked for a step's
// timer when waiting says so: ErrNoRun or ErrNotWaiting otherwise.
func (sm *machine) liveLocked(id string, waiting bool) (*run, error) {
	r := sm.runs[id]
	switch {
	case r == nil || r.Over():
		return nil, fmt.Errorf("%w: %s", ErrNoRun, id)
	case waiting && r.Hand == core.HandParking:
		// Its record is being written (and may be listed already): the
		// control is carried out once it is down.
	case waiting && (r.timer == nil || !r.AtStep):
		return nil, fmt.Errorf("%w: %s", ErrNotWaiting, id)
	}
	return r, nil
}

// byHand notes that by acted on r's waiting step (what), in its delay
// node's detail.
func (r *run) byHand(by, what string) {
	r.setBy(by)
	if r.delay.Seq != 0 {
		r.delay.Detail = joinDetail(r.delay.Detail, what+by)
	}
}

// setBy notes who acted on r by hand, for its log nodes: kept in r's rare
// part until its delay node closes (few runs are acted on by hand), not
// in a field that every parked run would carry (TestParkedRunsMemory).
func (r *run) setBy(by string) {
	if by != "" || r.rare != nil {
		r.more().by = by
	}
}

// byOf is who acted on r by hand, "" for none.
func (r *run) byOf() string { return r.few().by }
