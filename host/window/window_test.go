package window

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/internal/testkit"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// read decodes a window's value as rules see it.
func read(t *testing.T, tb *Table, name, key string) map[string]any {
	t.Helper()
	b, ok := tb.Read(name, key)
	if !ok {
		t.Fatalf("window %s is not defined", name)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

func newTable(t *testing.T, st Store, clk sched.Clock, defs map[string]Spec, fire func(Closed, func())) *Table {
	t.Helper()
	tb, err := New(Config{Store: st, Clock: clk, Fire: fire})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Define(defs); err != nil {
		t.Fatal(err)
	}
	tb.Start()
	t.Cleanup(func() { tb.Close() })
	return tb
}

// TestAggregates: each kind's aggregates against the events fed, as a
// plain loop over them computes them.
func TestAggregates(t *testing.T) {
	type ev struct {
		after time.Duration // since t0
		v     float64
	}
	for _, tc := range []struct {
		name  string
		spec  Spec
		evs   []ev
		at    time.Duration // read at, since t0
		count float64
		sum   float64
		min   float64
		max   float64
		first float64
		last  float64
	}{
		{"sliding holds the last 15m", Spec{Kind: Sliding, Last: 15 * time.Minute, Numeric: true},
			[]ev{{0, 100}, {11 * time.Minute, 4}, {20 * time.Minute, 6}, {24 * time.Minute, 2}}, 25 * time.Minute,
			3, 12, 2, 6, 4, 2},
		{"sliding: out of order within it", Spec{Kind: Sliding, Last: 10 * time.Minute, Numeric: true},
			[]ev{{5 * time.Minute, 1}, {3 * time.Minute, 7}, {6 * time.Minute, 2}}, 6 * time.Minute,
			3, 10, 1, 7, 7, 2},
		{"tumbling hour: the current period", Spec{Kind: Tumbling, Every: time.Hour, Numeric: true},
			[]ev{{-30 * time.Minute, 50}, {time.Minute, 3}, {2 * time.Minute, 5}}, 3 * time.Minute,
			2, 8, 3, 5, 3, 5},
		{"count: the last 3 events", Spec{Kind: Count, Events: 3, Numeric: true},
			[]ev{{0, 9}, {time.Second, 1}, {2 * time.Second, 2}, {3 * time.Second, 3}}, 4 * time.Second,
			3, 6, 1, 3, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := sched.NewVirtual(t0.Add(-time.Hour))
			tb := newTable(t, nil, clk, map[string]Spec{"w": tc.spec}, nil)
			for _, e := range tc.evs {
				if d := t0.Add(e.after).Sub(clk.Now()); d > 0 {
					clk.Advance(d)
				}
				if o := tb.Observe("w", "k", e.v, t0.Add(e.after)); o != Counted {
					t.Fatalf("event at %v: %v", e.after, o)
				}
			}
			clk.Advance(t0.Add(tc.at).Sub(clk.Now()))
			m := read(t, tb, "w", "k")
			for k, want := range map[string]float64{"count": tc.count, "sum": tc.sum, "min": tc.min, "max": tc.max,
				"first": tc.first, "last": tc.last, "avg": tc.sum / tc.count} {
				if got, _ := m[k].(float64); math.Abs(got-want) > 1e-9 {
					t.Errorf("%s = %v, want %v (%v)", k, m[k], want, m)
				}
			}
		})
	}
}

// TestSlidingEdge: the far edge moves a bucket at a time, never keeping
// an event more than a bucket past the window's length.
func TestSlidingEdge(t *testing.T) {
	clk := sched.NewVirtual(t0)
	tb := newTable(t, nil, clk, map[string]Spec{"w": {Kind: Sliding, Last: time.Minute, Buckets: 6}}, nil)
	tb.Observe("w", "", 0, clk.Now())
	clk.Advance(time.Minute - time.Second)
	if c := read(t, tb, "w", "")["count"]; c != 1.0 {
		t.Fatalf("count %v within the window", c)
	}
	clk.Advance(10 * time.Second) // a bucket's width past it
	if c := read(t, tb, "w", "")["count"]; c != 0.0 {
		t.Fatalf("count %v a bucket past the window", c)
	}
}

// TestLateAndFuture: an event older than the window, of a closed period,
// or over a minute ahead is not counted, and says why.
func TestLateAndFuture(t *testing.T) {
	clk := sched.NewVirtual(t0)
	tb := newTable(t, nil, clk, map[string]Spec{
		"s": {Kind: Sliding, Last: 10 * time.Minute},
		"t": {Kind: Tumbling, Every: time.Hour},
	}, nil)
	for _, tc := range []struct {
		w    string
		at   time.Time
		want Outcome
	}{
		{"s", t0.Add(-11 * time.Minute), Late},
		{"s", t0.Add(-9 * time.Minute), Counted},
		{"s", t0.Add(2 * time.Minute), Future},
		{"s", t0.Add(30 * time.Second), Counted}, // within the skew: now
		{"t", t0.Add(-time.Second), Late},        // the hour before
		{"t", t0, Counted},
		{"x", t0, Unknown},
	} {
		if got := tb.Observe(tc.w, "", 1, tc.at); got != tc.want {
			t.Errorf("%s at %v: %v, want %v", tc.w, tc.at.Sub(t0), got, tc.want)
		}
	}
	st := tb.Stats()
	if st["s"].Late != 1 || st["s"].Future != 1 || st["s"].Counted != 2 || st["t"].Late != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestMaxKeys: a new key past the bound is refused and counted; a
// sliding window's key whose buckets fell out makes room.
func TestMaxKeys(t *testing.T) {
	clk := sched.NewVirtual(t0)
	tb := newTable(t, nil, clk, map[string]Spec{"w": {Kind: Sliding, Last: time.Minute, MaxKeys: 2}}, nil)
	for _, k := range []string{"a", "b"} {
		if o := tb.Observe("w", k, 1, clk.Now()); o != Counted {
			t.Fatal(o)
		}
	}
	if o := tb.Observe("w", "c", 1, clk.Now()); o != Full {
		t.Fatalf("a third key: %v", o)
	}
	if o := tb.Observe("w", "a", 1, clk.Now()); o != Counted {
		t.Fatalf("a known key: %v", o)
	}
	clk.Advance(2 * time.Minute)
	if o := tb.Observe("w", "c", 1, clk.Now()); o != Counted {
		t.Fatalf("after the others fell out: %v", o)
	}
	if st := tb.Stats()["w"]; st.Full != 1 || st.Keys != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestDayAcrossDST: a day window in Europe/Berlin runs from local
// midnight to local midnight on the 23-hour day of the spring change,
// closes once per key with its count, then once with 0, then forgets.
func TestDayAcrossDST(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	spec := Spec{Kind: Tumbling, Calendar: Day, Zone: berlin}
	s, e := spec.Period(time.Date(2026, 3, 29, 12, 0, 0, 0, berlin))
	if e.Sub(s) != 23*time.Hour || s.In(berlin).Hour() != 0 || e.In(berlin).Hour() != 0 {
		t.Fatalf("the spring day: %v to %v", s.In(berlin), e.In(berlin))
	}
	s, e = spec.Period(time.Date(2026, 10, 25, 12, 0, 0, 0, berlin))
	if e.Sub(s) != 25*time.Hour {
		t.Fatalf("the autumn day: %v", e.Sub(s))
	}
	w := Spec{Kind: Tumbling, Calendar: Week, Zone: berlin}
	if s, _ := w.Period(time.Date(2026, 3, 29, 12, 0, 0, 0, berlin)); s.In(berlin).Weekday() != time.Monday {
		t.Fatalf("a week starts %v", s.In(berlin).Weekday())
	}

	clk := sched.NewVirtual(time.Date(2026, 3, 28, 22, 0, 0, 0, berlin))
	var closes []Closed
	st := &testkit.Hasher{}
	tb := newTable(t, st, clk, map[string]Spec{"opens": spec},
		func(c Closed, done func()) { closes = append(closes, c); done() })
	tb.Observe("opens", "front", 0, clk.Now())
	clk.Advance(3 * time.Hour) // past midnight: the 28th closes
	tb.Observe("opens", "front", 0, clk.Now())
	tb.Observe("opens", "front", 0, clk.Now())
	clk.Advance(23 * time.Hour) // past the next (23-hour) midnight
	clk.Advance(24 * time.Hour) // and the one after: an empty day
	clk.Advance(24 * time.Hour) // forgotten: no close
	var got []string
	for _, c := range closes {
		got = append(got, c.Value.Start.In(berlin).Format("01-02 15:04")+"="+
			strconv.FormatInt(c.Value.Count, 10))
	}
	if strings.Join(got, " ") != "03-28 00:00=1 03-29 00:00=2 03-30 00:00=0" {
		t.Fatalf("closes %v", got)
	}
	if n := tb.Stats()["opens"].Keys; n != 0 {
		t.Fatalf("%d keys after an empty day's close", n)
	}
	if all, _ := st.HGetAll("ruled:windows"); len(all) != 1 { // the spec alone: closes taken, key forgotten
		t.Fatalf("records left: %q", all)
	}
}

// TestRestore: a table built on the records a kill left has the counts
// synced before it, fires again a close not taken, closes a period that
// ended while it was down, and starts afresh a window whose spec changed.
func TestRestore(t *testing.T) {
	st := &testkit.Hasher{}
	clk := sched.NewVirtual(t0)
	specs := map[string]Spec{
		"s": {Kind: Sliding, Last: 2 * time.Hour, Numeric: true},
		"t": {Kind: Tumbling, Every: time.Hour},
		"c": {Kind: Count, Events: 2, Numeric: true},
	}
	tb, _ := New(Config{Store: st, Clock: clk})
	tb.Define(specs)
	tb.Start()
	for i := range 3 {
		for _, w := range []string{"s", "t", "c"} {
			tb.Observe(w, "k", float64(i), clk.Now())
		}
	}
	if err := tb.Sync(); err != nil {
		t.Fatal(err)
	}
	tb.Observe("s", "k", 100, clk.Now()) // never synced: lost with the kill, never acknowledged
	// A kill: no Close.
	snap := st.Snapshot()
	clk.Advance(90 * time.Minute)
	var closes []Closed
	var dones []func()
	specs["c"] = Spec{Kind: Count, Events: 5, Numeric: true} // edited
	tb2, err := New(Config{Store: snap, Clock: clk, Fire: func(c Closed, done func()) { closes = append(closes, c); dones = append(dones, done) }})
	if err != nil {
		t.Fatal(err)
	}
	tb2.Define(specs)
	tb2.Start()
	if m := read(t, tb2, "s", "k"); m["count"] != 3.0 || m["sum"] != 3.0 {
		t.Fatalf("sliding after the restart: %v", m)
	}
	if m := read(t, tb2, "c", "k"); m["count"] != 0.0 {
		t.Fatalf("an edited window kept %v", m)
	}
	if len(closes) != 1 || closes[0].Value.Count != 3 || !closes[0].Value.Start.Equal(t0) {
		t.Fatalf("closes at the start: %+v", closes)
	}
	// Killed again before its rule took it: fired again.
	tb3, _ := New(Config{Store: snap.Snapshot(), Clock: clk, Fire: func(c Closed, done func()) { closes = append(closes, c); done() }})
	tb3.Define(specs)
	tb3.Start()
	if len(closes) != 2 || closes[1].Value.Count != 3 {
		t.Fatalf("an untaken close after a second kill: %+v", closes)
	}
	tb3.Close()
	// Taken, then closed: gone for good.
	dones[0]()
	tb2.Close()
	closes = nil
	tb4, _ := New(Config{Store: snap, Clock: clk, Fire: func(c Closed, done func()) { closes = append(closes, c); done() }})
	tb4.Define(specs)
	tb4.Start()
	defer tb4.Close()
	if len(closes) != 0 {
		t.Fatalf("a close taken fired again: %+v", closes)
	}
}

// TestStoreWrites: a group of events costs one write, however many.
func TestStoreWrites(t *testing.T) {
	st := &testkit.Hasher{}
	clk := sched.NewVirtual(t0)
	tb := newTable(t, st, clk, map[string]Spec{"a": {Kind: Sliding, Last: time.Hour}, "b": {Kind: Count, Events: 10}}, nil)
	tb.Sync()
	before := st.Sets()
	for i := range 100 {
		tb.Observe("a", string(rune('a'+i%5)), 1, clk.Now())
		tb.Observe("b", "k", 1, clk.Now())
	}
	tb.Sync()
	if n := st.Sets() - before; n != 1 {
		t.Fatalf("%d writes for 100 events", n)
	}
}

func TestDecodeRefusesGarbage(t *testing.T) {
	s := Spec{Kind: Sliding, Last: time.Minute, Buckets: 4}
	x := &series{}
	for i := range 10 {
		x.add(&s, float64(i), int64(i)*int64(10*time.Second))
	}
	b := x.encode(&s)
	if y, err := decode(&s, b); err != nil || len(y.buckets) != len(x.buckets) {
		t.Fatalf("round trip: %v %v", y, err)
	}
	for _, bad := range [][]byte{nil, {encVersion}, {encVersion, byte(Count)}, append(b[:len(b):len(b)], 0), b[:len(b)-1]} {
		if _, err := decode(&s, bad); err == nil {
			t.Errorf("decoded %x", bad)
		}
	}
}

// TestRedefine: a reload that moves a window's bound keeps what it
// holds; one that changes what it counts starts it afresh; one that
// drops it forgets it, in the store too.
func TestRedefine(t *testing.T) {
	st := &testkit.Hasher{}
	clk := sched.NewVirtual(t0)
	s := Spec{Kind: Sliding, Last: time.Hour, MaxKeys: 5, Def: "on:a field:v"}
	tb := newTable(t, st, clk, map[string]Spec{"w": s, "x": s}, nil)
	tb.Observe("w", "k", 1, clk.Now())
	tb.Observe("x", "k", 1, clk.Now())
	s.MaxKeys = 50
	tb.Define(map[string]Spec{"w": s, "x": s})
	if c := read(t, tb, "w", "k")["count"]; c != 1.0 {
		t.Fatalf("a bound moved: count %v", c)
	}
	if st := tb.Stats()["w"]; st.MaxKeys != 50 {
		t.Fatalf("max keys %d", st.MaxKeys)
	}
	s.Def = "on:b field:v"
	tb.Define(map[string]Spec{"w": s})
	if c := read(t, tb, "w", "k")["count"]; c != 0.0 {
		t.Fatalf("what it counts changed: count %v", c)
	}
	if _, ok := tb.Read("x", "k"); ok {
		t.Fatal("a removed window reads")
	}
	tb.Sync()
	all, _ := st.HGetAll("ruled:windows")
	for f := range all {
		if strings.Contains(f, "x") {
			t.Fatalf("a removed window's record %q stays", f)
		}
	}
}

// TestRatesOverASecondAtLeast: two events a microsecond apart in a count
// window are not a rate of millions a second; its span runs to now.
func TestRatesOverASecondAtLeast(t *testing.T) {
	clk := sched.NewVirtual(t0)
	tb := newTable(t, nil, clk, map[string]Spec{"c": {Kind: Count, Events: 100}}, nil)
	tb.Observe("c", "", 0, clk.Now())
	tb.Observe("c", "", 0, clk.Now().Add(-time.Microsecond))
	if m := read(t, tb, "c", ""); m["per_second"] != 2.0 {
		t.Fatalf("rate %v", m)
	}
	clk.Advance(10 * time.Second)
	if m := read(t, tb, "c", ""); m["per_second"].(float64) > 0.21 {
		t.Fatalf("rate %v, 10 s later", m)
	}
}
