package state_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/state"
)

// BenchmarkObserve: a report that changes nothing (the common case of a
// sensor repeating itself) and one that changes its entity's state, over
// 1,000 entities, in memory (the store's write is batched off the path).
func BenchmarkObserve(b *testing.B) {
	var d bus.Decoder
	for _, tc := range []struct {
		name   string
		change bool
	}{{"same", false}, {"changed", true}} {
		b.Run(tc.name, func(b *testing.B) {
			tb, _ := state.New(state.Config{})
			evs := make([]*bus.Event, 2000)
			for i := range evs {
				v := 20
				if tc.change {
					v += i / 1000
				}
				evs[i], _ = d.Decode([]byte(fmt.Sprintf(`{"topic":"sensor.%d.temp","id":"r%d","value":%d,"unit":"C"}`, i%1000, i, v)))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tb.Observe(evs[i%len(evs)])
			}
		})
	}
}

// TestMemoryPerEntity reports what an entity costs the heap: 10,000
// entities of a small sensor report, the events' own bytes included
// (the table keeps the event's JSON and view, not a copy).
func TestMemoryPerEntity(t *testing.T) {
	if testing.Short() {
		t.Skip("measures")
	}
	var d bus.Decoder
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tb, _ := state.New(state.Config{})
	for i := range 10_000 {
		e, _ := d.Decode([]byte(fmt.Sprintf(`{"topic":"sensor.%d.temp","value":21.5,"unit":"C"}`, i)))
		tb.Observe(e)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	st := tb.Stats()
	per := float64(after.HeapAlloc-before.HeapAlloc) / 10_000
	t.Logf("10,000 entities: %.0f bytes of heap each; the table counts %d each (state.max-kb)", per, st.Bytes/st.Entities)
	if st.Entities != 10_000 {
		t.Fatalf("%d entities", st.Entities)
	}
	runtime.KeepAlive(tb)
}
