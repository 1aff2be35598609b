package seq

import (
	"strconv"
	"strings"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
)

// ThrottleHash is where the throttles' states are kept: "<rule>\x00<key>"
// → the key's theoretical arrival time (unix nanoseconds), while it is at
// its limit.
const ThrottleHash = keyspace.Throttle

// Reasons a throttle turns a trigger away.
const (
	awayThrottled    = "its key is at the rule's throttle limit (excess: drop)"
	awayThrottleFull = "its key's throttle queue is full"
)

// takeLocked takes a start from ks's allowance, if it has one (core.Cell:
// the generic cell rate algorithm).
func (rn *Runner) takeLocked(ks *keyState, th rules.Throttle) bool {
	return ks.more().throttle.Take(rn.sch.Now().UnixNano(), th)
}

// throttleLocked applies the rule's throttle to an admitted trigger. It
// goes on (held false) when its key has a start; otherwise it waits its
// turn in the key's queue, oldest first, or is dropped (excess: drop) or
// refused (the queue full) — held, with why when it was turned away.
// write, called once the lock is released, keeps the key's state in the
// store when the key is at its limit, so that a restart does not give it
// a fresh burst.
func (rn *Runner) throttleLocked(s *Sequence, e *bus.Event, key, runID string, tk *ticket) (held bool, why string, write func()) {
	th := s.Rule.Throttle
	rs := rn.rule(s.Rule.ID)
	ks := rs.key(key)
	m := ks.more()
	write = func() {}
	if len(m.throttled) == 0 && rn.takeLocked(ks, th) {
		return false, "", rn.throttleWriter(s.Rule.ID, key, ks, th)
	}
	switch {
	case th.Drop:
		rs.stats.Suppressed++
		tk.settle()
		rn.notStartedLocked(s, e, key, awayThrottled)
		return true, awayThrottled, write
	case len(m.throttled) >= rules.MaxThrottled:
		rs.stats.Refused++
		rn.refused.Add(1)
		tk.settle()
		rn.notStartedLocked(s, e, key, awayThrottleFull)
		return true, awayThrottleFull, write
	}
	m.throttled = append(m.throttled, &trigger{s, e, tk, runID})
	if len(m.throttled) == 1 {
		rn.armThrottleLocked(s.Rule, key, ks)
	}
	return true, "", write
}

// throttleWriter returns what keeps ks's state in the store if the key is
// at its limit (its next trigger would wait), and nothing otherwise.
func (rn *Runner) throttleWriter(rule, key string, ks *keyState, th rules.Throttle) func() {
	cell := ks.few().throttle
	if rn.store == nil || !cell.AtLimit(rn.sch.Now().UnixNano(), th) {
		return func() {}
	}
	tat := cell.TAT
	return func() {
		if err := rn.store.h.HSet(ThrottleHash, rule+"\x00"+key, strconv.FormatInt(tat, 10)); err != nil {
			rn.log.Warn("cannot keep a throttle's state; a restart gives its key a fresh burst", "rule", rule, "key", key, "error", err)
		}
	}
}

// armThrottleLocked sets the timer that admits ks's oldest throttled
// trigger when its turn comes.
func (rn *Runner) armThrottleLocked(r *rules.Rule, key string, ks *keyState) {
	m := ks.more()
	if m.throttleTimer != nil {
		m.throttleTimer.Stop()
	}
	id := r.ID
	m.throttleTimer = rn.sch.AfterFunc(max(m.throttle.Wait(rn.sch.Now().UnixNano(), r.Throttle), 0), func() {
		rn.submit(pool.Job{Band: r.Priority, Group: id, Key: fairKey(r, key), Run: func() { rn.releaseThrottled(id, key) }})
	})
}

// releaseThrottled admits the key's oldest throttled trigger, whose turn
// has come: its mode and cooldown decide now, as for any trigger.
func (rn *Runner) releaseThrottled(rule, key string) {
	var write func()
	rn.apply(func(fx *effects) { write = rn.releaseLocked(rule, key, fx) })
	if write != nil {
		write()
	}
}

// releaseLocked is releaseThrottled under the lock: what keeps the
// throttle's state, nil when nothing was released.
func (rn *Runner) releaseLocked(rule, key string, fx *effects) func() {
	rs := rn.rules[rule]
	if rs == nil || rn.stopped {
		return nil
	}
	ks := rs.key(key)
	m := ks.more()
	m.throttleTimer = nil
	if len(m.throttled) == 0 {
		return nil
	}
	t := m.throttled[0]
	th := t.seq.Rule.Throttle   // a throttled trigger's sequence has one
	if !rn.takeLocked(ks, th) { // the clock was set back: not yet
		rn.armThrottleLocked(t.seq.Rule, key, ks)
		return nil
	}
	m.throttled = m.throttled[1:]
	if len(m.throttled) > 0 {
		rn.armThrottleLocked(t.seq.Rule, key, ks)
	}
	write := rn.throttleWriter(rule, key, ks, th)
	started, drops, away := rn.decideLocked(t.seq, t.event, key, t.runID, t.tk)
	fx.drop(drops...)
	if away != "" {
		fx.away = append(fx.away, [2]string{rule, away})
	}
	if started != nil {
		rn.traceStart(started, nil, "its turn came (throttle)")
		rn.scheduleLocked(started, fx)
	}
	return write
}

// loadThrottles reads the throttles' states a previous process kept:
// a key at its limit when it stopped is still at it. States whose
// allowance is whole again by now go.
func (rn *Runner) loadThrottles() {
	if rn.store == nil {
		return
	}
	all, err := rn.store.h.HGetAll(ThrottleHash)
	if err != nil {
		rn.log.Warn("cannot read the throttles' states; their keys start with a fresh burst", "error", err)
		return
	}
	now := rn.sch.Now().UnixNano()
	var stale []string
	rn.apply(func(*effects) {
		for f, v := range all {
			rule, key, ok := strings.Cut(f, "\x00")
			tat, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil || tat <= now {
				stale = append(stale, f)
				continue
			}
			m := rn.rule(rule).key(key).more()
			m.throttle.TAT = max(m.throttle.TAT, tat)
		}
	})
	if len(stale) > 0 {
		rn.store.h.HDel(ThrottleHash, stale...)
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
