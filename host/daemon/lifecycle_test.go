package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/engine"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/task"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// withZoo adds the misbehaving Go plugin (a condition that panics, so traps)
// to a plugins directory as gozoo.wasm.
func withZoo(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(plugintest.Go(t, "host/wasm/testdata/zoo/go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gozoo.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

type lifeEnv struct {
	*testDaemon
	clk  *sched.Virtual
	dir  string
	http *http.Client
}

func newLifeEnv(t *testing.T, rulesYAML string) *lifeEnv {
	t.Helper()
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), rulesYAML)
	clk := sched.NewVirtual(t0)
	td := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: withZoo(t, pluginsDir(t)),
		DataDir: filepath.Join(dir, "data"), Clock: clk})
	c := socketClient(filepath.Join(dir, "data"))
	return &lifeEnv{testDaemon: td, clk: clk, dir: dir, http: c}
}

func (e *lifeEnv) rule(t testing.TB, id string) status.RuleStatus {
	t.Helper()
	for _, r := range e.Rules() {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no rule %s", id)
	return status.RuleStatus{}
}

func (e *lifeEnv) waitState(t testing.TB, id string, want task.StateCode) {
	t.Helper()
	eventually(t, id+" "+string(want), func() bool { return e.rule(t, id).State == string(want) })
}

// post sends a command over the API socket and returns the status code and
// the body.
func (e *lifeEnv) post(t testing.TB, path, body string) (int, string) {
	t.Helper()
	resp, err := e.http.Post("http://ruled"+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

const budgetRules = `
- id: flaky
  on: a
  mode: parallel
  when: {do: gozoo.panic}
  steps:
    - do: publish.publish
      with: {topic: flaky.out}
- id: steady
  on: b
  mode: parallel
  steps:
    - do: publish.publish
      with: {topic: steady.out}
`

// TestErrorBudgetOnAVirtualClock: a rule whose condition traps goes
// runnable → fault → sleeping at each error, wakes ten minutes later, and
// at its eighth error within four hours fails; the other rule fires
// throughout, and the flaky rule's triggers while it sleeps or after it
// failed run nothing and count no error.
func TestErrorBudgetOnAVirtualClock(t *testing.T) {
	e := newLifeEnv(t, budgetRules)
	steadyFired := 0
	steady := func() {
		t.Helper()
		e.send(t, `{"topic":"b"}`)
		steadyFired++
		eventually(t, "steady to fire", func() bool { return len(e.topics("steady.out")) == steadyFired })
	}
	for i := 1; i <= 8; i++ {
		e.send(t, `{"topic":"a"}`)
		if i < 8 {
			e.waitState(t, "flaky", task.Sleeping)
			r := e.rule(t, "flaky")
			if r.Until == nil || !r.Until.Equal(e.clk.Now().Add(task.DefaultSleep)) {
				t.Fatalf("error %d: asleep until %v; want now+%v", i, r.Until, task.DefaultSleep)
			}
			steady()
			e.send(t, `{"topic":"a"}`) // ignored while asleep
			eventually(t, "the trigger suppressed", func() bool { return e.rule(t, "flaky").Stats.Refused == uint64(i) })
			e.clk.Advance(task.DefaultSleep)
			e.waitState(t, "flaky", task.Runnable)
			steady()
		}
	}
	e.waitState(t, "flaky", task.Failed)
	steady()
	e.send(t, `{"topic":"a"}`)
	eventually(t, "the failed rule's trigger suppressed", func() bool { return e.rule(t, "flaky").Stats.Refused == 8 })
	r := e.rule(t, "flaky")
	if r.Stats.Errors != 8 || r.Stats.Started != 0 || len(e.topics("flaky.out")) != 0 {
		t.Errorf("flaky: stats %+v, %d outputs; want 8 errors and no run", r.Stats, len(e.topics("flaky.out")))
	}
	if len(r.Errors) != 8 || !strings.Contains(r.Errors[0].Err, "panic") && !strings.Contains(r.Errors[0].Err, "trap") {
		t.Errorf("recent errors %+v; want the 8 traps", r.Errors)
	}
	var hops []string
	for _, h := range r.History {
		hops = append(hops, h.String())
	}
	want := strings.Repeat("runnable---error--->fault fault---sleep--->sleeping sleeping---run--->runnable ", 7) +
		"runnable---error--->fault fault---error--->failed"
	// History keeps the last 20 transitions.
	wantHops := strings.Fields(want)
	wantHops = wantHops[len(wantHops)-20:]
	if strings.Join(hops, " ") != strings.Join(wantHops, " ") {
		t.Errorf("history\n%s\nwant\n%s", strings.Join(hops, " "), strings.Join(wantHops, " "))
	}
	if s := e.rule(t, "steady"); s.State != "runnable" || s.Stats.Errors != 0 || s.Stats.Completed != uint64(steadyFired) {
		t.Errorf("steady %+v; want runnable, every trigger completed", s)
	}
	// An operator who fixed the plugin resets the rule.
	if code, body := e.post(t, "/v1/rules/flaky/reset", ""); code != 200 {
		t.Fatalf("reset: %d %s", code, body)
	}
	if r := e.rule(t, "flaky"); r.State != "runnable" || r.Counted != 0 {
		t.Errorf("after reset %+v", r)
	}
}

// TestErrorBudgetPerRule: on-error sets a rule's own thresholds.
func TestErrorBudgetPerRule(t *testing.T) {
	e := newLifeEnv(t, `
- id: flaky
  on: a
  when: {do: gozoo.panic}
  on-error: {max: 2, within: 1h, sleep: 1m}
  steps:
    - do: publish.publish
      with: {topic: flaky.out}
`)
	e.send(t, `{"topic":"a"}`)
	e.waitState(t, "flaky", task.Sleeping)
	if r := e.rule(t, "flaky"); !r.Until.Equal(t0.Add(time.Minute)) {
		t.Errorf("asleep until %v; want a minute", r.Until)
	}
	e.clk.Advance(time.Minute)
	e.waitState(t, "flaky", task.Runnable)
	e.send(t, `{"topic":"a"}`)
	e.waitState(t, "flaky", task.Failed)
}

// heldRules drops its triggers while paused (on-pause: drop; a durable
// rule holds them by default): what this test watches is its steps.
const heldRules = `
- id: reminder
  on: r
  key: vehicle
  mode: parallel
  on-pause: drop
  steps:
    - name: first
      do: publish.publish
      with: {topic: "first.{{vehicle}}"}
    - name: later
      after: 10m
      durable: true
      do: publish.publish
      with: {topic: "later.{{vehicle}}"}
`

// TestHeldSteps: what pause, sleep and kill do to a rule's waiting steps.
func TestHeldSteps(t *testing.T) {
	tests := []struct {
		name    string
		command string // sent once the first step ran
		body    string
		wait    time.Duration // the clock moves this far after the step came due
		then    string        // the command that follows, "" for none
		later   int           // later.s1 events seen at the end
		dropped string        // the drop reason counted, if any
	}{
		{"paused: held, runs on resume", "pause", "", 5 * time.Minute, "resume", 1, ""},
		{"paused past the replay window: dropped on resume", "pause", "", 2 * time.Hour, "resume", 0, seq.DropHeldTooLong},
		{"asleep: held, runs when it wakes", "sleep", `{"for":"15m"}`, 5 * time.Minute, "", 1, ""},
		{"killed: the waiting step is dropped at once", "kill", "", 0, "", 0, engine.DropRuleKilled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newLifeEnv(t, heldRules)
			e.send(t, `{"topic":"r","vehicle":"s1"}`)
			eventually(t, "the first step", func() bool { return len(e.topics("first.s1")) == 1 })
			eventually(t, "the record", func() bool { recs, _ := e.Pending(); return len(recs) == 1 })
			waitTimer(t, e.clk, 10*time.Minute)
			if code, body := e.post(t, "/v1/rules/reminder/"+tc.command, tc.body); code != 200 {
				t.Fatalf("%s: %d %s", tc.command, code, body)
			}
			e.clk.Advance(10 * time.Minute)
			if tc.command != "kill" {
				eventually(t, "the step held", func() bool { return e.rule(t, "reminder").Held == 1 })
				// Triggers while paused or asleep start nothing.
				e.send(t, `{"topic":"r","vehicle":"s2"}`)
				eventually(t, "the trigger suppressed", func() bool { return e.rule(t, "reminder").Stats.Refused == 1 })
			}
			e.clk.Advance(tc.wait)
			if tc.then != "" {
				if code, body := e.post(t, "/v1/rules/reminder/"+tc.then, ""); code != 200 {
					t.Fatalf("%s: %d %s", tc.then, code, body)
				}
			}
			eventually(t, "nothing waiting", func() bool {
				recs, _ := e.Pending()
				return len(recs) == 0 && e.Status().Active == 0
			})
			if got := len(e.topics("later.s1")); got != tc.later {
				t.Errorf("later.s1 seen %d times; want %d", got, tc.later)
			}
			if tc.dropped != "" && e.Status().Dropped[tc.dropped] != 1 {
				t.Errorf("dropped %v; want one %q", e.Status().Dropped, tc.dropped)
			}
			if len(e.topics("first.s2")) != 0 {
				t.Error("a trigger while paused/asleep/killed started a run")
			}
		})
	}
}

// TestOnce: a once rule completes after its first successful run.
func TestOnce(t *testing.T) {
	e := newLifeEnv(t, `
- id: welcome
  on: w
  once: true
  steps:
    - do: publish.publish
      with: {topic: welcome.out}
`)
	e.send(t, `{"topic":"w"}`)
	e.waitState(t, "welcome", task.Completed)
	e.send(t, `{"topic":"w"}`)
	eventually(t, "the second trigger suppressed", func() bool { return e.rule(t, "welcome").Stats.Refused == 1 })
	if n := len(e.topics("welcome.out")); n != 1 {
		t.Errorf("welcome ran %d times", n)
	}
}

// TestBadCommands: each is refused with a clear error and changes nothing.
func TestBadCommands(t *testing.T) {
	e := newLifeEnv(t, budgetRules)
	if code, body := e.post(t, "/v1/rules/steady/kill", ""); code != 200 {
		t.Fatalf("kill: %d %s", code, body)
	}
	tests := []struct {
		path, body string
		code       int
		msg        string
	}{
		{"/v1/rules/nope/pause", "", 404, `no such rule "nope"`},
		{"/v1/rules/steady/pause", "", 409, "rule steady: pause: task: pause is not allowed while killed"},
		{"/v1/rules/steady/resume", "", 409, "run is not allowed while killed"},
		{"/v1/rules/flaky/sleep", "", 400, "rule flaky: sleep: sleeping state missing deadline"},
		{"/v1/rules/flaky/sleep", `{"for":"soon"}`, 400, `sleep for "soon": want a positive duration`},
		{"/v1/rules/flaky/sleep", `{"until":"tomorrow"}`, 400, "bad command: body:"},
		{"/v1/rules/flaky/sleep", `{"until":"2026-12-01T00:00:00Z","for":"1h"}`, 400, "not both"},
		{"/v1/rules/flaky/reset", "", 409, "reset is not allowed while runnable"},
		{"/v1/rules/flaky/explode", "", 400, `bad command "explode": want one of pause, resume, sleep, kill, reset`},
		{"/v1/rules/flaky/pause", `{"force":true}`, 400, `unknown field "force"`},
	}
	before := fmt.Sprint(e.Rules())
	for _, tc := range tests {
		code, body := e.post(t, tc.path, tc.body)
		if code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("POST %s %s: %d %q; want %d with %q", tc.path, tc.body, code, body, tc.code, tc.msg)
		}
	}
	// A command as an event: refused at ingest, as every reserved topic is.
	code, body := e.post(t, "/v1/events", `{"topic":"ruled.cmd.flaky","command":"kill"}`)
	if code < 400 || !strings.Contains(body, "reserved") {
		t.Errorf("ruled.cmd event at ingest: %d %q; want it refused as reserved", code, body)
	}
	if after := fmt.Sprint(e.Rules()); after != before {
		t.Errorf("a refused command changed something:\n%s\n%s", before, after)
	}
	// The Go API says the same, with errors to match on.
	var ill *task.IllegalError
	if _, err := e.Command("steady", status.Command{Command: "pause"}); !errors.As(err, &ill) {
		t.Errorf("Command: %v; want an IllegalError", err)
	}
	if _, err := e.Command("nope", status.Command{Command: "pause"}); !errors.Is(err, status.ErrUnknownRule) {
		t.Errorf("Command: %v; want ErrUnknownRule", err)
	}
	var rs []status.RuleStatus
	resp, err := e.http.Get("http://ruled/v1/rules")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&rs); err != nil || len(rs) != 2 || rs[1].State != "killed" {
		t.Errorf("GET /v1/rules: %+v, %v", rs, err)
	}
}
