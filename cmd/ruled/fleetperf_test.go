package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// TestFleetCost (RULED_PERF=1, make bench): the fleet's cost per run and
// per step with 1, 2 and 3 processes over one redis-server — Redis
// commands (INFO commandstats) and the processes' CPU (their
// /proc/<pid>/stat between the first post and the last step: start-up
// and compilation left out). Runs of a one-step rule and of a three-step
// rule are measured apart; a step's cost is the difference over the two
// steps more. This machine has 2 cores: this is what the work costs, not a
// scaling curve.
func TestFleetCost(t *testing.T) {
	if os.Getenv("RULED_PERF") == "" {
		t.Skip("RULED_PERF=1 runs the fleet cost figures (make bench)")
	}
	runs := 2000
	if s := os.Getenv("RULED_FLEET_RUNS"); s != "" {
		runs, _ = strconv.Atoi(s)
	}
	b, err := os.ReadFile(plugintest.Go(t, "cmd/ruled/testdata/soak"))
	if err != nil {
		t.Fatal(err)
	}
	rule := func(steps int) string {
		var s strings.Builder
		s.WriteString("- id: job\n  on: job\n  key: k\n  mode: parallel\n  max: 100000\n  steps:\n")
		for i := range steps {
			fmt.Fprintf(&s, "    - name: s%d\n      after: 100ms\n      durable: true\n      do: soak.effect\n      with: {ms: 1}\n", i)
		}
		return s.String()
	}
	type cost struct{ cmds, cpu float64 }
	measure := func(t *testing.T, procs, steps int, extra ...string) cost {
		srv := redistest.Start(t)
		rules, plugins := fixture(t, rule(steps))
		os.WriteFile(filepath.Join(plugins, "soak.wasm"), b, 0o644)
		args := append([]string{"--rules", rules, "--plugins", plugins, "--redis", srv.URL(), "--shards", "4", "--workers", "2"}, extra...)
		var ps []*proc
		for range procs {
			ps = append(ps, startRuled(t, t.TempDir(), args...))
		}
		// Every member holds its share before the clock starts.
		time.Sleep(2 * time.Second)
		cmds0, cpu0 := redisCommands(t, []string{srv.Addr()}), procsCPU(t, ps)
		for i := 0; i < runs; i += 100 {
			var lines []string
			for j := i; j < min(i+100, runs); j++ {
				lines = append(lines, fmt.Sprintf(`{"topic":"job","k":"v%d","n":"%d"}`, j%50, j))
			}
			ps[(i/100)%procs].post(lines...)
		}
		// Counted by the members' /metrics, not by the plugin's "FIRED"
		// lines: the plugin log's bound (200 lines/s, burst 1,000) dropped
		// a quarter of them, and make bench failed (issue 37, 0).
		want := runs * steps
		deadline := time.Now().Add(3 * time.Minute)
		for n := 0; n < want; time.Sleep(100 * time.Millisecond) {
			n = 0
			for _, p := range ps {
				n += p.actionCalls("soak", "effect")
			}
			if n < want && time.Now().After(deadline) {
				t.Fatalf("%d of %d steps ran: no figure from a partial run", n, want)
			}
		}
		c := cost{cmds: float64(redisCommands(t, []string{srv.Addr()})-cmds0) / float64(runs),
			cpu: (procsCPU(t, ps) - cpu0).Seconds() * 1000 / float64(runs)}
		for _, p := range ps {
			p.term()
		}
		return c
	}
	var nolog cost
	t.Run("1-proc-no-log", func(t *testing.T) { nolog = measure(t, 1, 1, "--exec-log=false") })
	t.Logf("fleet cost, 1 process, the execution log off: a one-step run %.1f Redis commands, %.2f CPU-s per 1,000 runs", nolog.cmds, nolog.cpu)
	for _, procs := range []int{1, 2, 3} {
		var one, three cost
		t.Run(fmt.Sprintf("%d-procs", procs), func(t *testing.T) {
			one, three = measure(t, procs, 1), measure(t, procs, 3)
		})
		stepCmds, stepCPU := (three.cmds-one.cmds)/2, (three.cpu-one.cpu)/2
		t.Logf("fleet cost, %d process(es), 4 shards, %d runs of durable steps: a one-step run %.1f Redis commands and %.2f CPU-s per 1,000 runs; "+
			"a three-step run %.1f commands, %.2f CPU-s per 1,000; so a step more %.1f commands, %.2f CPU-s per 1,000 steps",
			procs, runs, one.cmds, one.cpu, three.cmds, three.cpu, stepCmds, stepCPU)
	}
}

// procsCPU is the CPU time the live processes have used so far (user and
// system, from /proc/<pid>/stat in clock ticks of 1/100 s).
func procsCPU(t *testing.T, ps []*proc) time.Duration {
	t.Helper()
	var total time.Duration
	for _, p := range ps {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		// Fields after the command's name, which is in parentheses.
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(utime+stime) * 10 * time.Millisecond
	}
	return total
}

// actionCalls is how many calls of plugin's action function the process
// has made, read from its /metrics (ruled_plugin_call_seconds_count): every
// call, where the plugin's own log lines are bounded per second.
func (p *proc) actionCalls(plugin, function string) int {
	p.t.Helper()
	resp, err := p.client().Get("http://ruled/metrics")
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "ruled_plugin_call_seconds_count{") && strings.Contains(l, `plugin="`+plugin+`"`) &&
			strings.Contains(l, `function="`+function+`"`) && strings.Contains(l, `kind="action"`) {
			f := strings.Fields(l)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				p.t.Fatalf("/metrics: %q: %v", l, err)
			}
			n += int(v)
		}
	}
	return n
}
