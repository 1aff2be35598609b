package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/plugintest"
)

// TestHostilePluginKeepsTheAPIUp is the daemon under the runaway that froze
// it: a condition that grows its memory (a garbage collection starts) and
// then loops over a 32 MiB memory.fill — with GOMAXPROCS 1 and 2, as on a
// device. The API keeps answering within twice the plugin's deadline all
// along (it stopped answering, and SIGTERM was ignored, for 16 minutes),
// the call fails as a deadline or fuel error counted against its rule, and
// SIGTERM stops the daemon.
func TestHostilePluginKeepsTheAPIUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	const deadline = time.Second
	for _, procs := range []string{"1", "2"} {
		t.Run("GOMAXPROCS="+procs, func(t *testing.T) {
			rules, plugins := fixture(t, `
- id: hostile
  on: poke
  when: {do: hostile.fillspin}
  steps:
    - do: log.log
      with: {message: "never"}
`)
			b, err := os.ReadFile(filepath.Join(plugintest.Root(), "host", "wasm", "testdata", "hostile", "hostile.wasm"))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(plugins, "hostile.wasm"), b, 0o644)
			cfg := filepath.Join(t.TempDir(), "ruled.yaml")
			os.WriteFile(cfg, []byte(fmt.Sprintf("plugin:\n  hostile: {timeout: %v, memory-pages: 1024}\n", deadline)), 0o644)
			data := t.TempDir()
			p := spawnRuledEnv(t, data, []string{"GOMAXPROCS=" + procs}, "--rules", rules, "--plugins", plugins, "--config", cfg)
			p.waitLogWithin("ruled running", 1, 3*time.Minute)
			c := p.client()
			c.Timeout = 30 * time.Second
			p.post(`{"topic":"poke"}`, `{"topic":"poke"}`, `{"topic":"poke"}`)
			var worst time.Duration
			for end := time.Now().Add(4 * deadline); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				start := time.Now()
				resp, err := c.Get("http://ruled/healthz")
				took := time.Since(start)
				if err != nil {
					t.Fatalf("/healthz: %v after %v", err, took)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("/healthz: %s", resp.Status)
				}
				worst = max(worst, took)
			}
			if worst >= 2*deadline {
				t.Errorf("/healthz took %v at worst while the plugin ran; want under 2× its deadline of %v", worst, deadline)
			}
			st := p.rules()["hostile"]
			if st.Stats.Errors == 0 {
				t.Errorf("the runaway counted no error against its rule: %+v", st)
			}
			out := p.out.String()
			if !strings.Contains(out, "deadline exceeded") && !strings.Contains(out, "fuel exhausted") {
				t.Errorf("no deadline or fuel error logged:\n%s", out)
			}
			p.term()
			t.Logf("GOMAXPROCS=%s: /healthz at worst %v while fillspin ran (deadline %v); %d errors counted",
				procs, worst.Round(time.Millisecond), deadline, st.Stats.Errors)
		})
	}
}

// TestSpinningStartSection is the daemon with a plugin whose start section
// loops forever (it hung the daemon's start, and a running daemon that found
// the file in its plugins directory): at start, and dropped in while the
// daemon runs, the load fails once the plugin's start-up budget is spent,
// naming the start section, at the budget the config gives the plugin
// (init-timeout); the other plugins load, the rules run, the API
// answers meanwhile and a rule change made while the spinner loads is
// loaded; SIGTERM stops the daemon.
func TestSpinningStartSection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	const budget = time.Second
	rules, plugins := fixture(t, `
- id: good
  on: job
  steps:
    - do: log.log
      with: {message: "GOOD {{n}}"}
`)
	spin, err := os.ReadFile(filepath.Join(plugintest.Root(), "host", "wasm", "testdata", "hostile", "start_spin.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(plugins, "spin.wasm"), spin, 0o644)
	cfg := filepath.Join(t.TempDir(), "ruled.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("plugin:\n  spin: {init-timeout: %v}\n  spin2: {init-timeout: %v}\n", budget, budget)), 0o644)
	started := time.Now()
	p := spawnRuled(t, t.TempDir(), "--rules", rules, "--plugins", plugins, "--config", cfg)
	p.waitLogWithin("ruled running", 1, 2*time.Minute)
	t.Logf("running %v after the spawn, the spinner's start-up budget %v", time.Since(started).Round(time.Millisecond), budget)
	if out := p.out.String(); !strings.Contains(out, "start section") {
		t.Fatalf("the spinner's failure does not name its start section:\n%s", out)
	}
	p.post(`{"topic":"job","n":"1"}`)
	p.waitLog("GOOD 1", 1)

	// Dropped in while the daemon runs, with a rule change on its heels.
	os.WriteFile(filepath.Join(plugins, "spin2.wasm"), spin, 0o644)
	time.Sleep(50 * time.Millisecond)
	os.WriteFile(filepath.Join(rules, "rules.yaml"), []byte(`
- id: good
  on: job
  steps:
    - do: log.log
      with: {message: "BETTER {{n}}"}
`), 0o644)
	c := p.client()
	c.Timeout = 2 * budget
	for end := time.Now().Add(2 * budget); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		resp, err := c.Get("http://ruled/healthz")
		if err != nil {
			t.Fatalf("/healthz while the spinner loads: %v", err)
		}
		resp.Body.Close()
	}
	p.waitLogWithin("spin2", 1, time.Minute)
	deadline := time.Now().Add(time.Minute)
	for n := 2; !strings.Contains(p.out.String(), "BETTER"); n++ {
		if time.Now().After(deadline) {
			t.Fatalf("the rule change made while the spinner loaded was never loaded:\n%s", p.out.String())
		}
		p.post(fmt.Sprintf(`{"topic":"job","n":"%d"}`, n))
		time.Sleep(200 * time.Millisecond)
	}
	// Each stopped at its own start-up budget from the config (it was
	// parsed and not used: the default of 10 s held the start) — by the
	// deadline, or by the fuel derived from it, which runs out first when
	// the calibration ran on a loaded machine (both name the budget).
	atBudget := regexp.MustCompile(fmt.Sprintf(`the start section: (deadline exceeded: deadline of %v passed|fuel exhausted: .*\(deadline %v\))`, budget, budget))
	if got := len(atBudget.FindAllString(p.out.String(), -1)); got != 2 {
		t.Errorf("%d start-section failures at the %v budget logged; want one for each spinner:\n%s", got, budget, p.out.String())
	}
	p.term()
	for _, l := range strings.Split(p.out.String(), "\n") {
		if strings.Contains(l, "start section") {
			t.Log(l)
		}
	}
}

// TestSpecialFiles: what outside testing dropped into the directories —
// a FIFO as a rule file (it blocked the reloader forever, and SIGTERM with
// it), a FIFO as a plugin (the daemon never became ready), /dev/zero linked
// as a rule file (1.86 GB in 2 s), a rule file of 5 MB of problems (parsed
// and its problems logged again at every refresh) — and the daemon starts,
// names each, serves the good rule, logs each problem once though the
// rules are read again every 200 ms, reloads a file changed later, and
// stops on SIGTERM.
func TestSpecialFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	rules, plugins := fixture(t, `
- id: good
  on: job
  steps:
    - do: log.log
      with: {message: "GOOD {{n}}"}
`)
	for _, fifo := range []string{filepath.Join(rules, "fifo.yaml"), filepath.Join(plugins, "fifo.wasm")} {
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("/dev/zero", filepath.Join(rules, "zero.yaml"))
	os.WriteFile(filepath.Join(rules, "huge.yaml"), []byte(strings.Repeat("- nope\n", 800_000)), 0o644)
	os.WriteFile(filepath.Join(rules, "bad.yaml"), []byte("- id: bad\n  on: job\n  steps: nope\n"), 0o644)
	data := t.TempDir()
	p := startRuled(t, data, "--rules", rules, "--plugins", plugins, "--rules-refresh", "200ms")
	p.post(`{"topic":"job","n":"1"}`)
	p.waitLog("GOOD 1", 1)
	time.Sleep(time.Second) // five refreshes
	out := p.out.String()
	for _, want := range []string{"fifo.yaml: not a regular file", "fifo.wasm: not a regular file", "zero.yaml: not a regular file",
		"huge.yaml: 5600000 bytes, over the limit of 4194304"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not say %q", want)
		}
	}
	if n := strings.Count(out, `rule problem: at=`+filepath.Join(rules, "bad.yaml")); n != 1 {
		t.Errorf("bad.yaml's problem logged %d times over five refreshes; want once", n)
	}
	// A file changed later still reloads.
	os.WriteFile(filepath.Join(rules, "more.yaml"), []byte("- id: more\n  on: job2\n  steps:\n    - do: log.log\n      with: {message: \"MORE {{n}}\"}\n"), 0o644)
	deadline := time.Now().Add(20 * time.Second)
	for p.rules()["more"].ID == "" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	p.post(`{"topic":"job2","n":"2"}`)
	p.waitLog("MORE 2", 1)
	start := time.Now()
	p.term()
	t.Logf("stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
}

// TestHostCallStormHoldsNoWorker is the daemon under a plugin that loops
// on a host call — kv_set into the real store, each a transaction — and
// never looks at its answer, on the only worker, with GOMAXPROCS 1 and 2
// (issue 37, 2: it held the worker for over 60 s past a 1 s deadline, a
// healthy rule ran 0 times, and SIGTERM hung 60 s). Each storm ends at its
// deadline, the healthy rule's runs get the worker between them, and
// SIGTERM during a storm stops the daemon.
func TestHostCallStormHoldsNoWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	for _, procs := range []string{"1", "2"} {
		t.Run("GOMAXPROCS="+procs, func(t *testing.T) {
			rules, plugins := fixture(t, `
- id: storm-a
  on: storm
  steps:
    - do: storm.kv
- id: storm-b
  on: storm
  steps:
    - do: storm.kv
- id: storm-c
  on: late
  steps:
    - do: storm.kv
- id: healthy
  on: ok
  mode: parallel
  steps:
    - do: log.log
      with: {message: "OK {{n}}"}
`)
			b, err := os.ReadFile(filepath.Join(plugintest.Root(), "host", "wasm", "testdata", "hostile", "storm.wasm"))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(plugins, "storm.wasm"), b, 0o644)
			data := t.TempDir()
			p := spawnRuledEnv(t, data, []string{"GOMAXPROCS=" + procs}, "--rules", rules, "--plugins", plugins,
				"--grant", "storm=kv,publish,fire", "--limit-timeout", "1s", "--workers", "1")
			p.waitLogWithin("ruled running", 1, 3*time.Minute)
			start := time.Now()
			p.post(`{"topic":"storm"}`, `{"topic":"ok","n":"o1"}`, `{"topic":"ok","n":"o2"}`)
			p.waitLogWithin("OK o", 2, 20*time.Second)
			took := time.Since(start)
			// At most two storms of 1 s each on the one worker before them.
			if took > 6*time.Second {
				t.Errorf("the healthy rule waited %v behind two storms of a 1 s deadline", took)
			}
			stopped := func() int {
				return strings.Count(p.out.String(), "deadline of 1s passed") + strings.Count(p.out.String(), "used its budget")
			}
			for end := time.Now().Add(20 * time.Second); stopped() < 2 && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
			}
			if n := stopped(); n != 2 {
				t.Errorf("%d storms stopped by their deadline or fuel; want 2:\n%s", n, grepLines(p.out.String(), "storm", 10))
			}
			p.post(`{"topic":"late"}`)
			time.Sleep(300 * time.Millisecond) // the storm holds the worker
			stopping := time.Now()
			p.term()
			if took := time.Since(stopping); took > 5*time.Second {
				t.Errorf("SIGTERM during a storm of a 1 s deadline took %v", took)
			}
			t.Logf("healthy runs after %v; SIGTERM during a storm stopped the daemon in %v",
				took.Round(time.Millisecond), time.Since(stopping).Round(time.Millisecond))
		})
	}
}
