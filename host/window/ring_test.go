package window

import (
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/sched"
)

// TestCountFirstLastTies: events of the same time (a time: field in
// whole seconds) in a count window that wrapped: first and last are the
// oldest and newest by arrival, as after a restart.
func TestCountFirstLastTies(t *testing.T) {
	clk := sched.NewVirtual(t0)
	tb := newTable(t, nil, clk, map[string]Spec{"c": {Kind: Count, Events: 3, Numeric: true}}, nil)
	for v := 1; v <= 5; v++ {
		tb.Observe("c", "", float64(v), t0) // same second
	}
	m := read(t, tb, "c", "")
	if m["first"] != 3.0 || m["last"] != 5.0 {
		t.Fatalf("last 3 of 1..5: first %v last %v", m["first"], m["last"])
	}
	_ = time.Second
}

func newVirtualAt(at time.Time) *sched.Virtual { return sched.NewVirtual(at) }
