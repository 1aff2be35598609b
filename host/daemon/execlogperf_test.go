package daemon

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/redistest"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestExecLogCostAtRate measures what the execution log costs at a rate it
// keeps up with: the daemon's CPU time per event for the three-step rule
// of BenchmarkExecLog, offered 2,000 events/s for 3 s, log on and off in
// turns (twice each), nothing dropped. A device's load, unlike the
// benchmark's saturation, is a rate like this. RULED_PERF=1 runs it
// (`make bench` does).
func TestExecLogCostAtRate(t *testing.T) {
	if os.Getenv("RULED_PERF") == "" {
		t.Skip("RULED_PERF=1 runs it")
	}
	const rate, secs = 2000, 3
	plugins := pluginsDir(t)
	redisURL := ""
	measure := func(on bool) time.Duration {
		dir := t.TempDir()
		writeRules(t, filepath.Join(dir, "rules"), logBenchRules)
		td := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: plugins,
			DataDir: filepath.Join(dir, "data"), NoExecLog: !on, RedisURL: redisURL})
		defer td.Stop()
		dec := td.Decoder()
		raw := []byte(benchEvent)
		n := rate * secs
		before := cpuTime()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for sent := 0; sent < n; {
			<-tick.C
			for i := 0; i < rate/100 && sent < n; i++ {
				e, _ := dec.Decode(raw)
				td.Publish(context.Background(), e)
				sent++
			}
		}
		for td.eng.Runner().RuleStats("bench").Completed < uint64(n) {
			time.Sleep(time.Millisecond)
		}
		if on {
			td.execLog.Flush()
			if st := td.ExecLogStats(); st.DroppedTotal() != 0 {
				t.Fatalf("the log dropped entries at %d events/s: %+v", rate, st)
			}
		}
		return (cpuTime() - before) / time.Duration(n)
	}
	for _, backend := range []string{"segments", "redis"} { // the device's log, then Redis's
		if backend == "redis" {
			redisURL = redistest.Start(t).URL()
		}
		var on, off []time.Duration
		for range 2 {
			off = append(off, measure(false))
			on = append(on, measure(true))
		}
		t.Logf("CPU per event at %d events/s (3-step rule, %s; ruled's CPU only): log off %v %v, log on %v %v; on/off %.2f",
			rate, backend, off[0], off[1], on[0], on[1], float64(on[0]+on[1])/float64(off[0]+off[1]))
	}
}
