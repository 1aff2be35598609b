package daemon

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/ingest"
	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/internal/redistest"
)

const fleetWindowRules = `
windows:
  - {name: temps, on: room, key: room, field: t, last: 10m}
  - {name: recent, on: room, key: room, field: t, last: 3 events}
  - {name: opens, on: door, key: door, every: 3s}
rules:
  - id: report
    on: report
    key: room
    states: {t: {window: temps}, r: {window: recent}}
    when: states.t.count == 40 && states.t.sum == 820 && states.r.count == 3
    steps:
      - name: report
        do: log.log
        with: {message: "avg {{states.t.avg}}"}
  - id: nightly
    on: {window: opens, closed: true}
    steps:
      - name: close
        do: log.log
        with: {message: "{{key}} {{count}}"}
`

// TestFleetWindows: two members count the events each accepts into one
// series a window and key in Redis — a room's 40 reports sent through
// both at once, racing on the same series, are counted each once, and
// both members read the same value, in a rule's condition and through
// the API. A tumbling window's key closes once when its period ends,
// with the count of both members' events, whichever member's poll
// appends it; then once more with none, and no more.
func TestFleetWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("two daemons over a real redis-server")
	}
	srv := redistest.Start(t)
	plugins := pluginsDir(t)
	var mu sync.Mutex
	calls := map[string]int{}
	start := func() *testDaemon {
		dir := t.TempDir()
		writeRules(t, filepath.Join(dir, "rules"), fleetWindowRules)
		cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: plugins,
			DataDir: filepath.Join(dir, "data"), RedisURL: srv.URL(), Shards: 4, Workers: 2,
			ObserveAction: func(c observe.ActionCall) {
				var ev struct {
					Room, Key string
					Count     *int
				}
				json.Unmarshal(c.Event, &ev)
				k := c.Step + " " + ev.Room + ev.Key
				if ev.Count != nil {
					k += fmt.Sprintf(" %d", *ev.Count)
				}
				mu.Lock()
				calls[k]++
				mu.Unlock()
			}}
		return startDaemon(t, cfg)
	}
	a, b := start(), start()
	eventually(t, "the shards are shared", func() bool {
		return len(a.Status().Fleet.Held) == 2 && len(b.Status().Fleet.Held) == 2
	})
	send := func(d *testDaemon, js string) {
		t.Helper()
		e, err := d.Decoder().Decode([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.in.Take(e, ingest.FromClient); err != nil {
			t.Error(err)
		}
	}
	// Wait for a fresh period of the door window: all its events in one.
	for time.Now().UnixMilli()%3000 > 500 {
		time.Sleep(50 * time.Millisecond)
	}
	var wg sync.WaitGroup
	for i, d := range []*testDaemon{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; n <= 20; n++ {
				send(d, fmt.Sprintf(`{"topic":"room","room":"r1","t":%d}`, 2*n-i)) // a: 1,3,…,39; b: 2,4,…,40
			}
		}()
	}
	for i, d := range []*testDaemon{a, b, a, b, a} {
		send(d, `{"topic":"door","door":"d1"}`)
		if i < 2 {
			send(d, `{"topic":"door","door":"d2"}`)
		}
	}
	wg.Wait()
	for _, d := range []*testDaemon{a, b} {
		v, ok := d.Window("temps", "r1")
		var got struct{ Count, Sum, Min, Max float64 }
		if err := json.Unmarshal(v, &got); !ok || err != nil || got.Count != 40 || got.Sum != 820 || got.Min != 1 || got.Max != 40 {
			t.Fatalf("temps r1 read by a member: %s %v", v, ok)
		}
	}
	counted := a.Status().Windows[2].Counted + b.Status().Windows[2].Counted // temps
	if st := a.Status().Windows; len(st) != 3 || st[2].Name != "temps" || counted != 40 || st[2].Keys != 1 {
		t.Fatalf("status: %+v (counted by both: %d)", st, counted)
	}
	send(b, `{"topic":"report","room":"r1"}`)
	eventually(t, "the report's condition read the fleet's window", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return calls["report r1"] == 1
	})
	eventually(t, "each door's period closed with both members' events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return calls["close d1 5"] == 1 && calls["close d2 2"] == 1
	})
	eventually(t, "each door's next period closed with none", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return calls["close d1 0"] == 1 && calls["close d2 0"] == 1
	})
	time.Sleep(3500 * time.Millisecond) // a period more: no close of a key forgotten
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"report r1": 1, "close d1 5": 1, "close d2 2": 1, "close d1 0": 1, "close d2 0": 1}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("steps run: %v\nwant %v", calls, want)
	}
}
