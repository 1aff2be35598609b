package store_test

import (
	"context"
	"fmt"
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
			if cluster {
				cl := r.Client().(*redis.ClusterClient)
				if err := cl.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
					return c.FlushAll(ctx).Err()
				}); err != nil {
					t.Fatal(err)
				}
			}
			testAppendChange(t, r.Stream())
		})
	}
}

func testAppendChange(t *testing.T, s *store.RedisStream) {
	ctx := context.Background()
	if err := s.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	put := func(id, entity, state string) {
		t.Helper()
		if _, err := s.AppendChange(ctx, id, "door", time.Unix(1, 0), 0, []byte(`{"topic":"door"}`), entity, []byte(state), 2); err != nil {
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
}
