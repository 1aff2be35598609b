package fleet

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/testkit"
)

// delayExec keeps a band-0 item's start delay (from its acceptance, the
// XADD, to its Execute) and how many band-5 items had run when it
// started; a band-5 item keeps its worker busy.
type delayExec struct {
	busy   time.Duration
	bulk   atomic.Int64
	mu     sync.Mutex
	delays []time.Duration
	behind []int64 // band-5 items run when each band-0 item started
}

func (x *delayExec) Execute(ctx context.Context, it Item) error {
	if it.Rule != "hi" { // band 5
		time.Sleep(x.busy)
		x.bulk.Add(1)
		return nil
	}
	d := time.Since(it.Event.Time)
	x.mu.Lock()
	x.delays = append(x.delays, d)
	x.behind = append(x.behind, x.bulk.Load())
	x.mu.Unlock()
	return nil
}

// TestBandZeroStartDelay: band-0 steps arriving while band-5 work keeps
// every worker busy start within a cycle or so, as on an idle pool — one
// member, 2 workers, 2 shards over a real redis-server. It asserts what
// does not depend on the machine's speed: every band-0 item started while
// the band-5 flood was still far from done. With RULED_PERF=1 (make
// bench) it reports the p50 and p99 start delay, saturated and idle, from
// the same run.
func TestBandZeroStartDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("a member over a real redis-server")
	}
	urgent, flood := 40, 2000
	if os.Getenv("RULED_PERF") != "" {
		urgent, flood = 200, 6000
	}
	r := openRedis(t)
	ctx := context.Background()
	in := r.Stream()
	x := &delayExec{busy: 2 * time.Millisecond}
	m, err := New(Config{Holder: "m", Shards: 2, Workers: 2, LeaseTTL: 2 * time.Second},
		r.Backlog(), in, r.Backlog(), keyRouter{bulk: 5}, x, testkit.LogTo(t))
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); m.Run(mctx) }()
	defer func() { cancel(); <-done }()

	// send posts n band-0 events 10 ms apart and waits until they all ran;
	// it returns their delays.
	seq := 0
	send := func(n int) []time.Duration {
		t.Helper()
		x.mu.Lock()
		from := len(x.delays)
		x.mu.Unlock()
		for i := range n {
			seq++
			raw := fmt.Sprintf(`{"topic":"job","k":"u%d","urgent":true}`, i%10)
			if _, err := in.Append(ctx, fmt.Sprint("u", seq), "job", time.Now(), 0, []byte(raw)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			x.mu.Lock()
			got := len(x.delays) - from
			x.mu.Unlock()
			if got >= n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d band-0 items ran", got, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
		x.mu.Lock()
		defer x.mu.Unlock()
		return slices.Clone(x.delays[from:])
	}
	idle := send(urgent)
	for i := range flood {
		raw := fmt.Sprintf(`{"topic":"job","k":"b%d"}`, i%50)
		if _, err := in.Append(ctx, fmt.Sprint("b", i), "job", time.Now(), 0, []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	// The flood is admitted and under way before band-0 work arrives.
	for x.bulk.Load() < int64(4*2) {
		time.Sleep(5 * time.Millisecond)
	}
	saturated := send(urgent)
	x.mu.Lock()
	last := x.behind[len(x.behind)-1]
	x.mu.Unlock()
	if last >= int64(flood) {
		t.Fatalf("the band-5 flood (%d items) was done before the last band-0 item started: the test measured an idle pool", flood)
	}
	if last > int64(flood)*3/4 {
		t.Errorf("the last band-0 item started after %d of %d band-5 items: band 0 waited behind band 5", last, flood)
	}
	p := func(ds []time.Duration, q float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(q*float64(len(s))))].Round(10 * time.Microsecond)
	}
	t.Logf("band-0 start delay (XADD to Execute), 1 member, 2 workers, 2 shards, %d band-0 items 10 ms apart: "+
		"idle pool p50 %v p99 %v; while %d band-5 items (2 ms each) saturate it p50 %v p99 %v (p99 ratio %.2f); "+
		"band-5 items run when the last band-0 item started: %d",
		urgent, p(idle, .5), p(idle, .99), flood, p(saturated, .5), p(saturated, .99),
		float64(p(saturated, .99))/float64(p(idle, .99)), last)
}
