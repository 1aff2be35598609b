package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// Tap sees every dispatched event, on either bus, and tells a rule's
// output (by rule/step) from an event from outside; the watch stream
// serves the same as NDJSON; ObserveAction sees each action call.
func TestTapAndObserve(t *testing.T) {
	for _, mode := range []string{"bbolt", "redis"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			writeRules(t, filepath.Join(dir, "rules"), `
- id: echo
  on: t.in
  mode: parallel
  steps:
    - name: say
      do: publish.publish
      with: {topic: t.out, payload: {n: "{{n}}"}}
`)
			var mu sync.Mutex
			var calls []observe.ActionCall
			cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"),
				ObserveAction: func(c observe.ActionCall) { mu.Lock(); calls = append(calls, c); mu.Unlock() }}
			if mode == "redis" {
				cfg.RedisURL = redistest.Start(t).URL()
			}
			td := startDaemon(t, cfg)

			c := socketClient(filepath.Join(dir, "data"))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://ruled/v1/events/watch", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()

			var tapped []observe.Seen
			stop := td.Tap(func(s observe.Seen) { mu.Lock(); tapped = append(tapped, s); mu.Unlock() })
			td.send(t, `{"topic":"t.in","n":7}`)
			lines := bufio.NewScanner(resp.Body)
			var streamed []observe.Seen
			for len(streamed) < 2 && lines.Scan() {
				var s observe.Seen
				if err := json.Unmarshal(lines.Bytes(), &s); err != nil {
					t.Fatalf("line %s: %v", lines.Text(), err)
				}
				streamed = append(streamed, s)
			}
			eventually(t, "both events tapped", func() bool { mu.Lock(); defer mu.Unlock(); return len(tapped) == 2 })
			stop()
			td.send(t, `{"topic":"t.in","n":8}`)
			eventually(t, "the second action call", func() bool { mu.Lock(); defer mu.Unlock(); return len(calls) == 2 })

			mu.Lock()
			defer mu.Unlock()
			for name, got := range map[string][]observe.Seen{"tapped": tapped, "streamed": streamed} {
				if len(got) != 2 {
					t.Fatalf("%s %d events: %+v", name, len(got), got)
				}
				if got[0].By != "" || !strings.Contains(string(got[0].Event), `"n":7`) || got[0].At.IsZero() {
					t.Errorf("%s input %+v", name, got[0])
				}
				if got[1].By != "echo/say" || !strings.Contains(string(got[1].Event), `"topic":"t.out"`) {
					t.Errorf("%s output %+v", name, got[1])
				}
			}
			if len(calls) != 2 {
				t.Fatalf("%d action calls", len(calls))
			}
			a := calls[0]
			if a.Rule != "echo" || a.Step != "say" || a.Do != "publish.publish" || a.Key == "" || a.Err != nil ||
				string(a.Config) != `{"payload":{"n":"{{n}}"},"topic":"t.out"}` || string(a.Result) != `{"topic":"t.out"}` ||
				!strings.Contains(string(a.Event), `"n":7`) || a.Key == calls[1].Key {
				t.Errorf("action call %+v", a)
			}
		})
	}
}
