package window

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/sched"
)

// BenchmarkWindow is the cost of counting one event in a window (a
// 15-minute average of 100 keys), against the same aggregate kept by a
// plain Go loop (a map of keys to 60 buckets of count, sum, min and max):
// the ratio is what the window's bounds, lateness, closes and records
// cost. Reported per event; goal ≤ 3×.
func BenchmarkWindow(b *testing.B) {
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = "sensor-" + strconv.Itoa(i)
	}
	b.Run("plain-go", func(b *testing.B) {
		type agg struct {
			idx                 int64
			count               int64
			sum, min, max, last float64
		}
		m := map[string]*[60]agg{}
		now := t0
		width := int64(15 * time.Second)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now = now.Add(time.Millisecond)
			k := keys[i%len(keys)]
			bs := m[k]
			if bs == nil {
				bs = &[60]agg{}
				m[k] = bs
			}
			idx := now.UnixNano() / width
			a := &bs[idx%60]
			if a.idx != idx {
				*a = agg{idx: idx, min: 1e308, max: -1e308}
			}
			v := float64(i % 7)
			a.count++
			a.sum += v
			a.min, a.max, a.last = min(a.min, v), max(a.max, v), v
		}
	})
	for _, s := range []struct {
		name string
		spec Spec
	}{
		{"sliding-15m", Spec{Kind: Sliding, Last: 15 * time.Minute, Numeric: true}},
		{"tumbling-day", Spec{Kind: Tumbling, Calendar: Day, Zone: time.UTC, Numeric: true}},
		{"count-100", Spec{Kind: Count, Events: 100, Numeric: true}},
	} {
		b.Run(s.name, func(b *testing.B) {
			clk := &benchClock{Virtual: sched.NewVirtual(t0), now: t0}
			tb, _ := New(Config{Clock: clk})
			tb.Define(map[string]Spec{"w": s.spec})
			tb.Start()
			defer tb.Close()
			now := t0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				now = now.Add(time.Millisecond)
				clk.now = now
				if tb.Observe("w", keys[i%len(keys)], float64(i%7), now) != Counted {
					b.Fatal("not counted")
				}
			}
		})
	}
}

// benchClock is a clock the benchmark moves by itself, an event a
// millisecond; its timers are a virtual clock's, never run.
type benchClock struct {
	*sched.Virtual
	now time.Time
}

func (c *benchClock) Now() time.Time { return c.now }

// TestMemoryPerKey reports the heap a key costs in each kind of window:
// a sliding 15m window with one bucket used and with all 60, a tumbling
// day, a count window of its 100 events (make bench's figures).
func TestMemoryPerKey(t *testing.T) {
	const keys = 5000
	for _, tc := range []struct {
		name   string
		spec   Spec
		events int
		every  time.Duration
	}{
		{"sliding-15m, 1 bucket", Spec{Kind: Sliding, Last: 15 * time.Minute, Numeric: true}, 1, 0},
		{"sliding-15m, 60 buckets", Spec{Kind: Sliding, Last: 15 * time.Minute, Numeric: true}, 60, 15 * time.Second},
		{"tumbling-day", Spec{Kind: Tumbling, Calendar: Day, Zone: time.UTC, Numeric: true}, 10, time.Second},
		{"count-100", Spec{Kind: Count, Events: 100, Numeric: true}, 100, time.Second},
	} {
		clk := &benchClock{Virtual: sched.NewVirtual(t0), now: t0}
		tb, _ := New(Config{Clock: clk})
		tb.Define(map[string]Spec{"w": tc.spec})
		names := make([]string, keys)
		for i := range names {
			names[i] = "sensor-" + strconv.Itoa(i)
		}
		before := heap()
		for e := range tc.events {
			clk.now = t0.Add(time.Duration(e) * tc.every)
			for _, k := range names {
				tb.Observe("w", k, float64(e), clk.now)
			}
		}
		after := heap()
		t.Logf("window memory: %s: %d bytes a key", tc.name, int(after-before)/keys)
		if st := tb.Stats()["w"]; st.Keys != keys {
			t.Fatalf("%d keys", st.Keys)
		}
		tb.Close()
	}
}

func heap() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}
