package daemon

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/status"
)

// TestScooterRules runs the example's own rules and plugins in-process.
func TestScooterRules(t *testing.T) {
	root, _ := filepath.Abs("../..")
	td := startDaemon(t, Config{RulesDir: filepath.Join(root, "examples/scooter/rules"),
		PluginsDir: pluginsDir(t), DataDir: t.TempDir()})
	if st := td.Status(); len(st.Rules) != 5 || len(st.Invalid) != 0 || len(st.Failed) != 0 {
		t.Fatalf("status: %d rules, invalid %v, failed %v", len(st.Rules), st.Invalid, st.Failed)
	}
	td.send(t, `{"topic":"scooter.telemetry","vehicle":"s-1","battery":50,"charging":false,"locked":false,"speed":10}`)
	td.send(t, `{"topic":"scooter.telemetry","vehicle":"s-1","battery":19,"charging":false,"locked":false,"speed":10}`)
	td.send(t, `{"topic":"scooter.telemetry","vehicle":"s-3","battery":80,"charging":false,"locked":true,"speed":6}`)
	td.send(t, `{"topic":"scooter.telemetry","vehicle":"s-4","battery":80,"charging":false,"locked":false,"speed":30}`)
	td.send(t, `{"topic":"scooter.telemetry","vehicle":"s-4","battery":80,"charging":false,"locked":false,"speed":31}`)
	eventually(t, "the alerts and the first alarm", func() bool {
		return len(td.topics("alerts.battery.s-1")) == 1 && len(td.topics("scooter.cmd.alarm")) == 1 &&
			len(td.topics("alerts.speed.s-4")) == 1
	})
	st := td.Status()
	byID := map[string]status.RuleStatus{}
	for _, r := range st.Rules {
		byID[r.ID] = r
	}
	if s := byID["speeding"].Stats; s.Started != 1 || s.Suppressed != 1 {
		t.Errorf("speeding (cooldown 1m) stats %+v; want 1 start, 1 suppressed", s)
	}
	if s := byID["low-battery"].Stats; s.Started != 1 || s.Active != 1 {
		t.Errorf("low-battery stats %+v; want 1 run waiting for its limit-speed step", s)
	}
	recs, err := td.Pending()
	if err != nil || len(recs) != 1 || recs[0].Rule != "low-battery" || recs[0].Step != "limit-speed" {
		t.Fatalf("pending %+v, %v; want the durable limit-speed step", recs, err)
	}
	// The charger cancels the wait (correlated by vehicle); unlocking stops the alarm.
	td.send(t, `{"topic":"scooter.charger.connected","vehicle":"s-1"}`)
	td.send(t, `{"topic":"scooter.unlocked","vehicle":"s-3"}`)
	eventually(t, "the cancels", func() bool {
		st := td.Status()
		return st.Active == 0
	})
	if recs, _ := td.Pending(); len(recs) != 0 {
		t.Errorf("pending after the cancel: %+v", recs)
	}
	if got := strings.Count(td.logs.String(), "scooter.cmd.alarm for s-3"); got != 1 {
		t.Errorf("the alarm was logged %d times; want once before the unlock", got)
	}
}

// TestIngestRejectsBadEvents: garbage at the HTTP door is refused with a
// reason and counted, through the unix socket API.
func TestIngestRejectsBadEvents(t *testing.T) {
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), `
- id: echo
  on: t.in
  mode: parallel
  steps:
    - do: publish.publish
      with: {topic: t.out}
`)
	td := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data")})
	c := socketClient(filepath.Join(dir, "data"))
	body := strings.Join([]string{
		`{"topic":"t.in","n":1}`,
		`not json`,
		`{"n":2}`,
		`[1,2]`,
		`{"topic":"ruled.cmd.echo"}`,
		`{"topic":"t.in","n":3}`,
	}, "\n")
	resp, err := c.Post("http://ruled/v1/events", "application/x-ndjson", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Accepted int
		Rejected []struct {
			Line   int
			Reason string
		}
	}
	json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if resp.StatusCode != 207 || res.Accepted != 2 || len(res.Rejected) != 4 {
		t.Fatalf("status %d, %+v", resp.StatusCode, res)
	}
	want := []string{"not json", "no topic", "not an object", "reserved topic"}
	for i, r := range res.Rejected {
		if r.Reason != want[i] {
			t.Errorf("line %d: reason %q; want %q", r.Line, r.Reason, want[i])
		}
	}
	eventually(t, "two echoes", func() bool { return len(td.topics("t.out")) == 2 })
	st := td.Status()
	if st.Events.Accepted != 2 || st.Events.TotalRejected() != 4 {
		t.Errorf("counters %+v", st.Events)
	}
}

// TestBootsWithValidRulesAndReportsTheRest: a bad rule file and a bad
// plugin do not stop the daemon; they show in Status.
func TestBootsWithValidRulesAndReportsTheRest(t *testing.T) {
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), `
- id: good
  on: t.in
  steps:
    - do: log.log
      with: {message: hi}
- id: bad-plugin
  on: t.in
  steps:
    - do: nope.log
- id: bad-config
  on: t.in
  when: "battery <"
  steps:
    - do: log.log
      with: {message: hi}
`)
	plugins := pluginsDir(t)
	os.WriteFile(filepath.Join(plugins, "broken.wasm"), []byte("\x00asm garbage"), 0o644)
	td := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: plugins, DataDir: filepath.Join(dir, "data")})
	st := td.Status()
	if len(st.Rules) != 1 || st.Rules[0].ID != "good" {
		t.Errorf("rules %+v; want only good", st.Rules)
	}
	var problems []string
	for _, p := range st.Invalid {
		problems = append(problems, p.At+" "+p.Error)
	}
	joined := strings.Join(problems, "\n")
	if !strings.Contains(joined, `no plugin "nope"`) || !strings.Contains(joined, "expression: unexpected token EOF") ||
		!strings.Contains(joined, "rules.yaml:") {
		t.Errorf("invalid rules:\n%s", joined)
	}
	if len(st.Failed) != 1 || !strings.Contains(st.Failed[0].File, "broken.wasm") {
		t.Errorf("failed plugins %+v", st.Failed)
	}
}

// TestIdleDaemonWritesNothing: an idle daemon on the embedded store does
// not touch its file — the charts' points included (host/history: an
// idle minute is not written).
func TestIdleDaemonWritesNothing(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	td := startDaemon(t, Config{RulesDir: filepath.Join(root, "examples/scooter/rules"),
		PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"),
		HistoryStep: 200 * time.Millisecond}) // the charts' points come while it watches: nothing to write
	db := filepath.Join(dir, "data", "ruled.db")
	before, _ := os.ReadFile(db)
	st1, _ := os.Stat(db)
	time.Sleep(1500 * time.Millisecond)
	after, _ := os.ReadFile(db)
	st2, _ := os.Stat(db)
	if !bytes.Equal(before, after) || !st1.ModTime().Equal(st2.ModTime()) {
		t.Errorf("the store changed while the daemon was idle (%d -> %d bytes, mtime %v -> %v)",
			len(before), len(after), st1.ModTime(), st2.ModTime())
	}
	_ = td
}

// A rules directory that is not there is a rule problem, not a crash: the
// start used to dereference a rule set it never made, and panicked.
func TestMissingRulesDirIsAProblem(t *testing.T) {
	data := t.TempDir()
	td := startDaemon(t, Config{RulesDir: filepath.Join(data, "missing"), PluginsDir: t.TempDir(), DataDir: data})
	st := td.Status()
	if len(st.Rules) != 0 || len(st.Invalid) != 1 || !strings.Contains(st.Invalid[0].Error, "no such file") {
		t.Errorf("rules %v, problems %+v: want none, and the directory's error", st.Rules, st.Invalid)
	}
}
