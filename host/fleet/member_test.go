package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/redistest"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// keyRouter routes every event to rule "r" (band 3, or bulk when set) and
// to rule "hi" (band 0) for events with "urgent", keyed by the event's "k".
type keyRouter struct{ bulk int }

func (k keyRouter) Route(e store.StreamEntry) []Admission {
	var v struct {
		K      string `json:"k"`
		Urgent bool   `json:"urgent"`
	}
	json.Unmarshal(e.Raw, &v)
	if v.Urgent {
		return []Admission{{Rule: "hi", Band: 0, Key: "hi\x00" + v.K}}
	}
	band := 3
	if k.bulk != 0 {
		band = k.bulk
	}
	return []Admission{{Rule: "r", Band: band, Key: "r\x00" + v.K}}
}

// openRedis starts a redis-server for the test and returns the store on
// it, its ingest stream's group made.
func openRedis(t *testing.T) *store.Redis {
	t.Helper()
	r, err := store.OpenRedis(redistest.Start(t).URL(), store.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Stream().Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// counter is the test's executor: an independent counter of effects in
// Redis, keyed by the item's idempotency key (HINCRBY), and a check that
// no item runs on two members at once.
type counter struct {
	c       redis.UniversalClient
	mu      sync.Mutex
	running map[string]string // item → member running it
	overlap []string
	busy    time.Duration
}

type memberExec struct {
	*counter
	name string
}

func (x memberExec) Execute(ctx context.Context, it Item) error {
	x.mu.Lock()
	if other, ok := x.running[it.ID]; ok {
		x.overlap = append(x.overlap, fmt.Sprintf("%s on %s and %s", it.ID, other, x.name))
	}
	x.running[it.ID] = x.name
	x.mu.Unlock()
	time.Sleep(x.busy)
	err := x.c.HIncrBy(context.Background(), "test:effects", it.ID, 1).Err() // the effect is its own
	x.mu.Lock()
	delete(x.running, it.ID)
	x.mu.Unlock()
	return err
}

// TestFleet: three members over one Redis, four shards, 2,000 accepted
// events; a member crashes midway (its leases and items in flight left as
// they are) and a new one joins. Every event's item runs — lost = 0 —
// none on two members at once, and repeats are only what the crashed
// member had in flight.
func TestFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("a fleet over a real redis-server")
	}
	r := openRedis(t)
	ctx := context.Background()
	in := r.Stream()
	const n = 2000
	for i := range n {
		raw := fmt.Sprintf(`{"topic":"job","k":"v%d","n":%d}`, i%17, i)
		if _, err := in.Append(ctx, fmt.Sprint("e", i), "job", time.Now(), 0, []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	cnt := &counter{c: r.Client(), running: map[string]string{}, busy: time.Millisecond}
	type running struct {
		m      *Member
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func(name string) running {
		m, err := New(Config{Holder: name, Shards: 4, Workers: 2, LeaseTTL: time.Second},
			r.Backlog(), r.Stream(), r.Backlog(), keyRouter{}, memberExec{cnt, name}, testkit.LogTo(t))
		if err != nil {
			t.Fatal(err)
		}
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); m.Run(mctx) }()
		return running{m, cancel, done}
	}
	members := []running{start("m0"), start("m1"), start("m2")}
	effects := func() (distinct, total int) {
		all, err := r.Client().HGetAll(ctx, "test:effects").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range all {
			var c int
			fmt.Sscan(v, &c)
			total += c
		}
		return len(all), total
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				d, tot := effects()
				t.Fatalf("never: %s (effects %d distinct, %d in all)", what, d, tot)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("a third of the work done", func() bool { d, _ := effects(); return d >= n/3 })
	crashed := members[0]
	crashedHeld := crashed.m.Held()
	crashed.m.abandon.Store(true)
	crashed.cancel()
	<-crashed.done
	urgent := 0
	for i := range 20 { // band-0 work arriving while a shard changes hands
		raw := fmt.Sprintf(`{"topic":"job","k":"v%d","urgent":true}`, i)
		in.Append(ctx, fmt.Sprint("u", i), "job", time.Now(), 0, []byte(raw))
		urgent++
	}
	members = append(members[1:], start("m3"))
	waitFor("every item run", func() bool { d, _ := effects(); return d == n+urgent })
	for _, m := range members {
		m.cancel()
		<-m.done
	}
	distinct, total := effects()
	dups := total - distinct
	t.Logf("%d events (+%d urgent), 3 members, 4 shards; m0 crashed holding shards %v: %d items ran, %d repeated",
		n, urgent, crashedHeld, distinct, dups)
	if distinct != n+urgent {
		t.Errorf("lost %d", n+urgent-distinct)
	}
	if dups > 2 { // the crashed member's two workers, at most one item each
		t.Errorf("%d repeats; only the crashed member's items in flight may repeat (at most 2)", dups)
	}
	if len(cnt.overlap) > 0 {
		t.Errorf("items ran on two members at once: %v", cnt.overlap)
	}
	if l, _ := in.Len(ctx); l != 0 {
		t.Errorf("%d entries left in the stream", l)
	}
}

func TestNewRefusesBadWiring(t *testing.T) {
	ok := Config{Holder: "a", Shards: 2}
	for _, tc := range []struct {
		name string
		cfg  Config
		nil_ bool
	}{
		{"no holder", Config{Shards: 2}, false},
		{"no shards", Config{Holder: "a"}, false},
		{"a missing part", ok, true},
	} {
		var err error
		if tc.nil_ {
			_, err = New(tc.cfg, nil, nil, nil, keyRouter{}, nil, testkit.LogTo(t))
		} else {
			_, err = New(tc.cfg, &store.RedisBacklog{}, &store.RedisStream{}, &store.RedisBacklog{}, keyRouter{}, memberExec{}, testkit.LogTo(t))
		}
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

func TestShardOf(t *testing.T) {
	seen := map[int]int{}
	for i := range 1000 {
		s := ShardOf(4, "r", fmt.Sprint("v", i))
		if s != ShardOf(4, "r", fmt.Sprint("v", i)) || s < 0 || s >= 4 {
			t.Fatalf("ShardOf not stable or out of range: %d", s)
		}
		seen[s]++
	}
	for s := range 4 {
		if seen[s] < 150 {
			t.Errorf("shard %d got %d of 1000 keys: %v", s, seen[s], seen)
		}
	}
}

// slowRenew is a backlog whose renewals can be held up, as a Redis that
// answers late or a network that stalls would.
type slowRenew struct {
	*store.RedisBacklog
	delay atomic.Int64 // ns each Renew waits before it is sent
}

func (b *slowRenew) Renew(ctx context.Context, shard int, holder string, token int64, ttl time.Duration) error {
	time.Sleep(time.Duration(b.delay.Load()))
	return b.RedisBacklog.Renew(ctx, shard, holder, token, ttl)
}

// TestHoldsEndsBeforeTheLeaseCanLapse: a member whose renewals stall
// stops counting its shards as its own (Holds false) before Redis could
// give them to another member — a guard ahead of the lease's lapse — and
// takes them anew once renewals go through again.
func TestHoldsEndsBeforeTheLeaseCanLapse(t *testing.T) {
	if testing.Short() {
		t.Skip("a member over a real redis-server")
	}
	r := openRedis(t)
	ctx := context.Background()
	b := &slowRenew{RedisBacklog: r.Backlog()}
	// A wide guard: the check that the lease is still live in Redis once
	// Holds ended must not depend on this goroutine being scheduled fast.
	const ttl, guard = 1500 * time.Millisecond, 600 * time.Millisecond
	m, err := New(Config{Holder: "m", Shards: 2, LeaseTTL: ttl, Guard: guard},
		b, r.Stream(), r.Backlog(), keyRouter{}, memberExec{&counter{c: r.Client(), running: map[string]string{}}, "m"}, testkit.LogTo(t))
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); m.Run(mctx) }()
	defer func() { b.delay.Store(0); cancel(); <-done }()
	waitHolds := func(want bool, within time.Duration) time.Duration {
		t.Helper()
		began := time.Now()
		for m.Holds(0) != want || m.Holds(1) != want {
			if time.Since(began) > within {
				t.Fatalf("Holds is not %v after %v", want, within)
			}
			time.Sleep(time.Millisecond)
		}
		return time.Since(began)
	}
	waitHolds(true, 5*time.Second)
	stalled := time.Now()
	b.delay.Store(int64(2 * ttl))
	// The lease was last renewed at most a third of a TTL before the stall:
	// Holds ends by then + TTL - guard, while the lease in Redis lives on
	// until at least then + TTL.
	waitHolds(false, ttl)
	endedAt := time.Since(stalled)
	for s := range 2 {
		holder, err := r.Client().HGet(ctx, fmt.Sprintf("ruled:{%d}:lease", s), "holder").Result()
		if err != nil || holder != "m" {
			t.Errorf("shard %d: Holds ended after %v, but the lease was not live in Redis (holder %q, %v): the guard did not run ahead of it", s, endedAt, holder, err)
		}
	}
	b.delay.Store(0)
	waitHolds(true, 5*ttl)
}
