package seq

import (
	"time"
)

// Gate is the rules' lifecycle as the runner sees it (host/task): whether a
// rule starts runs, and what its steps do when they come due.
type Gate interface {
	// Admits reports whether the rule starts new runs now.
	Admits(rule string) bool
	// Due says what a step of the rule that comes due does now: run (false,
	// ""), wait until ReleaseHeld (true, ""), or be dropped with a reason.
	Due(rule string) (hold bool, drop string)
}

// DropHeldTooLong is why a held step is dropped when its rule resumes.
const DropHeldTooLong = "held past the replay window"

// ReleaseHeld runs the steps of a rule that came due while the rule could
// not run them (paused, sleeping), now that it can: each is judged again
// as if it had just come due, and one held longer than window past its due
// time is dropped with a reason, as Replay would. Then the triggers the
// rule held meanwhile (on-pause: hold) are admitted, oldest first, by the
// rule as loaded now (the Resolver's; without one, as it was when each
// came). It returns how many steps and triggers it released.
func (rn *Runner) ReleaseHeld(rule string, window time.Duration) int {
	var triggers []*heldTrigger
	released := 0
	rn.apply(func(fx *effects) {
		runs := rn.m.gated[rule]
		delete(rn.m.gated, rule)
		if rs := rn.m.rules[rule]; rs != nil {
			triggers, rs.waiting = rs.waiting, nil
		}
		now := rn.sch.Now()
		for _, r := range runs {
			switch {
			case r.Over():
			case now.Sub(r.few().dueAt) > window:
				fx.drop(rn.m.dropRunLocked(r, rule, DropHeldTooLong)...)
			default:
				rn.m.dueLocked(r, fx)
				released++
			}
		}
	})
	var current *Sequence
	if len(triggers) > 0 && rn.resolver != nil {
		current = rn.resolver.Current(rule)
	}
	for _, t := range triggers {
		s := t.seq
		if rn.resolver != nil {
			s = current
		}
		if s == nil {
			// The rule went while it held them (or no resolver knows it
			// now): nothing left to run them.
			rn.apply(func(*effects) {
				rn.m.rule(rule).stats.Refused++
				t.tk.settle()
			})
			continue
		}
		rn.fire(nil, s, t.event, t.runID, t.parent, t.tk)
	}
	return released + len(triggers)
}

// heldTriggersLocked lets go of the triggers rule holds: settled (their
// fate is decided: dropped, the rule ended) or abandoned (the runner
// stops: a journaled event stays for the next start).
func (sm *machine) heldTriggersLocked(rule string, settle bool) {
	rs := sm.rules[rule]
	if rs == nil {
		return
	}
	for _, t := range rs.waiting {
		if settle {
			rs.stats.Refused++
			t.tk.settle()
		} else {
			t.tk.abandon()
		}
	}
	rs.waiting = nil
}

// Held counts the steps waiting for their rule to run again.
func (rn *Runner) Held(rule string) (n int) {
	rn.view(func() {
		for _, r := range rn.m.gated[rule] {
			if !r.Over() {
				n++
			}
		}
	})
	return n
}

// errored counts an error against a rule and tells OnError, unless the
// runner is stopping: a call cut short by shutdown is not the rule's fault
// and must not put it to sleep in the store the next process reads.
func (rn *Runner) errored(rule string, err error) {
	var stopped bool
	rn.apply(func(*effects) {
		rn.m.rule(rule).stats.Errors++
		stopped = rn.m.stopped
	})
	if rn.onError != nil && !stopped {
		rn.onError(rule, err)
	}
}
