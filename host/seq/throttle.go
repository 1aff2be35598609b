package seq

import (
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
)

// Reasons a throttle turns a trigger away.
const (
	awayThrottled    = "its key is at the rule's throttle limit (excess: drop)"
	awayThrottleFull = "its key's throttle queue is full"
)

// takeLocked takes a start from ks's allowance, if it has one (core.Cell:
// the generic cell rate algorithm).
func (sm *machine) takeLocked(ks *keyState, th rules.Throttle) bool {
	return ks.more().throttle.Take(sm.sch.Now().UnixNano(), th)
}

// throttleLocked applies the rule's throttle to an admitted trigger. It
// goes on (held false) when its key has a start; otherwise it waits its
// turn in the key's queue, oldest first, or is dropped (excess: drop) or
// refused (the queue full) — held, with why when it was turned away.
// A start taken leaves the key's state to keep (keepThrottle).
func (sm *machine) throttleLocked(s *Sequence, e *bus.Event, key, runID string, tk *ticket, fx *effects) (held bool, why string) {
	th := s.Rule.Throttle
	rs := sm.rule(s.Rule.ID)
	ks := rs.key(key)
	m := ks.more()
	if len(m.throttled) == 0 && sm.takeLocked(ks, th) {
		fx.keepThrottle(s.Rule.ID, key, m.throttle, th, sm.sch.Now().UnixNano())
		return false, ""
	}
	switch {
	case th.Drop:
		rs.stats.Suppressed++
		tk.settle()
		sm.notStartedLocked(s, e, key, awayThrottled)
		return true, awayThrottled
	case len(m.throttled) >= rules.MaxThrottled:
		rs.stats.Refused++
		sm.refused.Add(1)
		tk.settle()
		sm.notStartedLocked(s, e, key, awayThrottleFull)
		return true, awayThrottleFull
	}
	m.throttled = append(m.throttled, &trigger{s, e, tk, runID})
	if len(m.throttled) == 1 {
		sm.armThrottleLocked(s.Rule, key, ks)
	}
	return true, ""
}

// armThrottleLocked sets the timer that admits ks's oldest throttled
// trigger when its turn comes.
func (sm *machine) armThrottleLocked(r *rules.Rule, key string, ks *keyState) {
	m := ks.more()
	if m.throttleTimer != nil {
		m.throttleTimer.Stop()
	}
	id := r.ID
	m.throttleTimer = sm.sch.AfterFunc(max(m.throttle.Wait(sm.sch.Now().UnixNano(), r.Throttle), 0), func() {
		sm.drv.submit(pool.Job{Band: r.Priority, Group: id, Key: fairKey(r, key), Run: func() { sm.drv.releaseThrottled(id, key) }})
	})
}

// releaseThrottled admits the key's oldest throttled trigger, whose turn
// has come: its mode and cooldown decide now, as for any trigger.
func (rn *Runner) releaseThrottled(rule, key string) {
	rn.apply(func(fx *effects) { rn.m.releaseLocked(rule, key, fx) })
}

// releaseLocked is releaseThrottled under the lock.
func (sm *machine) releaseLocked(rule, key string, fx *effects) {
	rs := sm.rules[rule]
	if rs == nil || sm.stopped {
		return
	}
	ks := rs.key(key)
	m := ks.more()
	m.throttleTimer = nil
	if len(m.throttled) == 0 {
		return
	}
	t := m.throttled[0]
	th := t.seq.Rule.Throttle   // a throttled trigger's sequence has one
	if !sm.takeLocked(ks, th) { // the clock was set back: not yet
		sm.armThrottleLocked(t.seq.Rule, key, ks)
		return
	}
	m.throttled = m.throttled[1:]
	if len(m.throttled) > 0 {
		sm.armThrottleLocked(t.seq.Rule, key, ks)
	}
	fx.keepThrottle(rule, key, m.throttle, th, sm.sch.Now().UnixNano())
	started, drops, away := sm.decideLocked(t.seq, t.event, key, t.runID, t.tk, nil, fx)
	fx.drop(drops...)
	if away != "" {
		sm.warn.turnedAway(rule, away)
	}
	if started != nil {
		sm.book.traceStart(started, nil, "its turn came (throttle)")
		sm.scheduleLocked(started, fx)
	}
}

// dropThrottledLocked lets go of ks's throttled triggers that drop says
// (nil: all): settled, or abandoned when the runner stops (a journaled
// event stays for the next start).
func dropThrottledLocked(ks *keyState, drop func(*trigger) bool, abandon bool) {
	if ks.m == nil {
		return
	}
	m := ks.m
	kept := m.throttled[:0]
	for _, t := range m.throttled {
		switch {
		case drop != nil && !drop(t):
			kept = append(kept, t)
		case abandon:
			t.tk.abandon()
		default:
			t.tk.settle()
		}
	}
	clear(m.throttled[len(kept):])
	m.throttled = kept
	if len(kept) == 0 && m.throttleTimer != nil {
		m.throttleTimer.Stop()
		m.throttleTimer = nil
	}
}
