package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/plugintest"
)

const stopPublishRules = `
- id: later
  on: job.start
  mode: parallel
  max: 10000
  steps:
    - name: tell
      after: 100ms
      durable: true
      do: publish.publish
      with: {topic: job.told, payload: {n: "{{n}}"}}
- id: told
  on: job.told
  mode: parallel
  max: 10000
  steps:
    - after: 10ms
      durable: true
      do: log.log
      with: {message: "FIRED {{n}}"}
`

// TestSIGTERMUnderPublishingLoad: a normal stop while steps that publish
// are queued and running fails no rule and loses nothing (issue 37, 1:
// their publishes were refused as "daemon: stopping", counted against the
// stored error budget, and the rule was stored failed; after the restart
// it refused every trigger). Every accepted event's publish reaches the
// second rule, before the stop or after the restart, and both rules are
// runnable with no error. (Both rules are durable: a rule without a
// durable step promises nothing across a stop, docs/reliability.md.)
func TestSIGTERMUnderPublishingLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		const n = 900 // under the log plugin's burst of 1,000 lines, which FIRED counts on
		rules, plugins := fixture(t, stopPublishRules, "publish")
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins, "--grant", "publish=publish", "--replay-window", "1h", "--workers", "1"}, storeArgs()...)
		a := startRuled(t, data, args...)
		a.post(events("s", n)...)
		a.waitLog("FIRED s", 1) // the steps come due together: most are queued now
		a.term()
		if strings.Contains(a.out.String(), "step failed") {
			t.Errorf("a step failed during the stop:\n%s", grepLines(a.out.String(), "step failed", 5))
		}
		b := startRuled(t, data, args...)
		deadline := time.Now().Add(60 * time.Second)
		for len(fired(a.out.String(), b.out.String())) < n && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		got := fired(a.out.String(), b.out.String())
		var lost []string
		for i := 1; i <= n; i++ {
			if got["s"+strconv.Itoa(i)] == 0 {
				lost = append(lost, "s"+strconv.Itoa(i))
			}
		}
		if len(lost) > 0 {
			t.Errorf("%d of %d accepted events never reached told: %v", len(lost), n, lost[:min(len(lost), 10)])
		}
		for _, id := range []string{"later", "told"} {
			if st := b.rules()[id]; st.State != "runnable" || st.Stats.Errors != 0 {
				t.Errorf("rule %s after the restart: state %s, %d errors %v; want runnable, none", id, st.State, st.Stats.Errors, st.Errors)
			}
		}
		b.waitNoPending()
		t.Logf("fired before the stop %d, after the restart %d, of %d", len(fired(a.out.String())), len(fired(b.out.String())), n)
	})
}

// grepLines is the first max lines of s that contain sub.
func grepLines(s, sub string, max int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && len(out) < max {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

const laterStepRules = `
- id: chain
  on: job.start
  mode: parallel
  max: 100
  steps:
    - name: first
      after: 200ms
      durable: true
      do: log.log
      with: {message: "FIRST {{n}}"}
    - name: second
      do: soak.effect
      with: {ms: 4000}
    - name: third
      do: log.log
      with: {message: "THIRD {{n}}"}
`

// TestKillDuringStepAfterDurablePoint: SIGKILL while the step after a
// durable step runs; the next start runs that step again and the one after
// it (issue 37, 3: the record covered only the durable step and went when
// it ran, so a kill during the next step lost the rest of the run, 5 of 5
// trials).
func TestKillDuringStepAfterDurablePoint(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		const n = 2
		rules, plugins := fixture(t, laterStepRules)
		b, err := os.ReadFile(plugintest.Go(t, "cmd/ruled/testdata/soak"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(plugins, "soak.wasm"), b, 0o644)
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins, "--workers", strconv.Itoa(n), "--limit-timeout", "10s", "--replay-window", "1h"}, storeArgs()...)
		p := startRuled(t, data, args...)
		p.post(events("k", n)...)
		p.waitLog("FIRED k", n) // each run's second step is busy now
		p.kill()
		if strings.Contains(p.out.String(), "THIRD") {
			t.Fatalf("a third step ran before the kill: the kill came too late to test anything:\n%s", grepLines(p.out.String(), "THIRD", 5))
		}
		q := startRuled(t, data, args...)
		q.waitLog("THIRD k", n)
		q.waitNoPending()
		third := map[string]int{}
		for _, l := range strings.Split(q.out.String(), "\n") {
			if i := strings.Index(l, "THIRD "); i >= 0 {
				third[strings.TrimSuffix(strings.Fields(l[i+6:])[0], ":")]++
			}
		}
		seconds := fired(p.out.String(), q.out.String())
		for i := 1; i <= n; i++ {
			k := fmt.Sprintf("k%d", i)
			if seconds[k] < 1 || third[k] != 1 {
				t.Errorf("%s: second step ran %d times, third %d; want at least once, once", k, seconds[k], third[k])
			}
		}
	})
}
