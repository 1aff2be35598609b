package seq

import (
	"bytes"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq/core"
)

// CancelMatching drops every live run whose rule names e's topic in
// cancel-on — and, for an entry with match fields, only the runs whose
// trigger had the same values there as e (the same vehicle) — together with
// anything that rule is holding queued behind them, and returns how many
// runs it cancelled. Queued triggers are not runs and are not in the count;
// keeping them would defeat the cancel, since the backlog is usually more of
// exactly what is being cancelled.
//
// What a cancel stops is everything the run has not handed over yet: a
// pending timer is dropped and no further step is submitted. A step already
// given to the pool still runs, whether a worker has picked it up or it is
// waiting its turn in the queue behind other work. The pool owns an accepted
// job either way and there is no way to take one back, so "cancel" here
// means the tail, not the step already on its way.
//
// Adapted from the seed, which takes a topic: a correlated cancel needs the
// event.
func (rn *Runner) CancelMatching(e *bus.Event) int {
	n := 0
	rn.apply(func(fx *effects) {
		for _, rs := range rn.m.rules {
			fx.drop(rn.m.dropDebouncedLocked(rs, func(d *debounced) bool { return cancels(d.seq.Rule, d.event, e) }, false)...)
			for _, ks := range rs.keys {
				for i := 0; i < len(ks.live); {
					r := ks.live[i]
					if !rn.m.cancelsRunLocked(r, e) {
						i++
						continue
					}
					r.more().reason = "cancel-on: " + e.Topic + " (event " + e.ID + ")"
					fx.drop(rn.m.endLocked(r, core.Cancelled)...)
					n++
				}
				dropThrottledLocked(ks, func(t *trigger) bool { return cancels(t.seq.Rule, t.event, e) }, false)
				if ks.m == nil {
					continue
				}
				kept := ks.m.queue[:0]
				for _, t := range ks.m.queue {
					if !cancels(t.seq.Rule, t.event, e) {
						kept = append(kept, t)
					}
				}
				clear(ks.m.queue[len(kept):])
				ks.m.queue = kept
			}
		}
	})
	return n
}

// cancels reports whether event c cancels a run of r triggered by t.
func cancels(r *rules.Rule, t, c *bus.Event) bool {
	for _, entry := range r.CancelOn {
		if entry.Pattern.Match(c.Topic) && sameAt(t, c, entry.Match) {
			return true
		}
	}
	return false
}

// cancelsRunLocked is cancels for a live run, whose trigger's view is
// built (warmLocked) only when a cancel-on pattern matches c's topic.
func (sm *machine) cancelsRunLocked(r *run, c *bus.Event) bool {
	for _, entry := range r.seq.Rule.CancelOn {
		if entry.Pattern.Match(c.Topic) {
			sm.warmLocked(r)
			if sameAt(r.event, c, entry.Match) {
				return true
			}
		}
	}
	return false
}

// sameAt reports whether a and b hold equal values at every path.
func sameAt(a, b *bus.Event, paths []string) bool {
	if len(paths) == 0 {
		return true
	}
	va, err1 := abi.ParseView(a.View)
	vb, err2 := abi.ParseView(b.View)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, p := range paths {
		x, okA := va.Find(p)
		y, okB := vb.Find(p)
		if !okA || !okB || !sameValue(x, y) {
			return false
		}
	}
	return true
}

func sameValue(x, y abi.Value) bool {
	switch {
	case x.Kind() == abi.ValueString && y.Kind() == abi.ValueString:
		a, _ := x.Str()
		b, _ := y.Str()
		return bytes.Equal(a, b)
	case x.Kind() == abi.ValueBool && y.Kind() == abi.ValueBool:
		a, _ := x.Bool()
		b, _ := y.Bool()
		return a == b
	case x.Kind() == abi.ValueNull && y.Kind() == abi.ValueNull:
		return true
	}
	a, okA := x.Float()
	b, okB := y.Float()
	return okA && okB && a == b
}
