package window

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// TestConcurrentUse: Observe, Sync, SyncSoon, Read, Stats and Define
// (between two sets of specs) at once, the store going away and coming
// back, closes taken on other goroutines, on the real clock for a second:
// no race (go test -race), and after Close the store holds exactly what
// memory does.
func TestConcurrentUse(t *testing.T) {
	clk := sched.New()
	defer clk.Stop()
	st := &testkit.Hasher{}
	var fired atomic.Int64
	tb, err := New(Config{Store: st, Clock: clk, Fire: func(c Closed, done func()) {
		fired.Add(1)
		go done()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defsA := map[string]Spec{
		"t": {Kind: Tumbling, Every: time.Second},
		"s": {Kind: Sliding, Last: time.Second, Buckets: 10, MaxKeys: 5},
		"c": {Kind: Count, Events: 3, Numeric: true},
	}
	defsB := map[string]Spec{
		"t": {Kind: Tumbling, Every: time.Second},
		"s": {Kind: Sliding, Last: 2 * time.Second, Buckets: 10, MaxKeys: 5},
		"c": {Kind: Count, Events: 4, Numeric: true},
	}
	tb.Define(defsA)
	tb.Start()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	run := func(f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				f(i)
			}
		}()
	}
	for g := 0; g < 3; g++ {
		run(func(i int) {
			for _, w := range []string{"t", "s", "c"} {
				tb.Observe(w, strconv.Itoa(i%7), float64(i), clk.Now())
			}
		})
	}
	run(func(i int) { tb.Sync() })
	run(func(i int) {
		tb.SyncSoon()
		tb.Read("t", "1")
		tb.Read("s", "2")
		tb.Stats()
		time.Sleep(time.Millisecond)
	})
	run(func(i int) {
		if i%2 == 0 {
			tb.Define(defsA)
		} else {
			tb.Define(defsB)
		}
		time.Sleep(50 * time.Millisecond)
	})
	run(func(i int) { st.SetDown(i%2 == 0); time.Sleep(7 * time.Millisecond) })
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	st.SetDown(false)
	time.Sleep(100 * time.Millisecond)
	tb.Close()
	t.Logf("fired %d", fired.Load())
	all, _ := st.HGetAll("ruled:windows")
	tb.mu.Lock()
	defer tb.mu.Unlock()
	want := map[string]string{}
	for n, w := range tb.windows {
		want[specField(n)] = w.spec.String()
		for k, x := range w.keys {
			want[seriesField(n, k)] = string(x.encode(&w.spec))
		}
		for f, v := range w.closes {
			want[f] = string(v)
		}
	}
	for f, v := range want {
		if all[f] != v {
			t.Errorf("store %q = %q, memory %q", f, all[f], v)
		}
	}
	for f := range all {
		if _, ok := want[f]; !ok {
			t.Errorf("store holds %q, memory does not", f)
		}
	}
}
