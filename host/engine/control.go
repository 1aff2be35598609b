package engine

import (
	"fmt"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
)

// ControlRun applies an operator's command to one run (status.RunCommands)
// for by, who the run's tree names: cancel, now and drop act on a run
// live in this process (seq.Runner.Control); rerun
// starts a new run of the rule, as loaded now, with the trigger event the
// log kept of a run that has ended.
func (e *Engine) ControlRun(id, command, by string) (status.RunControl, error) {
	res := status.RunControl{Run: id, By: by}
	var err error
	switch command {
	case "cancel":
		err = e.runner.Control(id, seq.ControlCancel, by)
	case "now":
		// A step brought forward while its rule is paused or asleep would
		// only be held again: say so rather than "runs now".
		if rule, ok := e.runner.RuleOf(id); ok && !e.tasks.Admits(rule) {
			st, _ := e.tasks.State(rule)
			return status.RunControl{}, fmt.Errorf("%w: rule %s is %s, so its step would be held until it runs again: resume it first",
				seq.ErrNotWaiting, rule, st.Code)
		}
		err = e.runner.Control(id, seq.ControlNow, by)
	case "drop":
		err = e.runner.Control(id, seq.ControlDrop, by)
	case "rerun":
		res.NewRun, err = e.rerun(id, by)
	default:
		err = fmt.Errorf("%w %q: want one of %v", status.ErrBadCommand, command, status.RunCommands)
	}
	if err != nil {
		return status.RunControl{}, err
	}
	e.log.Info("run command", "run", id, "command", command, "by", by, "new-run", res.NewRun)
	return res, nil
}

// rerun starts a new run of run id's rule with id's trigger, and returns
// the new run's id. The trigger goes to that rule alone, not on the bus:
// a rerun is of one rule's run, and every other rule on the topic has
// had the event already. It is admitted as any trigger is (the rule's
// state, condition, mode and cooldown), and not journaled.
func (e *Engine) rerun(id, by string) (string, error) {
	if e.xlog == nil {
		return "", status.ErrNoExecLog
	}
	if e.runner.Live(id) {
		return "", fmt.Errorf("%w: run %s has not ended (cancel it first, or wait)", status.ErrNotRerunnable, id)
	}
	e.xlog.Flush()
	ex, nodes, err := runlog.ReadRun(e.xlog.Reader(), id)
	if err != nil {
		return "", err
	}
	if ex == nil {
		return "", fmt.Errorf("%w: run %s", runlog.ErrNotFound, id)
	}
	var trigger []byte
	for _, n := range nodes {
		if n.Kind == runlog.KindTrigger {
			trigger = n.Input
			break
		}
	}
	if trigger == nil {
		return "", fmt.Errorf("%w: the log did not keep run %s's trigger whole (larger than its value bound, or written before it kept triggers)", status.ErrNotRerunnable, id)
	}
	s := e.Current(ex.Rule)
	if s == nil {
		return "", fmt.Errorf("%w: run %s's rule %q is not loaded", status.ErrNotRerunnable, id, ex.Rule)
	}
	dec := bus.Decoder{Now: e.clock.Now}
	ev, err := dec.Decode(trigger)
	if err != nil {
		return "", fmt.Errorf("%w: run %s's trigger: %v", status.ErrNotRerunnable, id, err)
	}
	newID := seq.NewRunID()
	before := e.runner.NotStarted(ex.Rule)
	e.runner.Fire(seq.Trigger{Seq: s, Event: ev, RunID: newID, Note: "rerun of " + id + " by " + by, By: by})
	// The trigger is admitted as any is, on a worker: say whether it
	// started, or why not, rather than name a run that never was.
	for deadline := time.Now().Add(rerunWait); ; time.Sleep(5 * time.Millisecond) {
		if e.runner.Live(newID) {
			return newID, nil
		}
		if got, _, err := runlog.ReadRun(e.xlog.Reader(), newID); err == nil && got != nil {
			return newID, nil // started, and ended already
		}
		for why, n := range e.runner.NotStarted(ex.Rule) {
			if n > before[why] {
				return "", fmt.Errorf("%w: its rule %s turned the trigger away: %s (ruled log why %s)", status.ErrNotRerunnable, ex.Rule, why, ex.Rule)
			}
		}
		if time.Now().After(deadline) {
			return newID, nil // queued or held (a throttle, a debounce, a paused rule's hold): it starts later
		}
		e.xlog.Flush()
	}
}

// rerunWait is how long a rerun waits to say whether its run started: a
// condition on a busy worker may take that long.
const rerunWait = 5 * time.Second
