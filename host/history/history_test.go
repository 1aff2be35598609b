package history

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)

func reading(min int, started, failed uint64, queued int) Reading {
	return Reading{At: t0.Add(time.Duration(min) * time.Minute), Queued: queued,
		Rules: map[string]RuleCounts{"lamp": {Started: started, Failed: failed, TurnedAway: started / 2, Errors: failed}}}
}

func vals(p []*float64) []string {
	out := make([]string, len(p))
	for i, x := range p {
		if x == nil {
			out[i] = "-"
		} else {
			out[i] = fmt.Sprint(*x)
		}
	}
	return out
}

func tail(p []*float64, n int) string { return fmt.Sprint(vals(p)[len(p)-n:]) }

// TestPoints: each minute's point is the counters' increase over it; a
// minute the daemon did not read is none; counters that went down (a
// restart) count from zero.
func TestPoints(t *testing.T) {
	h := New(time.Minute)
	h.Start(t0)
	for _, r := range []Reading{reading(1, 10, 1, 3), reading(2, 25, 1, 0), reading(4, 30, 2, 7), reading(5, 4, 0, 1)} {
		h.Add(r)
	}
	s := h.Snapshot()
	lamp := s.Hour.Rules["lamp"]
	for _, tc := range []struct {
		name string
		got  []*float64
		want string
	}{
		{"started", lamp.Started, "[10 15 - 5 4]"},
		{"failed", lamp.Failed, "[1 0 - 1 0]"},
		{"turned away", lamp.TurnedAway, "[5 7 - 3 2]"},
		{"queued", s.Hour.Queued, "[3 0 - 7 1]"},
	} {
		if got := tail(tc.got, 5); got != tc.want {
			t.Errorf("%s: %s; want %s", tc.name, got, tc.want)
		}
	}
	if !s.Hour.End.Equal(t0.Add(5 * time.Minute)) {
		t.Errorf("hour ends %v", s.Hour.End)
	}
	if n := len(s.Hour.Queued); n != HourPoints || len(s.Day.Queued) != DayPoints {
		t.Errorf("%d hour points, %d day points", n, len(s.Day.Queued))
	}
}

// TestDay: fifteen minutes make a day point: the counters' sum, the
// queue's largest depth, the latency over all their calls.
func TestDay(t *testing.T) {
	h := New(time.Minute)
	h.Start(t0)
	bounds := []float64{0.001, 0.01, 0.1, math.Inf(1)}
	var calls uint64
	for m := 1; m <= 31; m++ {
		r := reading(m, uint64(2*m), 0, m%4)
		if m <= 15 {
			calls += 100
		}
		r.Plugins = map[string]Buckets{"http": {Bounds: bounds, Counts: []uint64{calls / 2, calls, calls, calls}}}
		h.Add(r)
	}
	s := h.Snapshot()
	// Minutes 1-15 started 30 (2 a minute), then 16-30; minute 31 is the
	// quarter hour so far.
	if got := tail(s.Day.Rules["lamp"].Started, 3); got != "[30 30 2]" {
		t.Errorf("day started %s; want [30 30 2]", got)
	}
	if got := tail(s.Day.Queued, 3); got != "[3 3 3]" {
		t.Errorf("day queued %s", got)
	}
	p99 := s.Day.Plugins["http"].P99
	if got := p99[len(p99)-3]; got == nil || *got < 1 || *got > 10 {
		t.Errorf("day p99 of calls half under 1 ms, half under 10 ms: %v ms", vals(p99)[len(p99)-3:])
	}
	if got := p99[len(p99)-2]; got != nil {
		t.Errorf("a quarter hour without calls has a p99 of %v", *got)
	}
	if h50 := s.Hour.Plugins["http"].P50; h50[len(h50)-20] == nil || *h50[len(h50)-20] > 1 {
		t.Errorf("hour p50 %v", vals(h50)[len(h50)-20])
	}
}

func TestQuantile(t *testing.T) {
	b := Buckets{Bounds: []float64{1, 2, 4, math.Inf(1)}, Counts: []uint64{10, 20, 20, 30}}
	for _, tc := range []struct{ q, want float64 }{{0.25, 0.75}, {0.5, 1.5}, {0.99, 4}} {
		if got := b.Quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("q%v = %v; want %v", tc.q, got, tc.want)
		}
	}
	if !math.IsNaN((Buckets{Bounds: []float64{1}, Counts: []uint64{0}}).Quantile(0.5)) {
		t.Error("a quantile of no calls")
	}
}

// TestRestore: what Marshal keeps comes back whole; what is not the
// rings' shape is refused and leaves them as they were.
func TestRestore(t *testing.T) {
	h := New(time.Minute)
	h.Start(t0)
	h.Add(reading(1, 10, 1, 3))
	h.Add(reading(2, 12, 1, 0))
	b, err := h.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	h2 := New(time.Minute)
	if err := h2.Restore(b); err != nil {
		t.Fatal(err)
	}
	h2.Start(t0.Add(2 * time.Minute))
	a, _ := json.Marshal(h.Snapshot())
	c, _ := json.Marshal(h2.Snapshot())
	if string(a) != string(c) {
		t.Errorf("restored\n%s\nwant\n%s", c, a)
	}
	for _, bad := range []string{``, `{}`, `{"v":1,"step":60000000000}`, `{"v":1,"step":1,"hour":{},"day":{}}`,
		`{"v":1,"step":60000000000,"hour":{"seq":[1]},"day":{"seq":[1]}}`} {
		h3 := New(time.Minute)
		if err := h3.Restore([]byte(bad)); err == nil {
			t.Errorf("Restore(%q) taken", bad)
		}
	}
}

// TestBound: past MaxRules, a new rule is not charted, and counted.
func TestBound(t *testing.T) {
	h := New(time.Minute)
	h.Start(t0)
	r := Reading{At: t0.Add(time.Minute), Rules: map[string]RuleCounts{}}
	for i := range MaxRules + 5 {
		r.Rules[fmt.Sprint("r", i)] = RuleCounts{Started: 1}
	}
	h.Add(r)
	if s := h.Snapshot(); len(s.Hour.Rules) != MaxRules || s.Omitted != 5 {
		t.Errorf("%d rules charted, %d omitted", len(s.Hour.Rules), s.Omitted)
	}
}

func ExampleHistory() {
	h := New(time.Minute)
	h.Start(t0)
	h.Add(Reading{At: t0.Add(time.Minute), Rules: map[string]RuleCounts{"lamp": {Started: 4}}})
	h.Add(Reading{At: t0.Add(2 * time.Minute), Rules: map[string]RuleCounts{"lamp": {Started: 10, Failed: 1}}})
	s := h.Snapshot().Hour.Rules["lamp"]
	fmt.Println(tail(s.Started, 2), tail(s.Failed, 2))
	// Output: [4 6] [0 1]
}

// FuzzRestore: whatever the store holds, Restore takes it or refuses it,
// and the rings it took answer a Snapshot.
func FuzzRestore(f *testing.F) {
	h := New(time.Minute)
	h.Start(t0)
	h.Add(reading(1, 10, 1, 3))
	b, _ := h.Marshal()
	f.Add(b)
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h := New(time.Minute)
		if h.Restore(b) == nil {
			h.Snapshot()
			h.Add(reading(3, 1, 1, 1))
		}
	})
}

// TestRestartWithinQuarter: a restart within a quarter hour keeps what
// the quarter hour counted before it.
func TestRestartWithinQuarter(t *testing.T) {
	h := New(time.Minute)
	h.Start(t0)
	h.Add(reading(1, 10, 0, 0))
	h.Add(reading(2, 20, 0, 0))
	b, _ := h.Marshal()
	h2 := New(time.Minute)
	if err := h2.Restore(b); err != nil {
		t.Fatal(err)
	}
	h2.Start(t0.Add(3 * time.Minute)) // counters from zero again
	h2.Add(reading(4, 5, 0, 0))
	if got := tail(h2.Snapshot().Day.Rules["lamp"].Started, 1); got != "[25]" {
		t.Errorf("the quarter hour across the restart started %s; want [25]", got)
	}
	if got := tail(h2.Snapshot().Hour.Rules["lamp"].Started, 4); got != "[10 10 - 5]" {
		t.Errorf("the hour across the restart %s", got)
	}
}

// TestSelect: a page asks for one rule, one kind or one ring.
func TestSelect(t *testing.T) {
	h := New(time.Minute)
	h.Start(t0)
	r := reading(1, 3, 0, 0)
	r.Rules["fan"] = RuleCounts{Started: 1}
	r.Plugins = map[string]Buckets{"http": {Bounds: []float64{1}, Counts: []uint64{1}}}
	h.Add(r)
	s := h.Snapshot()
	for _, tc := range []struct {
		q                     string
		rules, plugins, hours int
		err                   bool
	}{
		{"", 2, 1, HourPoints, false},
		{"rule=fan", 1, 0, HourPoints, false},
		{"rule=gone", 0, 0, HourPoints, false},
		{"only=plugins", 0, 1, HourPoints, false},
		{"only=rules&ring=day", 2, 0, 0, false},
		{"only=all", 0, 0, 0, true},
		{"ring=week", 0, 0, 0, true},
		{"limit=3", 0, 0, 0, true},
	} {
		q, _ := url.ParseQuery(tc.q)
		got, err := Select(s, q)
		if (err != nil) != tc.err {
			t.Errorf("%q: error %v", tc.q, err)
			continue
		}
		if err == nil && (len(got.Day.Rules) != tc.rules || len(got.Day.Plugins) != tc.plugins || len(got.Hour.Queued) != tc.hours) {
			t.Errorf("%q: %d rules, %d plugins, %d hour points", tc.q, len(got.Day.Rules), len(got.Day.Plugins), len(got.Hour.Queued))
		}
	}
}

// TestPrune: a rule gone from the readings leaves the rings once its
// points have: a day later.
func TestPrune(t *testing.T) {
	h := New(time.Minute)
	h.Start(t0)
	h.Add(reading(1, 3, 0, 0))
	for m := 2; m <= 60*25; m += 7 {
		h.Add(Reading{At: t0.Add(time.Duration(m) * time.Minute), Rules: map[string]RuleCounts{"fan": {}}})
		if m == 30 {
			if _, ok := h.Snapshot().Hour.Rules["lamp"]; !ok {
				t.Fatal("lamp forgotten within the hour")
			}
		}
	}
	if _, ok := h.Snapshot().Day.Rules["lamp"]; ok {
		t.Error("lamp still charted a day after its last reading")
	}
	if _, ok := h.Snapshot().Day.Rules["fan"]; !ok {
		t.Error("fan forgotten")
	}
}

// TestJSON: an answer is made once a step for a query without a rule,
// and made again after the next point.
func TestJSON(t *testing.T) {
	h := New(time.Minute)
	h.Start(t0)
	h.Add(reading(1, 3, 0, 0))
	q, _ := url.ParseQuery("only=rules&ring=hour")
	a, err := h.JSON(q)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.JSON(q)
	if &a[0] != &b[0] {
		t.Error("the same query within a step made its answer twice")
	}
	h.Add(reading(2, 9, 0, 0))
	c, _ := h.JSON(q)
	if string(c) == string(a) || !strings.Contains(string(c), "[") {
		t.Error("the answer after a new point is the old one")
	}
	if _, err := h.JSON(url.Values{"ring": {"week"}}); err == nil {
		t.Error("a bad query answered")
	}
}

// TestStopMidStep: a stop's reading, in the middle of a minute, keeps
// what the minute counted so far; a start within the same minute adds to
// it, one after it leaves it as it was.
func TestStopMidStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart time.Duration // after t0
		tick    int           // the next tick's minute
		want    string        // the last two points
	}{
		// Minute 2 (t0+2m..3m) had 4 runs before the stop at 2:35 and 5
		// after the start at 2:50.
		{"again within the minute", 2*time.Minute + 50*time.Second, 3, "[1 9]"},
		// A start at 3:10: minute 2 keeps its 4, minute 3 has 5.
		{"again in the next minute", 3*time.Minute + 10*time.Second, 4, "[4 5]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New(time.Minute)
			h.Start(t0)
			h.Add(reading(1, 1, 0, 0))
			h.Add(reading(2, 2, 0, 0))
			stop := reading(2, 6, 0, 0)
			stop.At = t0.Add(2*time.Minute + 35*time.Second)
			h.Add(stop)
			b, _ := h.Marshal()
			h2 := New(time.Minute)
			if err := h2.Restore(b); err != nil {
				t.Fatal(err)
			}
			h2.Start(t0.Add(tc.restart)) // counters from zero
			h2.Add(reading(tc.tick, 5, 0, 0))
			got := h2.Snapshot().Hour.Rules["lamp"].Started
			if s := tail(got, 2); s != tc.want {
				t.Errorf("the last two minutes: %s; want %s", s, tc.want)
			}
		})
	}
}

// TestTakeChanged: a reading that counted nothing leaves nothing to
// write.
func TestTakeChanged(t *testing.T) {
	h := New(time.Minute)
	h.Start(t0)
	h.Add(reading(1, 0, 0, 0))
	if h.TakeChanged() {
		t.Error("an idle minute is a change")
	}
	h.Add(reading(2, 1, 0, 0))
	if !h.TakeChanged() || h.TakeChanged() {
		t.Error("a run is not a change once")
	}
	h.Add(reading(3, 1, 0, 2))
	if !h.TakeChanged() {
		t.Error("a queue is not a change")
	}
}
