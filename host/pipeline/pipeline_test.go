package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/candidates"
	"github.com/ruled-dev/ruled/host/planner"
)

// fakeClock moves only when told: Sleep advances it by what was asked.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

// backlog is a Source over items in memory: shard → band → key → ids,
// oldest first. Workers take items out with take.
type backlog struct {
	mu    sync.Mutex
	items map[int]map[int]map[string][]string
	// scanCost and failScan are what the next ScanBand does besides its
	// work: advance the clock, fail.
	clock    *fakeClock
	scanCost time.Duration
	failScan error
	// short caps what FetchSteps returns for a key; missing leaves keys out.
	short   map[string]int
	missing map[string]bool
	capped  int // the planning capacity ScanBand caps tallies at
}

func newBacklog(c *fakeClock) *backlog {
	return &backlog{items: map[int]map[int]map[string][]string{}, clock: c, capped: 1 << 30}
}

func (b *backlog) add(shard, band int, key string, ids ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.items[shard] == nil {
		b.items[shard] = map[int]map[string][]string{}
	}
	if b.items[shard][band] == nil {
		b.items[shard][band] = map[string][]string{}
	}
	b.items[shard][band][key] = append(b.items[shard][band][key], ids...)
}

func (b *backlog) take(c candidates.Candidate) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := b.items[c.Shard][c.Band][c.Key]
	i := slices.Index(ids, c.ID)
	if i < 0 {
		return false
	}
	b.items[c.Shard][c.Band][c.Key] = slices.Delete(ids, i, i+1)
	return true
}

func (b *backlog) ScanBand(_ context.Context, shard int) (int, []planner.Tally, error) {
	if b.scanCost > 0 {
		b.clock.Advance(b.scanCost)
	}
	if err := b.failScan; err != nil {
		b.failScan = nil
		return 0, nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	best := NoBand
	for band, keys := range b.items[shard] {
		for _, ids := range keys {
			if len(ids) > 0 && band < best {
				best = band
			}
		}
	}
	var ts []planner.Tally
	for key, ids := range b.items[shard][best] {
		if len(ids) > 0 {
			ts = append(ts, planner.Tally{Key: key, Count: min(len(ids), b.capped)})
		}
	}
	return best, ts, nil
}

func (b *backlog) FetchSteps(_ context.Context, shard, band int, keys []string, perKey int) (map[string][]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string][]string{}
	for _, k := range keys {
		if b.missing[k] {
			continue
		}
		ids := b.items[shard][band][k]
		n := min(perKey, len(ids))
		if s, ok := b.short[k]; ok {
			n = min(n, s)
		}
		out[k] = slices.Clone(ids[:n])
	}
	return out, nil
}

// rig is pipelines over one planner, cache and backlog, with a fixed
// capacity.
type rig struct {
	clock *fakeClock
	src   *backlog
	cache *candidates.Cache
	board *planner.MemBoard
	plan  *planner.Planner
	pipes []*Pipeline
}

func newRig(t *testing.T, shards, capacity int) *rig {
	t.Helper()
	r := &rig{clock: newClock(), cache: candidates.New(), board: planner.NewBoard()}
	r.src = newBacklog(r.clock)
	r.plan = planner.New(r.board, func() int { return capacity })
	for s := range shards {
		p, err := New(s, r.src, r.plan, r.cache)
		if err != nil {
			t.Fatal(err)
		}
		p.clock = r.clock
		r.pipes = append(r.pipes, p)
	}
	return r
}

// work pops up to n candidates and takes them from the backlog.
func (r *rig) work(n int) []candidates.Candidate {
	var out []candidates.Candidate
	for len(out) < n {
		c, ok := r.cache.Pop()
		if !ok {
			break
		}
		if r.src.take(c) {
			out = append(out, c)
		}
	}
	return out
}

func TestNewCatchesWiringMistakes(t *testing.T) {
	src, pl, cache := newBacklog(newClock()), planner.New(planner.NewBoard(), func() int { return 1 }), candidates.New()
	for _, tc := range []struct {
		name  string
		shard int
		src   Source
		pl    *planner.Planner
		cache *candidates.Cache
	}{
		{"negative shard", -1, src, pl, cache},
		{"no source", 0, nil, pl, cache},
		{"no planner", 0, src, nil, cache},
		{"no cache", 0, src, pl, nil},
	} {
		if _, err := New(tc.shard, tc.src, tc.pl, tc.cache); err == nil {
			t.Errorf("%s: New accepted it", tc.name)
		}
	}
}

func TestCadence(t *testing.T) {
	ctx := context.Background()
	t.Run("sleeps at the front, for what the interval still owes", func(t *testing.T) {
		r := newRig(t, 1, 4)
		p := r.pipes[0]
		p.SetInterval(50 * time.Millisecond)
		p.SetMinGap(0)
		if res := p.Cycle(ctx); res.Slept != 0 {
			t.Errorf("the first cycle slept %v; nothing is owed yet", res.Slept)
		}
		r.clock.Advance(30 * time.Millisecond) // the caller's own work between calls
		if res := p.Cycle(ctx); res.Slept != 20*time.Millisecond {
			t.Errorf("slept %v after the caller spent 30ms; want the 20ms left of the interval", res.Slept)
		}
		r.clock.Advance(70 * time.Millisecond) // the caller was slower than the interval
		if res := p.Cycle(ctx); res.Slept != 0 {
			t.Errorf("slept %v when the interval was already over", res.Slept)
		}
	})
	t.Run("MinGap after a cycle that outran its interval", func(t *testing.T) {
		r := newRig(t, 1, 4)
		p := r.pipes[0]
		p.SetInterval(50 * time.Millisecond)
		p.SetMinGap(20 * time.Millisecond)
		r.src.scanCost = 80 * time.Millisecond
		if res := p.Cycle(ctx); res.Total != 80*time.Millisecond || res.Tallying != 80*time.Millisecond {
			t.Errorf("a cycle whose scan took 80ms reported %+v", res)
		}
		r.src.scanCost = 0
		if res := p.Cycle(ctx); res.Slept != 20*time.Millisecond {
			t.Errorf("slept %v after a slow cycle; want MinGap's 20ms, not back to back", res.Slept)
		}
	})
	t.Run("zero interval and zero gap pace nothing", func(t *testing.T) {
		r := newRig(t, 1, 4)
		p := r.pipes[0]
		p.SetInterval(0)
		p.SetMinGap(0)
		for range 5 {
			if res := p.Cycle(ctx); res.Slept != 0 {
				t.Fatalf("slept %v", res.Slept)
			}
		}
		if len(r.clock.sleeps) != 0 {
			t.Errorf("slept %v", r.clock.sleeps)
		}
	})
	t.Run("SetInterval is read every cycle", func(t *testing.T) {
		r := newRig(t, 1, 4)
		p := r.pipes[0]
		p.SetMinGap(0)
		p.Cycle(ctx)
		p.SetInterval(200 * time.Millisecond)
		if res := p.Cycle(ctx); res.Slept != 200*time.Millisecond {
			t.Errorf("slept %v after SetInterval(200ms)", res.Slept)
		}
	})
	t.Run("a failing phase yields its error, and the next cycle retries", func(t *testing.T) {
		r := newRig(t, 1, 4)
		p := r.pipes[0]
		r.src.add(0, 1, "k", "a")
		boom := errors.New("connection refused")
		r.src.failScan = boom
		res := p.Cycle(ctx)
		if !errors.Is(res.Err, boom) || res.Err.Error() != "tallying: connection refused" || res.Selected != 0 {
			t.Fatalf("a failed scan: %+v", res)
		}
		if res := p.Cycle(ctx); res.Err != nil || res.Selected != 1 || res.Band != 1 {
			t.Fatalf("the retry: %+v", res)
		}
	})
	t.Run("a cancelled context ends the sleep", func(t *testing.T) {
		r := newRig(t, 1, 4)
		p := r.pipes[0]
		p.Cycle(ctx)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if res := p.Cycle(cctx); !errors.Is(res.Err, context.Canceled) {
			t.Errorf("cancelled: %+v", res)
		}
	})
}

func TestWorkingFor(t *testing.T) {
	r := newRig(t, 1, 4)
	p := r.pipes[0]
	if p.WorkingFor() != 0 {
		t.Fatal("working before any cycle")
	}
	r.src.scanCost = 0
	seen := time.Duration(-1)
	src := &probe{backlog: r.src, during: func() { seen = p.WorkingFor() }, clock: r.clock}
	p.source = src
	p.Cycle(context.Background())
	if seen != 3*time.Second {
		t.Errorf("WorkingFor inside a 3s scan said %v", seen)
	}
	if p.WorkingFor() != 0 {
		t.Errorf("WorkingFor after the cycle: %v", p.WorkingFor())
	}
}

// probe is a backlog whose scan takes 3 s and looks at the pipeline then.
type probe struct {
	*backlog
	during func()
	clock  *fakeClock
}

func (p *probe) ScanBand(ctx context.Context, shard int) (int, []planner.Tally, error) {
	p.clock.Advance(3 * time.Second)
	p.during()
	return p.backlog.ScanBand(ctx, shard)
}

// TestStarvation: a flood of band-5 work, on the same shard or another,
// cannot delay a band-0 step by more than one cycle.
func TestStarvation(t *testing.T) {
	for _, where := range []int{0, 1} {
		t.Run(fmt.Sprintf("band 0 on shard %d, the flood on shard 1", where), func(t *testing.T) {
			r := newRig(t, 2, 4)
			for i := range 1000 {
				r.src.add(1, 5, fmt.Sprintf("bulk-%d", i%3), fmt.Sprint("b", i))
			}
			ctx := context.Background()
			for tick := 0; tick < 40; tick++ {
				if tick == 10 {
					r.src.add(where, 0, "urgent", "u")
				}
				for _, p := range r.pipes {
					p.Cycle(ctx)
				}
				for _, c := range r.work(4) {
					if c.ID == "u" {
						if tick > 11 {
							t.Fatalf("the band-0 step ran at tick %d, due at 10: more than one cycle late", tick)
						}
						return
					}
				}
			}
			t.Fatal("the band-0 step never ran")
		})
	}
}

// TestFairness: two keys saturating one band get shares within 10% of
// equal; a key with one item is served in the cycle after it is due,
// beside a key with a deep backlog; keys that come back short or missing
// from FetchSteps just yield fewer candidates.
func TestFairness(t *testing.T) {
	ctx := context.Background()
	t.Run("two saturating keys", func(t *testing.T) {
		r := newRig(t, 1, 3)
		for i := range 2000 {
			r.src.add(0, 2, "s-1", fmt.Sprint("a", i))
			r.src.add(0, 2, "s-2", fmt.Sprint("b", i))
		}
		got := map[string]int{}
		for range 300 {
			r.pipes[0].Cycle(ctx)
			for _, c := range r.work(3) {
				got[c.Key]++
			}
		}
		a, b := float64(got["s-1"]), float64(got["s-2"])
		if d := (a - b) / ((a + b) / 2); d > 0.1 || d < -0.1 || a+b != 900 {
			t.Errorf("served %v: %.1f%% apart; want 900 within 10%% of equal", got, 100*d)
		}
	})
	t.Run("one item behind a deep backlog", func(t *testing.T) {
		r := newRig(t, 1, 4)
		for i := range 500 {
			r.src.add(0, 2, "deep", fmt.Sprint("d", i))
		}
		r.pipes[0].Cycle(ctx)
		r.work(4)
		r.src.add(0, 2, "one", "x")
		r.pipes[0].Cycle(ctx)
		done := r.work(4)
		if !slices.ContainsFunc(done, func(c candidates.Candidate) bool { return c.ID == "x" }) {
			t.Errorf("the next cycle served %v; want the single item among them", done)
		}
		if done[0].Key != "deep" && done[1].Key != "deep" {
			t.Errorf("the deep key was not served beside it: %v", done)
		}
	})
	t.Run("short and missing keys", func(t *testing.T) {
		r := newRig(t, 1, 6)
		for i := range 10 {
			r.src.add(0, 1, "a", fmt.Sprint("a", i))
			r.src.add(0, 1, "b", fmt.Sprint("b", i))
			r.src.add(0, 1, "c", fmt.Sprint("c", i))
		}
		r.src.short = map[string]int{"a": 1}
		r.src.missing = map[string]bool{"b": true}
		res := r.pipes[0].Cycle(ctx)
		if res.Err != nil || res.Selected != 3 {
			t.Fatalf("grants of 2 each, a short by one, b missing: %+v; want 3 selected", res)
		}
		if got := fmt.Sprint(r.work(10)); got != "[{0 1 a a0} {0 1 c c0} {0 1 c c1}]" {
			t.Errorf("served %s", got)
		}
	})
	t.Run("a push replaces what was not taken", func(t *testing.T) {
		r := newRig(t, 1, 4)
		for i := range 20 {
			r.src.add(0, 1, "k", fmt.Sprint(i))
		}
		r.pipes[0].Cycle(ctx)
		r.work(1)
		res := r.pipes[0].Cycle(ctx)
		if res.Selected != 4 || res.Discarded != 3 {
			t.Errorf("%+v; want 4 selected, the 3 untaken discarded", res)
		}
	})
}

func Example() {
	cache := candidates.New()
	plan := planner.New(planner.NewBoard(), func() int { return 2 })
	src := newBacklog(newClock())
	src.add(0, 3, "scooter-1", "run-a", "run-b", "run-c")
	src.add(0, 3, "scooter-2", "run-x")
	p, err := New(0, src, plan, cache)
	if err != nil {
		panic(err)
	}
	res := p.Cycle(context.Background())
	fmt.Println("band", res.Band, "selected", res.Selected)
	for c, ok := cache.Pop(); ok; c, ok = cache.Pop() {
		fmt.Println(c.Key, c.ID)
	}
	// Output:
	// band 3 selected 2
	// scooter-1 run-a
	// scooter-2 run-x
}
