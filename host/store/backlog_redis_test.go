package store_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruled-dev/ruled/host/candidates"
	"github.com/ruled-dev/ruled/host/pipeline"
	"github.com/ruled-dev/ruled/host/planner"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// backlogTests run each body on its own redis-server and then, one after
// another, on one 3-master Redis Cluster flushed between them: the {shard}
// hash tags must keep every script on one slot.
func backlogTests(t *testing.T, bodies map[string]func(t *testing.T, b *store.RedisBacklog)) {
	open := func(t *testing.T, url string) *store.Redis {
		t.Helper()
		r, err := store.OpenRedis(url, store.RedisOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	t.Run("server", func(t *testing.T) {
		for name, body := range bodies {
			t.Run(name, func(t *testing.T) { body(t, open(t, redistest.Start(t).URL()).Backlog()) })
		}
	})
	t.Run("cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a 3-master cluster")
		}
		r := open(t, redistest.StartCluster(t, 3).URL())
		cl := r.Client().(*redis.ClusterClient)
		for name, body := range bodies {
			t.Run(name, func(t *testing.T) {
				err := cl.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
					return c.FlushAll(ctx).Err()
				})
				if err != nil {
					t.Fatal(err)
				}
				body(t, r.Backlog())
			})
		}
	})
}

func TestRedisBacklog(t *testing.T) {
	backlogTests(t, map[string]func(*testing.T, *store.RedisBacklog){
		"queue":    testBacklogQueue,
		"fencing":  testBacklogFencing,
		"race":     testBacklogTakeRace,
		"pipeline": testPipelineOverRedis,
		"record":   testBacklogRecordDone,
		"inflight": testBacklogInFlight,
	})
}

func testBacklogQueue(t *testing.T, b *store.RedisBacklog) {
	ctx := context.Background()
	if band, ts, err := b.ScanBand(ctx, 3); err != nil || band != planner.NoBand || len(ts) != 0 {
		t.Fatalf("an empty shard: %d %v %v", band, ts, err)
	}
	add := func(shard, band int, key, id string) {
		t.Helper()
		if ok, err := b.Add(ctx, shard, store.BacklogItem{ID: id, Band: band, Key: key, Payload: []byte("p-" + id)}); err != nil || !ok {
			t.Fatalf("add %s: %v %v", id, ok, err)
		}
	}
	add(3, 5, "bulk", "b1")
	add(3, 5, "bulk", "b2")
	add(3, 2, "s-1", "x1")
	add(3, 2, "s-1", "x2")
	add(3, 2, "s-2", "y1")
	add(4, 0, "other", "z") // another shard is not this one's business
	if ok, _ := b.Add(ctx, 3, store.BacklogItem{ID: "x1", Band: 2, Key: "s-1"}); ok {
		t.Error("an id queued twice")
	}
	band, ts, err := b.ScanBand(ctx, 3)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Key < ts[j].Key })
	if err != nil || band != 2 || fmt.Sprint(ts) != "[{s-1 2} {s-2 1}]" {
		t.Fatalf("scan: band %d tallies %v %v; want band 2, s-1 2 and s-2 1", band, ts, err)
	}
	got, err := b.FetchSteps(ctx, 3, 2, []string{"s-1", "s-2", "nobody"}, 5)
	if err != nil || fmt.Sprint(got) != "map[s-1:[x1 x2] s-2:[y1]]" {
		t.Fatalf("fetch: %v %v", got, err)
	}
	if got, _ := b.FetchSteps(ctx, 3, 2, []string{"s-1"}, 1); fmt.Sprint(got) != "map[s-1:[x1]]" {
		t.Errorf("fetch one per key, oldest first: %v", got)
	}

	token, ok, err := b.Acquire(ctx, 3, "proc-a", time.Minute)
	if err != nil || !ok || token < 1 {
		t.Fatalf("acquire: %d %v %v", token, ok, err)
	}
	for _, id := range []string{"x1", "x2"} {
		if p, err := b.Take(ctx, 3, 2, "s-1", id, token); err != nil || string(p) != "p-"+id {
			t.Fatalf("take %s: %q %v", id, p, err)
		}
	}
	if _, err := b.Take(ctx, 3, 2, "s-1", "x1", token); !errors.Is(err, store.ErrTaken) {
		t.Errorf("a second take: %v; want ErrTaken", err)
	}
	b.Take(ctx, 3, 2, "s-2", "y1", token)
	if band, ts, _ := b.ScanBand(ctx, 3); band != 5 || fmt.Sprint(ts) != "[{bulk 2}]" {
		t.Errorf("band 2 drained: scan says band %d %v; want band 5", band, ts)
	}
}

// testBacklogFencing: a process whose lease lapsed and was taken over
// can neither take work nor renew, even before it notices; the new holder's
// token is larger.
func testBacklogFencing(t *testing.T, b *store.RedisBacklog) {
	ctx := context.Background()
	b.Add(ctx, 0, store.BacklogItem{ID: "i1", Band: 1, Key: "k"})
	b.Add(ctx, 0, store.BacklogItem{ID: "i2", Band: 1, Key: "k"})
	old, ok, err := b.Acquire(ctx, 0, "proc-a", 100*time.Millisecond)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, _ := b.Acquire(ctx, 0, "proc-b", time.Minute); ok {
		t.Fatal("a second holder got a held lease")
	}
	if again, ok, _ := b.Acquire(ctx, 0, "proc-a", 100*time.Millisecond); !ok || again != old {
		t.Errorf("the holder acquiring again got %d %v; want its token %d", again, ok, old)
	}
	var tok int64
	deadline := time.Now().Add(10 * time.Second)
	for { // proc-a stops renewing; proc-b takes the shard once the lease lapses
		var ok bool
		if tok, ok, err = b.Acquire(ctx, 0, "proc-b", time.Minute); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lapsed lease was never free")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if tok <= old {
		t.Errorf("the new token %d is not larger than the old %d", tok, old)
	}
	if _, err := b.Take(ctx, 0, 1, "k", "i1", old); !errors.Is(err, store.ErrFenced) {
		t.Errorf("a take with the stale token: %v; want ErrFenced", err)
	}
	if err := b.Renew(ctx, 0, "proc-a", old, time.Minute); !errors.Is(err, store.ErrFenced) {
		t.Errorf("renewing a lost lease: %v; want ErrFenced", err)
	}
	if _, err := b.Take(ctx, 0, 1, "k", "i1", tok); err != nil {
		t.Errorf("the new holder's take: %v", err)
	}
	if err := b.Renew(ctx, 0, "proc-b", tok, time.Minute); err != nil {
		t.Errorf("the new holder's renew: %v", err)
	}
	b.Release(ctx, 0, "proc-b", tok)
	if _, ok, _ := b.Acquire(ctx, 0, "proc-c", time.Minute); !ok {
		t.Error("a released lease was not free")
	}
}

// testBacklogTakeRace: many takers of the same items, each item
// taken exactly once.
func testBacklogTakeRace(t *testing.T, b *store.RedisBacklog) {
	ctx := context.Background()
	for i := range 50 {
		b.Add(ctx, 1, store.BacklogItem{ID: fmt.Sprint(i), Band: 0, Key: "k"})
	}
	tok, _, _ := b.Acquire(ctx, 1, "p", time.Minute)
	var mu sync.Mutex
	taken := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if _, err := b.Take(ctx, 1, 0, "k", fmt.Sprint(i), tok); err == nil {
					mu.Lock()
					taken[fmt.Sprint(i)]++
					mu.Unlock()
				} else if !errors.Is(err, store.ErrTaken) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for i := range 50 {
		if taken[fmt.Sprint(i)] != 1 {
			t.Errorf("item %d taken %d times", i, taken[fmt.Sprint(i)])
		}
	}
}

// testPipelineOverRedis: one shard's cycles over the Redis backlog serve
// band 0 before a band-5 flood and the flood's keys in turn.
func testPipelineOverRedis(t *testing.T, b *store.RedisBacklog) {
	ctx := context.Background()
	for i := range 30 {
		b.Add(ctx, 0, store.BacklogItem{ID: fmt.Sprint("a", i), Band: 5, Key: "a"})
		b.Add(ctx, 0, store.BacklogItem{ID: fmt.Sprint("b", i), Band: 5, Key: "b"})
	}
	cache := candidates.New()
	p, err := pipeline.New(0, b, planner.New(planner.NewBoard(), func() int { return 4 }), cache)
	if err != nil {
		t.Fatal(err)
	}
	p.SetInterval(0)
	p.SetMinGap(0)
	tok, _, _ := b.Acquire(ctx, 0, "me", time.Minute)
	run := func() (out []string) {
		res := p.Cycle(ctx)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		for c, ok := cache.Pop(); ok; c, ok = cache.Pop() {
			if _, err := b.Take(ctx, c.Shard, c.Band, c.Key, c.ID, tok); err != nil {
				t.Fatal(err)
			}
			out = append(out, c.ID)
		}
		return out
	}
	if got := fmt.Sprint(run()); got != "[a0 b0 a1 b1]" {
		t.Errorf("first cycle served %s; want the keys in turn, oldest first", got)
	}
	b.Add(ctx, 0, store.BacklogItem{ID: "urgent", Band: 0, Key: "z"})
	if got := fmt.Sprint(run()); got != "[urgent]" {
		t.Errorf("after a band-0 item: %s; want it alone, before the flood", got)
	}
	if got := fmt.Sprint(run()); got != "[b2 a2 b3 a3]" && got != "[a2 b2 a3 b3]" {
		t.Errorf("then: %s", got)
	}
}

// testBacklogInFlight: an item taken and not finished when its holder's
// lease lapsed goes back to the head of its key's list under the next
// holder; one finished does not; the old holder's late Done is refused.
func testBacklogInFlight(t *testing.T, b *store.RedisBacklog) {
	ctx := context.Background()
	for _, id := range []string{"i1", "i2", "i3"} {
		b.Add(ctx, 2, store.BacklogItem{ID: id, Band: 4, Key: "k", Payload: []byte("p-" + id)})
	}
	a, _, _ := b.Acquire(ctx, 2, "a", 100*time.Millisecond)
	b.Take(ctx, 2, 4, "k", "i1", a)
	b.Take(ctx, 2, 4, "k", "i2", a)
	if err := b.Done(ctx, 2, "i1", a); err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.Add(ctx, 2, store.BacklogItem{ID: "i1", Band: 4, Key: "k"}); ok {
		t.Error("an item done was queued again by a late admission")
	}
	if ok, _ := b.Add(ctx, 2, store.BacklogItem{ID: "i2", Band: 4, Key: "k"}); ok {
		t.Error("an item in flight was queued again by a retried Add")
	}
	var tok int64
	for ok := false; !ok; { // "a" dies; "b" takes the shard when the lease lapses
		var err error
		if tok, ok, err = b.Acquire(ctx, 2, "b", time.Minute); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := b.Requeue(ctx, 2, a); !errors.Is(err, store.ErrFenced) {
		t.Errorf("requeue under the stale token: %v", err)
	}
	if n, err := b.Requeue(ctx, 2, tok); err != nil || n != 1 {
		t.Fatalf("requeue: %d %v; want the one item in flight", n, err)
	}
	if got, _ := b.FetchSteps(ctx, 2, 4, []string{"k"}, 5); fmt.Sprint(got) != "map[k:[i2 i3]]" {
		t.Errorf("after requeue: %v; want i2 back at the head", got)
	}
	if err := b.Done(ctx, 2, "i2", a); !errors.Is(err, store.ErrFenced) {
		t.Errorf("the old holder's late Done: %v; want ErrFenced", err)
	}
	if p, err := b.Take(ctx, 2, 4, "k", "i2", tok); err != nil || string(p) != "p-i2" {
		t.Errorf("the new holder takes it: %q %v", p, err)
	}
	if band, ts, _ := b.ScanBand(ctx, 2); band != 4 || fmt.Sprint(ts) != "[{k 1}]" {
		t.Errorf("tallies after requeue and take: %d %v", band, ts)
	}
}

// testBacklogRecordDone: a run's first record and its item's completion in
// one script — both or, under a stale token, neither; a hash outside the
// shard's slot is refused before Redis sees it.
func testBacklogRecordDone(t *testing.T, b *store.RedisBacklog) {
	ctx := context.Background()
	b.Add(ctx, 1, store.BacklogItem{ID: "r1", Band: 2, Key: "k", Payload: []byte("p")})
	b.Add(ctx, 1, store.BacklogItem{ID: "r2", Band: 2, Key: "k", Payload: []byte("p")})
	tok, _, _ := b.Acquire(ctx, 1, "a", time.Minute)
	b.Take(ctx, 1, 2, "k", "r1", tok)
	b.Take(ctx, 1, 2, "k", "r2", tok)
	if err := b.RecordDone(ctx, 1, "r1", tok, "ruled:{2}:pending", "run", []byte("rec")); err == nil {
		t.Error("a hash of another shard's slot was accepted")
	}
	if err := b.RecordDone(ctx, 1, "r1", tok+1, "ruled:{1}:pending", "run2", []byte("rec")); !errors.Is(err, store.ErrFenced) {
		t.Errorf("under a stale token: %v; want ErrFenced", err)
	}
	if err := b.RecordDone(ctx, 1, "r1", tok, "ruled:{1}:pending", "run1", []byte("rec")); err != nil {
		t.Fatal(err)
	}
	// A crash now: the next holder requeues only r2, and the record is there.
	b.Release(ctx, 1, "a", tok)
	tok2, ok, err := b.Acquire(ctx, 1, "b", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if n, err := b.Requeue(ctx, 1, tok2); err != nil || n != 1 {
		t.Errorf("requeued %d, %v; want only the item not recorded", n, err)
	}
	if ok, _ := b.Add(ctx, 1, store.BacklogItem{ID: "r1", Band: 2, Key: "k"}); ok {
		t.Error("a recorded item was queued again by a late admission")
	}
	if v, err := store.BacklogClient(b).HGet(ctx, "ruled:{1}:pending", "run1").Result(); err != nil || v != "rec" {
		t.Errorf("the record: %q, %v", v, err)
	}
	if _, err := store.BacklogClient(b).HGet(ctx, "ruled:{1}:pending", "run2").Result(); err == nil {
		t.Error("a fenced RecordDone wrote its record")
	}
}
