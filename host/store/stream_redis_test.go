package store_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// TestStreamAppendChange: an event appended with its entity's state
// carries the state before it, in the stream's order, whoever appended
// it; a new entity past the bound is appended without one (refused);
// a forgotten one starts again with none. On a server and on a Redis
// Cluster (the states' hash shares the stream's slot).
func TestStreamAppendChange(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "server", true: "cluster"}[cluster], func(t *testing.T) {
			if cluster && testing.Short() {
				t.Skip("starts a 3-master cluster")
			}
			url := ""
			if cluster {
				url = redistest.StartCluster(t, 3).URL()
			} else {
				url = redistest.Start(t).URL()
			}
			r, err := store.OpenRedis(url, store.RedisOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			flushAll(t, r)
			testAppendChange(t, r.Stream())
			flushAll(t, r)
			testTriggerOps(t, r.Stream())
			flushAll(t, r)
			testWindowOps(t, r)
		})
	}
}

// flushAll empties r's Redis, each master of a cluster.
func flushAll(t *testing.T, r *store.Redis) {
	t.Helper()
	var err error
	if cl, ok := r.Client().(*redis.ClusterClient); ok {
		err = cl.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
			return c.FlushAll(ctx).Err()
		})
	} else {
		err = r.Client().FlushAll(context.Background()).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func testAppendChange(t *testing.T, s *store.RedisStream) {
	ctx := context.Background()
	if err := s.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	put := func(id, entity, state string) {
		t.Helper()
		if _, err := s.AppendChange(ctx, id, "door", time.Unix(1, 0), 0, []byte(`{"topic":"door"}`), entity, []byte(state), 2,
			time.Hour, time.Unix(1, 0), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Two writers at once: each entry's prior is the state of the entry
	// before it of its entity, in the stream's order.
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				put(fmt.Sprintf("w%d-%d", w, i), "door.front", fmt.Sprintf(`{"n":"w%d-%d"}`, w, i))
			}
		}()
	}
	wg.Wait()
	put("x1", "door.back", `{"n":"x1"}`)
	put("x2", "window", `{"n":"x2"}`) // a third entity: past the bound of 2
	got, err := s.Read(ctx, "c", 200, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 102 {
		t.Fatalf("read %d entries; want 102", len(got))
	}
	last := ""
	for _, en := range got[:100] {
		if en.Entity != "door.front" || string(en.Prior) != last {
			t.Fatalf("entry %s: entity %q prior %q; want door.front after %q", en.EventID, en.Entity, en.Prior, last)
		}
		last = fmt.Sprintf(`{"n":"%s"}`, en.EventID)
	}
	if en := got[100]; en.Entity != "door.back" || en.Prior != nil || en.Refused {
		t.Errorf("a second entity's first entry: %+v", en)
	}
	if en := got[101]; !en.Refused || en.Prior != nil {
		t.Errorf("an entity past the bound: %+v; want refused", en)
	}
	if ok, err := s.ForgetState(ctx, "door.front"); !ok || err != nil {
		t.Fatalf("forget: %v %v", ok, err)
	}
	put("z", "door.front", `{"n":"z"}`)
	put("y", "window", `{"n":"y"}`)
	got, err = s.Read(ctx, "c", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Refused || got[0].Prior != nil || !got[1].Refused {
		t.Errorf("after a forget: %+v; want the door's report a first one, the window still past the bound", got)
	}
	// Two hours on, the full hash forgets the entities not seen for an
	// hour, and takes the window.
	if _, err := s.AppendChange(ctx, "w", "door", time.Unix(1, 0), 0, []byte(`{"topic":"door"}`), "window", []byte(`{"n":"w"}`), 2,
		time.Hour, time.Unix(1, 0).Add(2*time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	got, err = s.Read(ctx, "c", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Refused {
		t.Errorf("a new entity after the others went idle: %+v; want it kept", got)
	}
}

// testTriggerOps runs a door's reports through the append script's
// holds and thresholds with hysteresis, as a fleet's members pass them
// (TriggerOp): a hold begins on the change to its value, a repeat keeps
// it, a change away cancels it, and FireDue appends it once when due,
// or drops it past the window; a threshold with hysteresis fires on
// the crossing and again only after the dip.
func testTriggerOps(t *testing.T, s *store.RedisStream) {
	ctx := context.Background()
	if err := s.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	hold := func(open bool) store.TriggerOp { // changes: open, to: true, for: 10s
		return store.TriggerOp{Key: "door-left\x000", Def: "open→true 10s", Hold: true, For: 10 * time.Second,
			Value: fmt.Sprint(open), HasTo: true, In: open}
	}
	warm := func(temp float64) store.TriggerOp { // changes: t, above: 30, hysteresis: 1
		return store.TriggerOp{Key: "hot\x000", Def: "t>30 h1", Value: fmt.Sprint(temp), Threshold: true,
			In: temp > 30, Number: true, Rearmed: temp <= 29}
	}
	n := 0
	put := func(at time.Duration, op store.TriggerOp) {
		t.Helper()
		n++
		if _, err := s.AppendChange(ctx, fmt.Sprintf("e%d", n), "door", t0.Add(at), 0, []byte(`{"topic":"door"}`), "door", []byte(`{}`), 10,
			time.Hour, t0.Add(at), []store.TriggerOp{op}); err != nil {
			t.Fatal(err)
		}
	}
	due := func(at time.Duration) (fired, dropped []string) {
		t.Helper()
		f, d, err := s.FireDue(ctx, t0.Add(at), time.Minute, 100)
		if err != nil {
			t.Fatal(err)
		}
		return f, d
	}
	put(0, hold(true))             // begins, due at 10s
	put(3*time.Second, hold(true)) // a repeat keeps it
	if f, _ := due(9 * time.Second); len(f) != 0 {
		t.Fatalf("fired %v before its time", f)
	}
	put(9*time.Second, hold(false)) // closed in time: cancelled
	put(12*time.Second, hold(true)) // opened again: due at 22s
	if f, _ := due(21 * time.Second); len(f) != 0 {
		t.Fatalf("fired %v: a cancelled hold, or the new one early", f)
	}
	if f, d := due(22 * time.Second); len(f) != 1 || len(d) != 0 || f[0] != "door-left\x000\x00door" {
		t.Fatalf("at 22s fired %q dropped %q; want the second hold", f, d)
	}
	if f, _ := due(40 * time.Second); len(f) != 0 {
		t.Fatalf("fired %v again", f)
	}
	put(41*time.Second, hold(true)) // still open: no new hold until it closes
	if f, _ := due(60 * time.Second); len(f) != 0 {
		t.Fatalf("a repeat after the fire began a hold: %v", f)
	}
	put(61*time.Second, hold(false))
	put(62*time.Second, hold(true)) // due at 72s; nobody polls until 3 minutes
	if f, d := due(3 * time.Minute); len(f) != 0 || len(d) != 1 {
		t.Fatalf("past the window: fired %q dropped %q; want it dropped", f, d)
	}
	for _, tc := range []struct {
		temp  float64
		fires bool
	}{{25, false}, {31, true}, {32, false}, {29.5, false}, {31, false}, {29, false}, {30.5, true}} {
		put(2*time.Minute, warm(tc.temp))
	}
	// Closed just after its due time, before any poll: the hold ran at
	// its time, so it is appended before the report that closes it.
	put(4*time.Minute, hold(false))
	put(4*time.Minute+time.Second, hold(true)) // n 16: due at 4m11s
	put(4*time.Minute+11500*time.Millisecond, hold(false))
	// Forgotten with a hold running: the hold goes with it.
	put(5*time.Minute, hold(true)) // n 18
	if ok, err := s.ForgetState(ctx, "door"); !ok || err != nil {
		t.Fatalf("forget: %v %v", ok, err)
	}
	if f, d := due(6 * time.Minute); len(f)+len(d) != 0 {
		t.Errorf("a forgotten entity's hold: fired %q dropped %q", f, d)
	}
	got, err := s.Read(ctx, "c", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var holds, crossed []string
	for _, en := range got {
		if en.Hold != "" {
			holds = append(holds, en.EventID+" "+en.Def)
		}
		if len(en.Crossed) > 0 {
			crossed = append(crossed, en.EventID)
		}
	}
	order := map[string]int{} // entry → its place in the stream
	for i, en := range got {
		order[en.EventID+map[bool]string{true: " hold"}[en.Hold != ""]] = i
	}
	if order["e16 hold"] > order["e17"] {
		t.Errorf("e16's hold was appended after e17, the report that closed the door after its due time")
	}
	if fmt.Sprint(holds) != "[e4 open→true 10s e16 open→true 10s]" {
		t.Errorf("hold entries %v; want the ones begun by e4 and e16", holds)
	}
	if fmt.Sprint(crossed) != "[e9 e14]" {
		t.Errorf("crossed at %v; want e9 (31) and e14 (30.5, after the dip to 29)", crossed)
	}
}

// BenchmarkFleetAppend: what a fleet's accept costs an event on one
// Redis (one client, one at a time): a plain XADD, the append script
// with the entity's state (a change trigger or previous. watches the
// topic; 100 entities), and with a hold and a threshold with hysteresis
// on it too.
func BenchmarkFleetAppend(b *testing.B) {
	r, err := store.OpenRedis(redistest.Start(b).URL(), store.RedisOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	s := r.Stream()
	ctx := context.Background()
	if err := s.Ensure(ctx); err != nil {
		b.Fatal(err)
	}
	raw := []byte(`{"topic":"door","door":"d17","open":true,"battery":87}`)
	ops := []store.TriggerOp{
		{Key: "left-open\x000", Def: "d", Hold: true, For: time.Hour, Value: "true", HasTo: true, In: true},
		{Key: "low\x000", Def: "d", Threshold: true, Value: "87", Number: true},
	}
	for _, bc := range []struct {
		name  string
		ops   []store.TriggerOp
		plain bool
	}{{"xadd", nil, true}, {"state", nil, false}, {"state+hold+hysteresis", ops, false}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := range b.N {
				var err error
				if bc.plain {
					_, err = s.Append(ctx, "e", "door", time.Unix(1, 0), 0, raw)
				} else {
					_, err = s.AppendChange(ctx, "e", "door", time.Unix(1, 0), 0, raw, fmt.Sprintf("door/d%d", i%100), raw, 10_000,
						time.Hour, time.Unix(1, 0), bc.ops)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			r.Client().Del(ctx, store.IngestStream)
			s.Ensure(ctx)
		})
	}
}

// testWindowOps: a window op is written only at the version expected,
// else nothing is and the event is not appended; a full window forgets
// an idle sliding key for a new one; a tumbling key's close is appended
// once when due, with a close of the next period without events, and a
// period closed is not opened again.
func testWindowOps(t *testing.T, r *store.Redis) {
	ctx := context.Background()
	s := r.Stream()
	now := time.UnixMilli(1_000_000)
	op := func(key string, expect int64, val string) store.WindowOp {
		return store.WindowOp{Window: "w", Key: key, Expect: expect, Value: []byte(val), MaxKeys: 1, Score: now.UnixMilli() + 500}
	}
	entry := func(ops ...store.WindowOp) store.Entry {
		return store.Entry{EventID: "e", Topic: "t", At: now, Raw: []byte(`{"topic":"t"}`), Now: now, Windows: ops}
	}
	length := func() int64 {
		n, err := r.Client().XLen(ctx, store.IngestStream).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	id, res, err := s.AppendEntry(ctx, entry(op("a", 0, "h\nA")))
	if err != nil || id == "" || len(res.Results) != 1 || res.Results[0] != "1" {
		t.Fatalf("first write: %q %+v %v", id, res, err)
	}
	// A member that saw no value conflicts, and learns the one there.
	id, res, err = s.AppendEntry(ctx, entry(op("a", 0, "h\nB")))
	if err != nil || id != "" || res.Conflicts[0] != "1 h\nA" || length() != 1 {
		t.Fatalf("stale write: %q %+v %v, %d entries", id, res, err, length())
	}
	if _, res, _ = s.AppendEntry(ctx, entry(op("a", 1, "h\nB"))); len(res.Results) != 1 || res.Results[0] != "2" {
		t.Fatalf("write at version 1: %+v", res)
	}
	// The window holds its one key: a new one is refused while a's last
	// bucket holds, and takes its place once it falls out.
	if _, res, _ = s.AppendEntry(ctx, entry(op("b", 0, "h\nC"))); res.Results[0] != "F" {
		t.Fatalf("a new key past max-keys: %+v", res)
	}
	later := entry(op("b", 0, "h\nC"))
	later.Now = now.Add(time.Second)
	if _, res, _ = s.AppendEntry(ctx, later); res.Results[0] != "3" {
		t.Fatalf("a new key once a's buckets fell out: %+v", res)
	}
	if vals, _ := s.WindowValues(ctx, []string{"s\x00w\x00a", "s\x00w\x00b"}); vals[0] != "" || vals[1] != "3 h\nC" {
		t.Fatalf("after the sweep: %q", vals)
	}
	if n, _ := s.WindowCounts(ctx, []string{"w"}); n["w"] != 1 {
		t.Fatalf("keys: %v", n)
	}

	// Tumbling: a key's period from 1000 ns ends at now.
	top := store.WindowOp{Tumbling: true, Window: "d", Key: "k/1", Start: 1000, Value: []byte("h\nT"), MaxKeys: 10,
		Score: now.UnixMilli(), Close: []byte(`{"topic":"ruled.window","count":1}`)}
	if _, res, _ = s.AppendEntry(ctx, entry(top)); len(res.Results) != 1 || res.Results[0] == "F" || res.Results[0] == "L" {
		t.Fatalf("tumbling write: %+v", res)
	}
	before := length()
	p := store.WindowPeriod{Window: "d", Start: 2000, End: now.UnixMilli() + 60_000, ZeroHead: []byte(`{"topic":"ruled.window","key":`),
		ZeroTail: []byte(`,"count":0}`)}
	// A member that does not define the window (a deploy under way)
	// leaves its closes to one that does.
	if n, closed, err := s.CloseWindows(ctx, now, nil, 100); n != 0 || len(closed) != 0 || err != nil || length() != before {
		t.Fatalf("closes by a member without the window: %d %v %v", n, closed, err)
	}
	_, closed, err := s.CloseWindows(ctx, now, []store.WindowPeriod{p}, 100)
	if err != nil || len(closed) != 1 || closed[0] != "d" || length() != before+1 {
		t.Fatalf("closes: %v %v, %d entries (was %d)", closed, err, length(), before)
	}
	if _, again, _ := s.CloseWindows(ctx, now, []store.WindowPeriod{p}, 100); len(again) != 0 {
		t.Fatalf("closed twice: %v", again)
	}
	// The period closed: a member late to it opens it no more.
	if _, res, _ = s.AppendEntry(ctx, entry(top)); res.Results[0] != "L" {
		t.Fatalf("a write into a closed period: %+v", res)
	}
	// Another period of the window (its spec edited: a day from 0) is
	// not refused for the one closed.
	other := top
	other.Start, other.Key, other.Close = 0, "k/2", []byte(`{"topic":"ruled.window","count":2}`)
	if _, res, _ = s.AppendEntry(ctx, entry(other)); res.Results[0] == "L" || res.Results[0] == "F" {
		t.Fatalf("a write into another period: %+v", res)
	}
	s.CloseWindows(ctx, now, []store.WindowPeriod{p}, 100) // k/2's period, ended at now
	// The next period closes with no events, once, for each key.
	_, closed, _ = s.CloseWindows(ctx, now.Add(time.Minute), []store.WindowPeriod{p}, 100)
	if len(closed) != 2 {
		t.Fatalf("the period without events: %v", closed)
	}
	if _, again, _ := s.CloseWindows(ctx, now.Add(time.Hour), []store.WindowPeriod{p}, 100); len(again) != 0 {
		t.Fatalf("a key without events closed twice: %v", again)
	}
	msgs, err := r.Client().XRange(ctx, store.IngestStream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		if m.Values["wclose"] == "d" && !strings.Contains(m.Values["event"].(string), "2") {
			got = append(got, m.Values["event"].(string)+" "+fmt.Sprint(m.Values["time"]))
		}
	}
	want := []string{`{"topic":"ruled.window","count":1} 1000000000000`,
		`{"topic":"ruled.window","key":"k\/1","count":0} 1060000000000`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("close entries:\n got %q\nwant %q", got, want)
	}

	// With an entity: a conflict leaves its state as it was.
	en := entry(op("b", 1, "h\nX"))
	en.Entity, en.State, en.MaxEntities = "door", []byte(`{"open":true}`), 10
	if id, res, _ = s.AppendEntry(ctx, en); id != "" || res.Conflicts[0] != "3 h\nC" {
		t.Fatalf("entity, stale: %q %+v", id, res)
	}
	if st, _ := r.Client().HGet(ctx, "{ruled:in}:states", "door").Result(); st != "" {
		t.Fatalf("a conflicted append kept a state: %q", st)
	}
	en.Windows[0].Expect = 3
	if id, res, _ = s.AppendEntry(ctx, en); id == "" || res.Results[0] == "F" {
		t.Fatalf("entity: %q %+v", id, res)
	}
	if st, _ := r.Client().HGet(ctx, "{ruled:in}:states", "door").Result(); st != `{"open":true}` {
		t.Fatalf("state: %q", st)
	}
	// One append's new key sweeps the idle key its next op writes: the
	// count of keys still counts both.
	x := func(key string, expect int64) store.WindowOp {
		o := op(key, expect, "h\nX")
		o.Window = "x"
		return o
	}
	_, res, _ = s.AppendEntry(ctx, entry(x("a", 0)))
	va, _ := strconv.ParseInt(res.Results[0], 10, 64)
	both := entry(x("b", 0), x("a", va))
	both.Now = now.Add(time.Second)
	if _, res, _ = s.AppendEntry(ctx, both); len(res.Results) != 2 || res.Results[0] == "F" || res.Results[1] == "F" {
		t.Fatalf("sweep and write: %+v", res)
	}
	if n, _ := s.WindowCounts(ctx, []string{"x"}); n["x"] != 2 {
		t.Fatalf("keys of x after its sweep: %v; want 2", n)
	}
}
