package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

const benchRules = `
- id: bench
  on: bench.in
  when: battery < 20
  mode: parallel
  max: 1000000
  steps:
    - name: act
      do: log.log
      with: {level: trace, message: "{{vehicle}} at {{battery}}"}
`

const benchEvent = `{"topic":"bench.in","vehicle":"s-17","battery":12,"charging":false,"speed":14.5,"pos":{"lat":52.52,"lon":13.405},"tags":["city","rental"],"seq":123456}`

// runBench publishes b.N copies of benchEvent and stops the clock when
// the rule "bench" has completed as many runs, none failing. It keeps at
// most benchWindow runs waiting, as a bus whose consumer answers with
// backpressure would (the daemon's queue holds 1,024 by default): a
// publisher far ahead of the workers would have the daemon hold every
// event of the benchmark at once, a load no device sees. It reports
// the process's CPU time per run besides (cpu-ns/op: every goroutine's,
// the collector's included), which a noisy machine moves less than the
// wall clock. It returns the CPU time it started from, for a caller that
// counts more (the log writer's tail).
func runBench(b *testing.B, td *testDaemon) (cpu0 time.Duration) {
	dec := td.Decoder()
	raw := []byte(benchEvent)
	b.ResetTimer()
	cpu0 = cpuTime()
	defer reportCPU(b, cpu0)
	for i := 0; i < b.N; i++ {
		if i%64 == 0 {
			for uint64(i)-td.runner.RuleStats("bench").Completed >= benchWindow {
				time.Sleep(200 * time.Microsecond)
			}
		}
		e, err := dec.Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		td.Publish(context.Background(), e)
	}
	for td.runner.RuleStats("bench").Completed < uint64(b.N) {
		time.Sleep(50 * time.Microsecond)
	}
	b.StopTimer()
	if st := td.runner.RuleStats("bench"); st.Started != uint64(b.N) || st.Errors != 0 {
		b.Fatalf("stats %+v for %d events", st, b.N)
	}
	return cpu0
}

// benchWindow is how many runs runBench lets wait for a worker.
const benchWindow = 512

// reportCPU reports the CPU time since cpu0 per op (cpu-ns/op).
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// benchDaemon starts a daemon on rules for a benchmark: one worker, a
// queue that never refuses; cfg adds the benchmark's own settings.
func benchDaemon(b *testing.B, rules string, cfg Config) *testDaemon {
	dir := b.TempDir()
	writeRules(b, filepath.Join(dir, "rules"), rules)
	cfg.RulesDir, cfg.PluginsDir, cfg.DataDir = filepath.Join(dir, "rules"), pluginsDir(b), filepath.Join(dir, "data")
	cfg.Workers, cfg.QueueCapacity = 1, 1<<20
	return startDaemon(b, cfg)
}

// BenchmarkEndToEnd is events/s through the daemon (bus → trigger index →
// the rule's condition on a worker → mode decision → one action) next to the
// same work done directly: decode the event, call the same condition and
// action handles, no daemon. Both on one worker; `make bench` reports the
// ratio (target: the daemon ≥ 0.7× direct). The execution log is off here:
// its cost is BenchmarkExecLog's to report. "daemon-no-latency" is the
// daemon without the latency histograms of /metrics: daemon over it is
// what they cost.
func BenchmarkEndToEnd(b *testing.B) {
	for _, noLatency := range []bool{false, true} {
		name := "daemon"
		if noLatency {
			name = "daemon-no-latency"
		}
		b.Run(name, func(b *testing.B) {
			td := benchDaemon(b, benchRules, Config{NoExecLog: true, NoLatencyMetrics: noLatency})
			runBench(b, td)
		})
	}
	b.Run("direct", func(b *testing.B) {
		ctx := context.Background()
		rt, err := wasm.NewRuntime(ctx, wasm.Config{CacheDir: plugintest.CacheDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close(ctx)
		load := func(name string) *wasm.Module {
			m, err := rt.LoadFile(ctx, plugintest.Go(b, "plugins/"+name), wasm.Options{Name: name})
			if err != nil {
				b.Fatal(err)
			}
			return m
		}
		cond, err := load("expr").Configure(ctx, "expr", []byte(`{"expr":"battery < 20"}`))
		if err != nil {
			b.Fatal(err)
		}
		act, err := load("log").Configure(ctx, "log", []byte(`{"level":"trace","message":"{{vehicle}} at {{battery}}"}`))
		if err != nil {
			b.Fatal(err)
		}
		var dec bus.Decoder
		raw := []byte(benchEvent)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			e, err := dec.Decode(raw)
			if err != nil {
				b.Fatal(err)
			}
			info := abi.CallInfo{Time: e.Time.UnixNano(), Topic: e.Topic, Rule: "bench", Run: strconv.Itoa(i)}
			c := &wasm.Call{Info: info, View: e.View, Raw: e.Raw}
			ok, err := cond.When(ctx, c)
			if err != nil || !ok {
				b.Fatal(ok, err)
			}
			c.Info.Step, c.Info.Key = "act", info.Run+"/act/0"
			if _, err := act.Act(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	})
}

const logBenchRules = `
- id: bench
  on: bench.in
  when: battery < 20
  mode: parallel
  max: 1000000
  steps:
    - name: one
      do: log.log
      with: {level: trace, message: "{{vehicle}} one"}
    - name: two
      do: log.log
      with: {level: trace, message: "{{vehicle}} two"}
    - name: three
      do: log.log
      with: {level: trace, message: "{{vehicle}} three"}
`

// BenchmarkExecLog is events/s through the daemon on the embedded store
// for a rule with a condition and three steps (seven log entries a run),
// with the execution log on and off: the clock stops when every run has
// completed, which is what the log must not slow down — a run never waits
// on it. The writer goes on committing after that, on its own goroutine;
// the benchmark then waits for it and fails if it dropped an entry, so the
// rate measured is one the log keeps up with, and reports how long the
// writer needed per run after the runs were done (ns-log-tail/op), and
// the CPU time per run with that tail counted (cpu-ns/op). `make bench`
// reports on / off (target ≥ 0.9).
func BenchmarkExecLog(b *testing.B) {
	for _, on := range []bool{true, false} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			td := benchDaemon(b, logBenchRules, Config{NoExecLog: !on, ExecLog: runlog.Options{Queue: 16 * max(b.N, 1024)}})
			cpu0 := runBench(b, td)
			if !on {
				return
			}
			tail := time.Now()
			td.xlog.Flush()
			b.ReportMetric(float64(time.Since(tail).Nanoseconds())/float64(b.N), "ns-log-tail/op")
			reportCPU(b, cpu0) // the writer's tail included
			if st := td.ExecLogStats(); st.DroppedTotal() != 0 || st.Written < uint64(b.N) {
				b.Fatalf("the log dropped entries: %+v for %d runs", st, b.N)
			}
		})
	}
}

// BenchmarkIngestJournal is what the accepted-event journal costs an
// ingest: the time d.ingest takes for an event whose rule has a durable
// step (journaled: one store write before the 202) and for the same rule
// with the step not durable (not journaled), on the embedded store, in the
// same run. The durable runs' own pending records are written on the
// worker meanwhile, as they would be.
func BenchmarkIngestJournal(b *testing.B) {
	for _, durable := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "journaled"}[durable]
		b.Run(name, func(b *testing.B) {
			td := benchDaemon(b, fmt.Sprintf(`
- id: bench
  on: bench.in
  mode: parallel
  max: 100000000
  steps:
    - name: later
      after: 1h
      durable: %v
      do: log.log
      with: {message: "later"}
`, durable), Config{NoExecLog: true})
			dec := td.Decoder()
			raw := []byte(benchEvent)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e, err := dec.Decode(raw)
				if err != nil {
					b.Fatal(err)
				}
				if err := td.ingest(e); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if st := td.Status().Journal; durable && st.Written != uint64(b.N) || !durable && st.Written != 0 {
				b.Fatalf("journal %+v after %d events", st, b.N)
			}
		})
	}
}
