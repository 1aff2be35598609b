package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/metrics"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/task"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// The rule calls the versioned plugin's action (host/wasm/testdata/reload,
// two builds of one plugin that differ visibly).
const ruleFile = `
- id: ver
  on: t
  steps:
    - name: v
      do: versioned.version
`

func testdata(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(plugintest.Root(), "host", "wasm", "testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type env struct {
	*Engine
	rules, plugins string
	clock          *sched.Virtual
	announced      [][]string
}

func newEnv(t *testing.T) *env { return newEnvWith(t, ruleFile, nil) }

// newEnvWith is newEnv on the rules file rule, with the engine's config
// changed by with (nil: as is).
func newEnvWith(t *testing.T, rule string, with func(*Config)) *env {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	e := &env{rules: filepath.Join(root, "rules"), plugins: filepath.Join(root, "plugins"),
		clock: sched.NewVirtual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))}
	for _, d := range []string{e.rules, e.plugins} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(e.plugins, "versioned.wasm"), testdata(t, "reload/v1.wasm"), 0o600)
	os.WriteFile(filepath.Join(e.rules, "r.yaml"), []byte(rule), 0o600)
	rt, err := wasm.NewRuntime(ctx, wasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	st, err := store.OpenBolt(filepath.Join(root, "ruled.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := Config{RulesDir: e.rules, PluginsDir: e.plugins, Runtime: rt,
		Hasher: st, Pending: seq.NewPendingStore(st, seq.Placement{}, hclog.NewNullLogger()), Clock: e.clock,
		Workers: 1, QueueCapacity: 8, ReplayWindow: time.Hour, Metrics: metrics.New(nil, false),
		Announce: func(added, changed, removed []string) {
			e.announced = append(e.announced, []string{strings.Join(added, ","), strings.Join(changed, ","), strings.Join(removed, ",")})
		}}
	if with != nil {
		with(&cfg)
	}
	eng, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	e.Engine = eng
	return e
}

func (e *env) fire(t *testing.T) {
	t.Helper()
	ev, err := (&bus.Decoder{}).Decode([]byte(`{"topic":"t"}`))
	if err != nil {
		t.Fatal(err)
	}
	e.Runner().Fire(seq.Trigger{Seq: e.Current("ver"), Event: ev})
	deadline := time.Now().Add(10 * time.Second)
	for !e.Idle() || e.Runner().Counts().Active > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run did not end")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestNewRunsTheRulesOnThePlugins(t *testing.T) {
	e := newEnv(t)
	st := e.Status()
	if len(st.Rules) != 1 || st.Rules[0].ID != "ver" || st.Rules[0].State != string(task.Runnable) {
		t.Fatalf("rules %+v: want ver, runnable", st.Rules)
	}
	if len(st.Plugins) != 1 || !st.Plugins[0].Loaded {
		t.Fatalf("plugins %+v", st.Plugins)
	}
	e.Release()
	e.fire(t)
	if s := e.Runner().RuleStats("ver"); s.Started != 1 || s.Completed != 1 {
		t.Errorf("stats %+v: want one run, completed", s)
	}
}

func TestCommand(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, rule string
		c          status.Command
		want       error  // errors.Is, or nil
		state      string // the rule's state after, when it succeeds
	}{
		{"an unknown rule", "nope", status.Command{Command: "pause"}, status.ErrUnknownRule, ""},
		{"an unknown command", "ver", status.Command{Command: "explode"}, status.ErrBadCommand, ""},
		{"a sleep for a negative time", "ver", status.Command{Command: "sleep", For: "-1m"}, status.ErrBadCommand, ""},
		{"a sleep until a time gone", "ver", status.Command{Command: "sleep", Until: &time.Time{}}, status.ErrBadCommand, ""},
		{"pause", "ver", status.Command{Command: "pause"}, nil, string(task.Paused)},
		{"resume", "ver", status.Command{Command: "resume"}, nil, string(task.Runnable)},
		{"sleep for an hour", "ver", status.Command{Command: "sleep", For: "1h"}, nil, string(task.Sleeping)},
		{"kill", "ver", status.Command{Command: "kill"}, nil, string(task.Killed)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := e.Command(tc.rule, tc.c)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Errorf("error %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil || rs.State != tc.state {
				t.Errorf("state %q, %v; want %q", rs.State, err, tc.state)
			}
		})
	}
	// Killed: the gate drops what comes due, with the reason.
	if hold, drop := (gate{e.Tasks()}).Due("ver"); hold || drop != DropRuleKilled {
		t.Errorf("a killed rule's due step: hold %v, drop %q", hold, drop)
	}
}

func TestReloadFollowsPluginsAndRules(t *testing.T) {
	e := newEnv(t)
	plugin := filepath.Join(e.plugins, "versioned.wasm")
	before := e.Current("ver")

	// A module without the rule's action is refused; v1 keeps serving.
	os.WriteFile(plugin, testdata(t, "zoo/zoo.wasm"), 0o600)
	e.Reload(map[string]bool{plugin: true})
	ps := e.Plugins()
	if len(ps) != 1 || !strings.Contains(ps[0].LastError, `it would break rule ver`) || e.Current("ver") != before {
		t.Fatalf("plugins %+v: want the zoo refused for breaking ver, and ver unchanged", ps)
	}

	// v2 has it (no ReloadBackoff here: tried at once): the rule is
	// compiled again on it, and the change announced.
	os.WriteFile(plugin, testdata(t, "reload/v2.wasm"), 0o600)
	e.Reload(map[string]bool{plugin: true})
	if e.Current("ver") == before {
		t.Error("the rule kept its sequence on a changed module")
	}
	if len(e.announced) != 1 || e.announced[0][1] != "ver" {
		t.Errorf("announced %v, want ver changed", e.announced)
	}

	// A rules file gone: the rule goes, its state is forgotten.
	os.Remove(filepath.Join(e.rules, "r.yaml"))
	e.Reload(map[string]bool{filepath.Join(e.rules, "r.yaml"): true})
	if e.Current("ver") != nil || len(e.Rules()) != 0 {
		t.Errorf("rules %+v after the file was removed", e.Rules())
	}
	if _, ok := e.Tasks().State("ver"); ok {
		t.Error("a removed rule's state is still tracked")
	}
}

// states is a fixed table of entities' states (seq.StateReader).
type states map[string]string

func (s states) State(id string) ([]byte, time.Time, bool) {
	b, ok := s[id]
	return []byte(b), time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC), ok
}

// TestRuleStates: a rule's page lists the states it reads and what each
// holds (stale past its max-age; none for an id the trigger fills), and a
// rule that reads states but calls a plugin built for an ABI before 1.4
// is loaded with a warning naming the plugin: it cannot see them.
func TestRuleStates(t *testing.T) {
	var logs strings.Builder
	rule := `
- id: ver
  on: t
  states:
    door: door.front
    lux: {entity: sensor.lux, max-age: 30m}
    dock: "dock.{{vehicle}}"
    gone: nothing.here
  steps:
    - {name: v, do: versioned.version}
`
	e := newEnvWith(t, rule, func(c *Config) {
		c.States = states{"door.front": `{"open":true}`, "sensor.lux": `{"value":3}`}
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
	})
	if !strings.Contains(logs.String(), "built for an ABI before 1.4") || !strings.Contains(logs.String(), "plugin=versioned") ||
		!strings.Contains(logs.String(), "abi=1.0") {
		t.Errorf("no warning of the old plugin:\n%s", logs.String())
	}
	d, err := e.Rule("ver")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]status.RuleState{}
	for _, s := range d.States {
		got[s.Name] = s
	}
	if len(d.States) != 4 || string(got["door"].State) != `{"open":true}` || got["door"].Stale || got["door"].Seen == nil {
		t.Errorf("door: %+v (of %d)", got["door"], len(d.States))
	}
	if s := got["lux"]; string(s.State) != `{"value":3}` || !s.Stale || s.MaxAge != "30m0s" { // seen 1h before the clock
		t.Errorf("lux: %+v; want stale", s)
	}
	if s := got["dock"]; s.State != nil || s.Entity != "dock.{{vehicle}}" {
		t.Errorf("dock: %+v; want no state (its id is the trigger's)", s)
	}
	if s := got["gone"]; s.State != nil || s.Seen != nil {
		t.Errorf("gone: %+v; want none", s)
	}
}
