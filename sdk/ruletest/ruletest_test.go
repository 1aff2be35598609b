package ruletest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/sdk/ruletest"
)

const reminder = `
- id: reminder
  on: ride.start
  steps:
    - name: later
      after: 2h
      durable: true
      do: publish.publish
      with: {topic: "reminder.{{vehicle}}"}
`

func rulesDir(t *testing.T, yaml string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestHarness(t *testing.T) {
	opts := ruletest.Options{Rules: rulesDir(t, reminder), Plugins: map[string]string{"publish": "../../plugins/build/publish.wasm"},
		Grants: map[string][]abi.Capability{"publish": {abi.CapPublish}}}
	t.Run("a two-hour delay across a restart, on the virtual clock", func(t *testing.T) {
		h := ruletest.New(t, opts)
		h.Publish(`{"topic":"ride.start","vehicle":"s1"}`)
		h.Advance(time.Hour)
		h.Restart()
		h.ExpectPublished("reminder.s1", 0)
		h.Advance(time.Hour)
		got := h.ExpectPublished("reminder.s1", 1)
		if len(got) == 1 && !got[0].At.Equal(ruletest.DefaultStart.Add(2*time.Hour)) {
			t.Errorf("published at %v; want two hours in", got[0].At)
		}
		acts := h.ExpectActions("publish.publish", 1)
		if len(acts) == 1 {
			a := acts[0]
			if a.Rule != "reminder" || a.Step != "later" || a.Key == "" || a.Err != nil ||
				string(a.Config) != `{"topic":"reminder.{{vehicle}}"}` || !strings.Contains(string(a.Event), `"vehicle":"s1"`) {
				t.Errorf("action call %+v", a)
			}
		}
	})
	t.Run("a step rewritten while it waits is dropped, not run", func(t *testing.T) {
		h := ruletest.New(t, opts)
		h.Publish(`{"topic":"ride.start","vehicle":"s2"}`)
		h.Advance(time.Minute)
		h.ReplaceRules(rulesDir(t, `
- id: reminder
  on: ride.start
  steps:
    - name: later
      after: 2h
      durable: true
      do: publish.publish
      with: {topic: "changed.{{vehicle}}"}
`))
		h.Advance(3 * time.Hour)
		h.ExpectPublished("reminder.", 0)
		h.ExpectPublished("changed.", 0)
		if runs := h.Runs("reminder"); len(runs) != 1 || runs[0].Outcome != "dropped" {
			t.Errorf("runs %+v; want the waiting run dropped", runs)
		}
	})
}

// TestPluginsReadTheVirtualClock: an action's now() is the harness's time.
func TestPluginsReadTheVirtualClock(t *testing.T) {
	h := ruletest.New(t, ruletest.Options{
		Rules: rulesDir(t, `
- id: clock
  on: tick
  steps:
    - do: clock.publish_now
`),
		Plugins: map[string]string{"clock": "testdata/clock"},
		Grants:  map[string][]abi.Capability{"clock": {abi.CapPublish}},
	})
	h.Advance(90 * time.Minute)
	h.Publish(`{"topic":"tick"}`)
	got := h.ExpectPublished("now", 1)
	want := fmt.Sprintf(`"now":%d`, ruletest.DefaultStart.Add(90*time.Minute).UnixNano())
	if len(got) == 1 && !strings.Contains(got[0].Raw, want) {
		t.Errorf("published %s; want %s", got[0].Raw, want)
	}
}

// captureT is a T whose failures are kept, to test what a failing
// expectation says.
type captureT struct {
	*testing.T
	errs []string
}

func (c *captureT) Errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// A failed expectation says what it wanted and prints the timeline: the
// test's steps, what was published, the action calls, each run's nodes.
func TestFailureShowsTheTimeline(t *testing.T) {
	ct := &captureT{T: t}
	h := ruletest.New(ct, ruletest.Options{Rules: rulesDir(t, reminder),
		Plugins: map[string]string{"publish": "../../plugins/build/publish.wasm"},
		Grants:  map[string][]abi.Capability{"publish": {abi.CapPublish}}})
	h.Publish(`{"topic":"ride.start","vehicle":"s9"}`)
	h.Advance(3 * time.Hour)
	h.ExpectPublished("reminder.s9", 2)
	if len(ct.errs) != 1 {
		t.Fatalf("errors %q; want one", ct.errs)
	}
	msg := ct.errs[0]
	for _, want := range []string{
		"1 events published on reminder.s9*; want 2.",
		"+0s  » publish ride.start {\"topic\":\"ride.start\",\"vehicle\":\"s9\"}",
		"+0s  ▸ run #1 reminder: delay later ok",
		"+2h0m0s  · action reminder/later publish.publish pass 0 key ",
		"+2h0m0s  « published reminder.s9 ",
		"+2h0m0s  ▸ run #1 reminder ended ok",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, msg)
		}
	}
}

// TestMissingGrantFails: a plugin that does not load for want of a grant
// fails the test with the grant to add, in a test's words, and each rule
// that needed it is named at its file and line — not "0 matching events"
// later.
func TestMissingGrantFails(t *testing.T) {
	ct := &captureT{T: t}
	rules := rulesDir(t, reminder)
	ruletest.New(ct, ruletest.Options{Rules: rules, Plugins: map[string]string{"publish": "../../plugins/build/publish.wasm"}})
	joined := strings.Join(ct.errs, "\n")
	for _, want := range []string{
		`ruletest: plugin publish did not load: wasm: plugin publish: imports ruled.publish, which needs the "publish" capability: not granted to the plugin (grant it: grants: {publish: [publish]} in a scenario file, Options.Grants in Go)`,
		`ruletest: rule not loaded: ` + filepath.Join(rules, "rules.yaml") + `:8:11: plugin "publish" did not load (said above)`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("errors lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "--grant") {
		t.Errorf("a test is told the daemon's flag:\n%s", joined)
	}
}
