package core

import (
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// Cell is a key's throttle: the generic cell rate algorithm. A key may
// start a run every Per/Limit, and Burst of them at once after a quiet
// time. Its state is one number, TAT (unix nanoseconds): when the key's
// allowance is whole again.
type Cell struct {
	TAT int64
}

// cell is the throttle's emission interval and tolerance.
func cell(th rules.Throttle) (interval, tolerance int64) {
	t := int64(th.Per) / int64(th.Limit)
	return t, t * int64(max(th.Burst, 1))
}

// Take takes a start from the allowance at now, if there is one.
func (c *Cell) Take(now int64, th rules.Throttle) bool {
	t, tau := cell(th)
	tat := max(c.TAT, now)
	if tat+t-now > tau {
		return false
	}
	c.TAT = tat + t
	return true
}

// Wait is how long from now until the cell has a start (0 or less: it
// has one).
func (c Cell) Wait(now int64, th rules.Throttle) time.Duration {
	t, tau := cell(th)
	return time.Duration(max(c.TAT, now) + t - tau - now)
}

// AtLimit reports whether the next trigger at now would wait: then the
// driver keeps the cell in its store, so that a restart does not hand the
// key a fresh burst.
func (c Cell) AtLimit(now int64, th rules.Throttle) bool {
	t, tau := cell(th)
	return c.TAT+t-now > tau
}
