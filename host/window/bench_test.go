package window

import (
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
