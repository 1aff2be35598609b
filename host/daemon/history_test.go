package daemon

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/history"
)

// TestHistory: the console's charts count a rule's runs a step at a time
// and a plugin's call latency, answer GET /v1/history, and come back
// after a restart from the store.
func TestHistory(t *testing.T) {
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), `
- id: ping
  on: ping
  mode: parallel
  steps: [{do: publish.publish, with: {topic: pong}}]
`)
	cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"),
		HistoryStep: 200 * time.Millisecond}
	td := startDaemon(t, cfg)
	for range 7 {
		td.send(t, `{"topic":"ping"}`)
	}
	started := func(s history.Snapshot) (n float64) {
		if r := s.Hour.Rules["ping"]; r != nil {
			for _, p := range r.Started {
				if p != nil {
					n += *p
				}
			}
		}
		return n
	}
	var s history.Snapshot
	eventually(t, "seven runs in the hour's points", func() bool { s = getHistory(t, cfg.DataDir); return started(s) == 7 })
	l := s.Hour.Plugins["publish"]
	var calls int
	for _, p := range l.P99 {
		if p != nil {
			calls++
			if *p <= 0 || *p > 1000 {
				t.Errorf("publish's p99 %v ms", *p)
			}
		}
	}
	if calls == 0 {
		t.Errorf("no latency point for publish: %+v", l)
	}
	if len(s.Hour.Queued) != history.HourPoints || s.Hour.Step != 200*time.Millisecond {
		t.Errorf("%d points %v apart", len(s.Hour.Queued), s.Hour.Step)
	}
	td.Stop()
	td2 := startDaemon(t, cfg)
	_ = td2
	if n := started(getHistory(t, cfg.DataDir)); n != 7 {
		t.Errorf("after a restart the hour shows %v runs; want the 7 kept", n)
	}
}

func getHistory(t *testing.T, data string) history.Snapshot {
	t.Helper()
	resp, err := socketClient(data).Get("http://ruled/v1/history")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/history: %s", resp.Status)
	}
	var s history.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}
