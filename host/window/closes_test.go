package window

import (
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// TestUntakenCloseFiredOnce: a close fired and not taken yet (its run
// queued, debounced, or long) is not fired again at the next period's
// end: only a start fires again what a kill left.
func TestUntakenCloseFiredOnce(t *testing.T) {
	clk := sched.NewVirtual(t0)
	var closes []Closed
	tb := newTable(t, &testkit.Hasher{}, clk, map[string]Spec{"t": {Kind: Tumbling, Every: time.Hour}},
		func(c Closed, done func()) { closes = append(closes, c) }) // taken later
	tb.Observe("t", "k", 0, clk.Now())
	clk.Advance(time.Hour) // 12:00's period closes: fired once
	clk.Advance(time.Hour) // 13:00's (empty) closes
	n := 0
	for _, c := range closes {
		if c.Value.Start.Equal(t0) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the 12:00 close fired %d times in one run of the daemon (%d closes)", n, len(closes))
	}
}

// TestOneZeroClose: an event just past a period's end, before the close
// timer ran, does not close a second empty period with 0: a key closes
// with 0 once.
func TestOneZeroClose(t *testing.T) {
	clk := sched.NewVirtual(t0)
	var closes []Closed
	tb := newTable(t, nil, clk, map[string]Spec{"t": {Kind: Tumbling, Every: time.Hour}},
		func(c Closed, done func()) { closes = append(closes, c); done() })
	tb.Observe("t", "k", 0, clk.Now())
	clk.Advance(time.Hour)                              // close 12:00 (1)
	clk.Advance(time.Hour)                              // close 13:00 (0): emptied
	clk.SetWall(t0.Add(3*time.Hour + time.Millisecond)) // the 15:00 timer has not run yet
	tb.Observe("t", "k", 0, clk.Now())
	zeros := 0
	for _, c := range closes {
		if c.Value.Count == 0 {
			zeros++
		}
	}
	if zeros != 1 {
		t.Fatalf("%d zero closes (%d closes)", zeros, len(closes))
	}
}

// TestRingRoundTrip: a count window encoded and decoded in the middle of
// wrapping, then fed more, reads as one never stored.
func TestRingRoundTrip(t *testing.T) {
	s := Spec{Kind: Count, Events: 3, Numeric: true}
	for n := 0; n < 8; n++ {
		a := &series{}
		for i := 0; i < n; i++ {
			a.add(&s, float64(i), int64(i))
		}
		b, err := decode(&s, a.encode(&s))
		if err != nil {
			t.Fatal(err)
		}
		for i := n; i < n+4; i++ {
			a.add(&s, float64(i), int64(i))
			b.add(&s, float64(i), int64(i))
		}
		va, vb := a.value(&s, 100), b.value(&s, 100)
		if va.Agg != vb.Agg {
			t.Fatalf("n=%d: %+v vs %+v", n, va.Agg, vb.Agg)
		}
	}
}

// TestCountedIsShown: an event a sliding window says it counted is one a
// read shows: lateness is judged at a bucket's edge, as reads are.
func TestCountedIsShown(t *testing.T) {
	clk := sched.NewVirtual(t0.Add(65 * time.Second))
	tb := newTable(t, nil, clk, map[string]Spec{"s": {Kind: Sliding, Last: time.Minute, Buckets: 6}}, nil)
	// 6 s is within the last minute of 65 s, and in a bucket (0-10 s)
	// the window no longer shows: late.
	if o := tb.Observe("s", "", 0, t0.Add(6*time.Second)); o != Late {
		t.Fatalf("outcome %v, want late", o)
	}
	if o := tb.Observe("s", "", 0, t0.Add(11*time.Second)); o != Counted {
		t.Fatalf("outcome %v, want counted", o)
	}
	if c := read(t, tb, "s", "")["count"]; c != 1.0 {
		t.Fatalf("count reads %v, want the one counted", c)
	}
}

// TestCloseBeforeStartFiredOnce: after a restart, an event counted
// before Start (the bus opens before the engine is released) closes a
// restored key's period and fires it; Start does not fire it again.
func TestCloseBeforeStartFiredOnce(t *testing.T) {
	st := &testkit.Hasher{}
	clk := sched.NewVirtual(t0)
	specs := map[string]Spec{"t": {Kind: Tumbling, Every: time.Hour}}
	tb, _ := New(Config{Store: st, Clock: clk})
	tb.Define(specs)
	tb.Start()
	tb.Observe("t", "k", 0, clk.Now())
	tb.Sync()
	snap := st.Snapshot() // kill
	clk.SetWall(t0.Add(2 * time.Hour))
	var closes []Closed
	tb2, _ := New(Config{Store: snap, Clock: clk, Fire: func(c Closed, done func()) { closes = append(closes, c) }})
	tb2.Define(specs)
	tb2.Observe("t", "k", 0, clk.Now()) // before Start
	tb2.Start()
	if len(closes) != 1 {
		t.Fatalf("the 12:00 close fired %d times", len(closes))
	}
}

// TestWallJumpCloses: the wall clock jumping forward (NTP on a device
// without a real-time clock) closes the periods that ended by it within
// MaxWait, not when a timer set a period ahead runs.
func TestWallJumpCloses(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	clk := sched.NewVirtual(start)
	var closes []Closed
	tb, _ := New(Config{Clock: clk, MaxWait: time.Minute, Fire: func(c Closed, done func()) { closes = append(closes, c); done() }})
	tb.Define(map[string]Spec{"d": {Kind: Tumbling, Calendar: Day, Zone: time.UTC}})
	tb.Start()
	defer tb.Close()
	tb.Observe("d", "k", 0, clk.Now())
	clk.SetWall(time.Date(2026, 3, 1, 15, 0, 0, 0, time.UTC)) // NTP sets the clock
	clk.Advance(10 * time.Minute)
	if len(closes) == 0 {
		next, _ := clk.Next()
		t.Fatalf("10 minutes after the clock jumped to 03-01 15:00, the 01-01 period is still open (timer in %v)", next)
	}
}
