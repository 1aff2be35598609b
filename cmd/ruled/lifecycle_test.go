package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/redistest"
)

const lifecycleRules = `
- id: nap
  on: nap
  mode: parallel
  steps:
    - do: log.log
      with: {message: "NAP {{n}}"}
- id: frozen
  on: frozen
  mode: parallel
  steps:
    - do: log.log
      with: {message: "FROZEN {{n}}"}
- id: doomed
  on: doomed
  when: {do: gozoo.panic}
  on-error: {max: 1, within: 1h, sleep: 1m}
  steps:
    - do: log.log
      with: {message: "DOOMED {{n}}"}
- id: held
  on: held
  mode: parallel
  steps:
    - do: log.log
      with: {message: "FIRST {{n}}"}
    - name: later
      after: 1s
      durable: true
      do: log.log
      with: {message: "HELD {{n}}"}
- id: gone
  on: gone
  mode: parallel
  steps:
    - do: log.log
      with: {message: "FIRST {{n}}"}
    - name: later
      after: 1s
      durable: true
      do: log.log
      with: {message: "GONE {{n}}"}
`

// lifecycleFixture is fixture with the misbehaving Go plugin added as
// gozoo.wasm (its condition panic traps).
func lifecycleFixture(t *testing.T) (rulesDir, pluginsDir string) {
	rulesDir, pluginsDir = fixture(t, lifecycleRules)
	b, err := os.ReadFile(plugintest.Go(t, "host/wasm/testdata/zoo/go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pluginsDir, "gozoo.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return rulesDir, pluginsDir
}

// rules is the daemon's rules by id.
func (p *proc) rules() map[string]status.RuleStatus {
	p.t.Helper()
	var rs []status.RuleStatus
	if err := apiGet(context.Background(), p.data, "/v1/rules", &rs); err != nil {
		// A daemon that stopped answering: what it was doing.
		p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
		p.t.Fatalf("%v\n%s", err, p.out.String())
	}
	m := map[string]status.RuleStatus{}
	for _, r := range rs {
		m[r.ID] = r
	}
	return m
}

// waitRule waits until the rule's status satisfies ok.
func (p *proc) waitRule(id, what string, ok func(status.RuleStatus) bool) status.RuleStatus {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := p.rules()[id]
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("rule %s: %s: timed out at %+v\n%s", id, what, r, p.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rule runs `ruled rule ARGS --data <p's data>` and fails the test unless it
// exits 0.
func (p *proc) rule(args ...string) string {
	p.t.Helper()
	code, out, errs := runCLI(p.t, "", append(append([]string{"rule"}, args...), "--data", p.data)...)
	if code != 0 {
		p.t.Fatalf("ruled rule %s: exit %d: %s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// TestLifecycleSurvivesKill9: states set by commands and by the error budget
// outlive a SIGKILL; a sleeping rule stays asleep until its time (not
// earlier, not forever); paused and failed rules stay so; a step that came
// due while its rule was paused is held across the restart and runs on
// resume, and one of a rule killed after the restart is dropped with the
// reason.
func TestLifecycleSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		rules, plugins := lifecycleFixture(t)
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins}, storeArgs()...)
		a := startRuled(t, data, args...)
		a.post(`{"topic":"held","n":"h1"}`, `{"topic":"gone","n":"g1"}`)
		a.waitLog("FIRST", 2)
		a.waitPending(2)
		a.rule("pause", "held")
		a.rule("pause", "gone")
		a.rule("pause", "frozen")
		if out := a.rule("sleep", "nap", "--for", "12s"); !strings.Contains(out, "nap: sleeping until") {
			t.Errorf("sleep said %q", out)
		}
		a.post(`{"topic":"doomed","n":"d1"}`)
		before := a.waitRule("doomed", "failed", func(r status.RuleStatus) bool { return r.State == "failed" })
		nap := a.rules()["nap"]
		show := a.rule("show", "doomed")
		for _, want := range []string{"state     failed since", "runnable---error--->fault", "fault---error--->failed", "panic",
			"defined   ", "definition\n    - id: doomed"} {
			if !strings.Contains(show, want) {
				t.Errorf("rule show lacks %q:\n%s", want, show)
			}
		}
		a.kill()

		b := startRuled(t, data, args...)
		after := b.rules()
		for id, want := range map[string]string{"nap": "sleeping", "frozen": "paused", "doomed": "failed", "held": "paused", "gone": "paused"} {
			if after[id].State != want {
				t.Errorf("%s after the restart: %s; want %s", id, after[id].State, want)
			}
		}
		if after["nap"].Until == nil || !after["nap"].Until.Equal(*nap.Until) {
			t.Errorf("nap asleep until %v after the restart; it was %v", after["nap"].Until, nap.Until)
		}
		if !after["doomed"].Since.Equal(before.Since) || len(after["doomed"].Errors) != 1 {
			t.Errorf("doomed after the restart %+v; before %+v", after["doomed"], before)
		}
		// Nothing runs for a rule that is not runnable, and nothing counts
		// as its error.
		b.post(`{"topic":"nap","n":"n1"}`, `{"topic":"frozen","n":"f1"}`, `{"topic":"doomed","n":"d2"}`)
		for _, id := range []string{"nap", "frozen", "doomed"} {
			b.waitRule(id, "trigger suppressed", func(r status.RuleStatus) bool { return r.Stats.Refused == 1 })
		}
		// The paused rules' steps came due while they were paused: held,
		// across the restart.
		b.waitRule("held", "step held", func(r status.RuleStatus) bool { return r.Held == 1 })
		b.waitRule("gone", "step held", func(r status.RuleStatus) bool { return r.Held == 1 })
		b.rule("resume", "held")
		b.waitLog("HELD h1", 1)
		b.rule("kill", "gone")
		b.waitLog("rule killed", 1)
		b.waitNoPending()
		// The sleeper wakes at its time, and not before.
		r := b.waitRule("nap", "awake", func(r status.RuleStatus) bool { return r.State == "runnable" })
		if now := time.Now(); now.Before(*nap.Until) {
			t.Errorf("nap woke at %v, before its time %v", now, nap.Until)
		}
		if r.Since.Before(*nap.Until) {
			t.Errorf("nap runnable since %v, before its time %v", r.Since, nap.Until)
		}
		b.post(`{"topic":"nap","n":"n2"}`)
		b.waitLog("NAP n2", 1)
		logs := a.out.String() + b.out.String()
		for _, never := range []string{"NAP n1", "FROZEN", "DOOMED", "GONE g1", "HELD h1"} {
			want := 0
			if never == "HELD h1" {
				want = 1
			}
			if n := strings.Count(logs, never); n != want {
				t.Errorf("%q logged %d times; want %d", never, n, want)
			}
		}
		if d := b.rules()["doomed"]; d.State != "failed" || d.Stats.Errors != 0 {
			t.Errorf("doomed %+v: want failed, no error counted after the restart", d)
		}
		// ruled rule ls and show say it in words.
		ls := b.rule("ls")
		for _, want := range []string{"frozen  paused", "doomed  failed", "gone    killed", "nap     runnable", "doomed last error"} {
			if !strings.Contains(ls, want) {
				t.Errorf("rule ls lacks %q:\n%s", want, ls)
			}
		}
		// After the restart the errors still counting are shown; the
		// history is the new process's own.
		show = b.rule("show", "doomed")
		for _, want := range []string{"state     failed since", ": exceeded error rate", "1 counting against the budget", "panic"} {
			if !strings.Contains(show, want) {
				t.Errorf("rule show lacks %q:\n%s", want, show)
			}
		}
	})
}

// TestRuleCommandErrors: the CLI refuses what the daemon refuses, with its
// words and exit 1; a misused command line exits 2; nothing changes.
func TestRuleCommandErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	rules, plugins := lifecycleFixture(t)
	p := startRuled(t, t.TempDir(), "--rules", rules, "--plugins", plugins)
	p.rule("kill", "frozen")
	before := p.rules()
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"pause", "nope"}, 1, `no such rule "nope"`},
		{[]string{"pause", "frozen"}, 1, "pause is not allowed while killed"},
		{[]string{"reset", "nap"}, 1, "reset is not allowed while runnable"},
		{[]string{"sleep", "nap"}, 2, "needs --until TIME or --for DURATION"},
		{[]string{"sleep", "nap", "--for", "soon"}, 1, `sleep for "soon": want a positive duration`},
		{[]string{"sleep", "nap", "--until", "tomorrow"}, 2, "want an RFC 3339 time"},
		{[]string{"sleep", "nap", "--until", "2020-01-01T00:00:00Z"}, 1, "in the past"},
		{[]string{"explode", "nap"}, 2, "want ls, show, pause, resume, sleep, kill, reset"},
		{[]string{"pause"}, 2, "takes one rule id"},
		{[]string{"show", "nope"}, 1, `no such rule "nope"`},
	}
	for _, tc := range tests {
		code, out, errs := runCLI(t, "", append(append([]string{"rule"}, tc.args...), "--data", p.data)...)
		if code != tc.code || !strings.Contains(errs, tc.msg) || out != "" {
			t.Errorf("rule %s: exit %d, stdout %q, stderr %q; want exit %d saying %q", strings.Join(tc.args, " "), code, out, errs, tc.code, tc.msg)
		}
	}
	after := p.rules()
	for id, r := range before {
		if a := after[id]; a.State != r.State || !a.Since.Equal(r.Since) || len(a.History) != len(r.History) {
			t.Errorf("a refused command changed %s: %+v → %+v", id, r, a)
		}
	}
}

// TestControlTopic: in Redis mode another tool commands a rule by
// publishing ruled.cmd.<rule> on the control channel; a malformed command
// there is logged and changes nothing.
func TestControlTopic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	srv := redistest.Start(t)
	rules, plugins := lifecycleFixture(t)
	p := startRuled(t, t.TempDir(), "--rules", rules, "--plugins", plugins, "--redis", srv.URL())
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	publish := func(msg string) {
		t.Helper()
		if err := c.Publish(context.Background(), "ruled:control", msg).Err(); err != nil {
			t.Fatal(err)
		}
	}
	publish("ruled.cmd.frozen\n" + `{"command":"pause"}`)
	p.waitRule("frozen", "paused", func(r status.RuleStatus) bool { return r.State == "paused" })
	publish("ruled.cmd.frozen\n" + `{"command":"sleep"}`)
	publish("ruled.cmd.frozen\n" + `not json`)
	publish("ruled.cmd.nope\n" + `{"command":"kill"}`)
	p.waitLog("rule command refused", 3)
	for _, want := range []string{"sleeping state missing deadline", "bad command: payload", "no such rule"} {
		if !strings.Contains(p.out.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if r := p.rules()["frozen"]; r.State != "paused" {
		t.Errorf("frozen %s after the refused commands; want paused", r.State)
	}
	publish("ruled.cmd.frozen\n" + `{"command":"resume"}`)
	p.waitRule("frozen", "runnable", func(r status.RuleStatus) bool { return r.State == "runnable" })
	p.post(`{"topic":"frozen","n":"f1"}`)
	p.waitLog("FROZEN f1", 1)
}

// TestBootWaitsForRedis: a daemon started while its Redis is down retries
// before any rule starts, and once Redis is back the rules come up in the
// states they had.
func TestBootWaitsForRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	srv := redistest.StartWith(t, redistest.Config{Persistent: true})
	rules, plugins := lifecycleFixture(t)
	args := []string{"--rules", rules, "--plugins", plugins, "--redis", srv.URL(), "--store-wait", "1m"}
	a := startRuled(t, t.TempDir(), args...)
	a.rule("pause", "frozen")
	a.kill()
	srv.Stop()
	b := spawnRuled(t, t.TempDir(), args...)
	b.waitLog("store not answering; retrying", 2)
	if strings.Contains(b.out.String(), "ruled running") {
		t.Fatal("ruled ran without its store")
	}
	srv.Restart()
	b.waitLogWithin("ruled running", 1, 3*time.Minute)
	if r := b.rules()["frozen"]; r.State != "paused" {
		t.Errorf("frozen %s after the store came back; want paused", r.State)
	}
	// With no store at all within --store-wait, the start fails and says so.
	srv.Stop()
	c := spawnRuled(t, t.TempDir(), append(args, "--store-wait", "1s")...)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("ruled kept waiting past --store-wait")
	}
	if out := c.out.String(); !strings.Contains(out, "gave up after 1s") || c.cmd.ProcessState.ExitCode() == 0 {
		t.Errorf("exit %d, want a non-zero exit that says it gave up:\n%s", c.cmd.ProcessState.ExitCode(), out)
	}
	// What waiting cannot cure is not waited for.
	e := spawnRuled(t, t.TempDir(), "--rules", rules, "--plugins", plugins, "--redis", "http://"+srv.Addr(), "--store-wait", "1m")
	select {
	case <-e.done:
	case <-time.After(30 * time.Second):
		t.Fatal("ruled retried a malformed Redis URL")
	}
	if out := e.out.String(); !strings.Contains(out, "redis url") || strings.Contains(out, "retrying") {
		t.Errorf("a malformed URL: want it named at once, without retries:\n%s", out)
	}
}
