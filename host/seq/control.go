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

// ErrNotWaiting is RunNow's and DropWaiting's answer for a live run that
// waits for no step (running one, or between repeat passes).
var ErrNotWaiting = errors.New("the run is not waiting for a step")

// CancelRun ends live run id as a cancel-on event would: its timer and
// its steps not yet handed to a worker are dropped, a step on a worker
// finishes, its finally steps run, and its pending record goes.
func (rn *Runner) CancelRun(id, by string) error {
	rn.mu.Lock()
	r, err := rn.controlLocked(id, false)
	if err != nil {
		rn.mu.Unlock()
		return err
	}
	r.more().reason = "cancelled by " + by
	r.setBy(by)
	drops := rn.endLocked(r, core.Cancelled)
	rn.mu.Unlock()
	rn.dropRecords(drops)
	return nil
}

// RunNow makes live run id's waiting step due now: an after's step runs
// (judged against the rule as loaded, as at its time), a wait-for stops
// waiting as if its timeout had come, a retry tries again. Its pending
// record keeps its time until the step has run: a crash before then
// waits again.
func (rn *Runner) RunNow(id, by string) error {
	rn.mu.Lock()
	r, err := rn.controlLocked(id, true)
	if err == nil && r.Hand == core.HandParking { // park runs it once its record is down
		r.Hand = core.HandNow
		r.byHand(by, "run now by ")
		rn.mu.Unlock()
		return nil
	}
	if err == nil && !r.timer.Stop() { // it fired meanwhile: the step is on its way
		err = fmt.Errorf("%w: %s", ErrNotWaiting, id)
	}
	if err != nil {
		rn.mu.Unlock()
		return err
	}
	r.timer = nil
	r.byHand(by, "run now by ")
	rn.mu.Unlock()
	rn.due(r)
	return nil
}

// DropWaiting drops live run id's waiting step, as a step whose rule
// changed under it is dropped: the run ends, dropped, and its record goes.
func (rn *Runner) DropWaiting(id, by string) error {
	rn.mu.Lock()
	r, err := rn.controlLocked(id, true)
	if err != nil {
		rn.mu.Unlock()
		return err
	}
	if r.Hand == core.HandParking { // park drops it once its record is down
		r.Hand = core.HandDrop
		r.setBy(by)
		rn.mu.Unlock()
		return nil
	}
	rn.unawaitLocked(r)
	r.setBy(by)
	drops := rn.dropRunLocked(r, r.seq.Rule.ID, "dropped by "+by)
	rn.mu.Unlock()
	rn.dropRecords(drops)
	return nil
}

// RuleOf is the rule of live run id, false when none is live here.
func (rn *Runner) RuleOf(id string) (string, bool) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	r := rn.runs[id]
	if r == nil || r.Over() {
		return "", false
	}
	return r.seq.Rule.ID, true
}

// controlLocked is live run id for a control, one parked for a step's
// timer when waiting says so: ErrNoRun or ErrNotWaiting otherwise.
func (rn *Runner) controlLocked(id string, waiting bool) (*run, error) {
	r := rn.runs[id]
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

// setBy notes who acted on r by hand, for its log nodes: kept in its
// delay node (which a parked run has, and which closes with the run, by
// the same hand), not in a field of its own that every run would carry
// (TestParkedRunsMemory).
func (r *run) setBy(by string) { r.delay.By = by }

// byOf is who acted on r by hand, "" for none.
func (r *run) byOf() string { return r.delay.By }
