package seq

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// TestParkedRunsReplay: 100,000 runs parked on a wait-for, each of its
// own key, are replayed by a new runner within 2 KiB a run beyond what the
// store holds; an event reaches the one run its values name, not after a
// walk of all of them (issue 38: 80,000 parked runs took 350 MB and 12.8 s
// to restart, each event of the topic walked every one, and a stop took
// time quadratic in them). The replay's and the stop's times are logged.
func TestParkedRunsReplay(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("100,000 runs, for their figures: not in -short, not under the race detector")
	}
	const n = 100_000
	clk := sched.NewVirtual(t0)
	p := pool.New(pool.Config{Workers: 2, Capacity: n})
	defer p.Stop()
	h := &testkit.Hasher{}
	r := &rules.Rule{ID: "r", Key: "vehicle", Mode: rules.ModeParallel, Max: n, MaxKeys: n, Repeat: rules.Repeat{Passes: 1}}
	w := &rules.Wait{Pattern: "flow.sensor", Match: []string{"vehicle"}, Timeout: time.Hour, Continue: true}
	r.Steps = []rules.Step{{Name: "flow", Index: 0, Wait: w}, {Name: "after", Index: 1, Do: rules.Call{Plugin: "p", Function: "after", With: []byte("{}")}}}
	j := &journal{}
	s := &Sequence{Rule: r, Steps: []CompiledStep{
		{Name: "flow", Fingerprint: r.Steps[0].Fingerprint(), Wait: &Wait{Pattern: "flow.sensor", Match: []string{"vehicle"}, Timeout: time.Hour, Continue: true}},
		{Name: "after", Action: &act{j: j, name: "after"}, Fingerprint: r.Steps[1].Fingerprint(), Digest: "d1"},
	}}
	mk := func() *Runner {
		return NewRunner(RunnerConfig{Pool: p, Scheduler: clk, Log: &testkit.Log{}, Store: NewPendingStore(h, Placement{}, &testkit.Log{})})
	}
	rn := mk()
	var dec bus.Decoder
	for i := range n {
		e, _ := dec.Decode([]byte(`{"topic":"t","vehicle":"s-` + strconv.Itoa(i) + `","battery":12}`))
		rn.Fire(Trigger{Seq: s, Event: e})
	}
	settled, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rn.Quiet(settled, 0) // past its deadline: the check says what is missing
	if got := rn.Counts().Waiting; got != n {
		t.Fatalf("%d runs waiting; want %d", got, n)
	}
	start := time.Now()
	rn.Stop()
	stopped := time.Since(start)
	rn = nil
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start = time.Now()
	rn2 := mk()
	if got := rn2.Replay([]*Sequence{s}, time.Hour); got != n {
		t.Fatalf("replayed %d; want %d", got, n)
	}
	took := time.Since(start)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%d parked runs: stop %v; replay %v, %.0f bytes a run (heap %d MB -> %d MB, the store's records included in both)",
		n, stopped.Round(time.Millisecond), took.Round(time.Millisecond), per, before.HeapAlloc>>20, after.HeapAlloc>>20)
	if rn2.Counts().Waiting != n {
		t.Errorf("%d waiting after the replay; want %d", rn2.Counts().Waiting, n)
	}
	if per > 2048 {
		t.Errorf("%.0f bytes a replayed run; want at most 2 KiB", per)
	}
	e, _ := dec.Decode([]byte(`{"topic":"flow.sensor","vehicle":"s-4242"}`))
	if offered := rn2.Deliver("r", e, nil); offered != 1 {
		t.Errorf("an event of one vehicle was offered to %d runs; want 1", offered)
	}
	settled, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rn2.Quiet(settled, 0)
	if rn2.Counts().Waiting != n-1 {
		t.Errorf("%d waiting after the event; want %d", rn2.Counts().Waiting, n-1)
	}
	rn2.Stop()
}
