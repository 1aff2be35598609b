package daemon

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// TestLoopsOfRulesStop: a rule that publishes its own trigger, two rules
// that trigger each other and a rule that fires itself each run
// bus.MaxHops+1 times from one event and stop: the publish or fire past
// the limit fails its step naming the chain, is counted and logged.
// Before, such a loop ran ~40,000 runs a second for as long as it was
// left (850,640 in 20 s) and pushed every other rule's runs out of the
// execution log.
func TestLoopsOfRulesStop(t *testing.T) {
	for _, backend := range []string{"bbolt", "redis"} {
		t.Run(backend, func(t *testing.T) { testLoopsOfRulesStop(t, backend) })
	}
}

// testLoopsOfRulesStop is TestLoopsOfRulesStop on bbolt and the
// in-process bus, or on Redis and its bus (the hops in the envelope).
func testLoopsOfRulesStop(t *testing.T, backend string) {
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), `
- id: echo
  on: loop.a
  mode: parallel
  steps:
    - do: publish.publish
      with: {topic: loop.a}
- id: ping
  on: loop.b
  mode: parallel
  steps:
    - do: publish.publish
      with: {topic: loop.c}
- id: pong
  on: loop.c
  mode: parallel
  steps:
    - do: publish.publish
      with: {topic: loop.b}
- id: self
  on: loop.f
  mode: parallel
  steps:
    - do: fire.fire
      with: {rule: self}
`)
	cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data")}
	if backend == "redis" {
		cfg.RedisURL = redistest.Start(t).URL()
	}
	d := startDaemon(t, cfg)
	for _, topic := range []string{"loop.a", "loop.b", "loop.f"} {
		d.send(t, `{"topic":"`+topic+`"}`)
	}
	runs := func(rules ...string) (n, failed int) {
		for _, r := range rules {
			rs, _ := d.Runs(runlog.Filter{Rule: r, Limit: 1000})
			for _, x := range rs {
				if x.Outcome != runlog.Running {
					n++
				}
				if x.Outcome == runlog.Failed {
					failed++
				}
			}
		}
		return n, failed
	}
	eventually(t, "three loops stopped at the hop limit", func() bool {
		d.execLog.Flush()
		return d.Status().HopsRefused == 3
	})
	time.Sleep(300 * time.Millisecond) // a loop that went on would run on meanwhile
	d.execLog.Flush()
	for _, group := range [][]string{{"echo"}, {"ping", "pong"}, {"self"}} {
		n, failed := runs(group...)
		if n != bus.MaxHops+1 || failed != 1 {
			t.Errorf("%v: %d runs ended, %d failed; want %d, the last failed at the limit", group, n, failed, bus.MaxHops+1)
		}
	}
	if n := d.Status().HopsRefused; n != 3 {
		t.Errorf("%d publishes and fires refused at the limit; want 3", n)
	}
	logs := d.logs.String()
	if !strings.Contains(logs, "a loop of rules?") || !strings.Contains(logs, "ping → pong → ping") {
		t.Errorf("no warning names the loop's chain:\n%s", logs)
	}
	failed, _ := d.Runs(runlog.Filter{Rule: "echo", Outcome: runlog.Failed})
	if len(failed) != 1 || !strings.Contains(failed[0].Error, "past the limit of 16") {
		t.Errorf("the failed run %+v; want its error to name the hop limit", failed)
	}
}
