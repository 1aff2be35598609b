package hold_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/hold"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/state"
	"github.com/ruled-dev/ruled/host/store"
)

// nopStore keeps nothing: what a hold costs the heap, not the store.
type nopStore struct{}

func (nopStore) HGetAll(string) (map[string]string, error)          { return nil, nil }
func (nopStore) HSetDel(string, []string, [][]byte, []string) error { return nil }

// TestMemoryPerHold reports what a running hold costs the heap beyond
// its entity's state: 10,000 doors held open.
func TestMemoryPerHold(t *testing.T) {
	if testing.Short() {
		t.Skip("measures")
	}
	clock := sched.NewVirtual(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	states, _ := state.New(state.Config{Now: clock.Now})
	hs := hold.New(hold.Config{Store: nopStore{}, Clock: clock, Fire: func(hold.Due, func()) bool { return true }})
	var d bus.Decoder
	evs := make([]*bus.Event, 10_000)
	chs := make([]state.Change, len(evs))
	for i := range evs {
		evs[i], _ = d.Decode([]byte(fmt.Sprintf(`{"topic":"door.d%d","open":true}`, i)))
		chs[i] = states.Observe(evs[i])
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i, e := range evs {
		hs.Observe("door-left-open", 0, open, chs[i], e)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if st := hs.Stats(); st.Running != 10_000 {
		t.Fatalf("%+v", st)
	}
	t.Logf("10,000 holds: %.0f bytes of heap each (the event's JSON and view are the state table's)",
		float64(after.HeapAlloc-before.HeapAlloc)/10_000)
	runtime.KeepAlive(hs)
	runtime.KeepAlive(states)
}

// BenchmarkHoldObserve: a report that keeps a running hold (the common
// case: a sensor repeating itself while the door stays open), in memory
// and on bbolt (where nothing is written for it).
func BenchmarkHoldObserve(b *testing.B) {
	clock := sched.NewVirtual(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	st, err := store.OpenBolt(filepath.Join(b.TempDir(), "ruled.db"), store.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	states, _ := state.New(state.Config{Now: clock.Now})
	hs := hold.New(hold.Config{Store: st, Clock: clock, Fire: func(hold.Due, func()) bool { return true }})
	var d bus.Decoder
	e, _ := d.Decode([]byte(`{"topic":"door.front","open":true,"battery":80}`))
	hs.Observe("r", 0, open, states.Observe(e), e)
	repeat, _ := d.Decode([]byte(`{"topic":"door.front","open":true,"battery":80,"id":"again"}`))
	ch := states.Observe(repeat)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		hs.Observe("r", 0, open, ch, repeat)
	}
}
