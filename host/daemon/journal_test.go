package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/wasm"
)

// TestJournalBusyAndGracefulRestart: with one worker kept busy and a queue
// of three, a burst is taken until the queue is full and then refused with
// 503 (resend from the line named), never taken and dropped. Stopping the
// daemon with triggers still queued keeps their events in the journal; the
// next start admits them, and every taken event's durable step is
// recorded once.
func TestJournalBusyAndGracefulRestart(t *testing.T) {
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), `
- id: slow
  on: job
  mode: parallel
  max: 1000
  steps:
    - name: busy
      do: gozoo.busy
      with: {ms: 300}
    - name: later
      after: 1h
      durable: true
      do: log.log
      with: {message: "later {{n}}"}
`)
	cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: withZoo(t, pluginsDir(t)),
		DataDir: filepath.Join(dir, "data"), Workers: 1, QueueCapacity: 3,
		Plugins: map[string]PluginConfig{"gozoo": {Limits: wasm.Limits{Timeout: time.Minute, Fuel: -1}}}}
	d := startDaemon(t, cfg)

	var lines []string
	for i := range 10 {
		lines = append(lines, fmt.Sprintf(`{"topic":"job","id":"e%d","n":%d}`, i, i))
	}
	resp, err := socketClient(cfg.DataDir).Post("http://ruled/v1/events", "application/x-ndjson", strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	var res bus.IngestResult
	json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || res.Accepted == 0 || res.UnprocessedFrom != res.Accepted+1 {
		t.Fatalf("a burst past the queue: %s %+v; want 503 after the events the queue took", resp.Status, res)
	}
	taken := res.Accepted
	st := d.Status()
	if st.Journal == nil || st.Journal.Busy != 1 || st.Journal.Written != uint64(taken) {
		t.Fatalf("journal %+v; want %d written and 1 refused busy", st.Journal, taken)
	}
	// Stop while the worker is in its first step and the rest wait: none
	// of them has its record yet.
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	d = startDaemon(t, cfg)
	st = d.Status()
	if st.Journal.Readmitted == 0 {
		t.Fatalf("nothing re-admitted after a stop with %d taken events queued: %+v", taken, st.Journal)
	}
	eventually(t, "every taken event's durable step is recorded", func() bool {
		recs, _ := d.Pending()
		return len(recs) == taken
	})
	recs, _ := d.Pending()
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.Event] {
			t.Errorf("event %s recorded twice", r.Event)
		}
		seen[r.Event] = true
	}
	eventually(t, "the journal empties", func() bool { return d.Status().Journal.Open == 0 })
}
