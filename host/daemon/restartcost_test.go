package daemon

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestRestartWithParkedRuns measures a daemon's restart with many runs
// parked on a wait-for (issue 38's goal: 100,000 ready in ≤ 2 s and
// ≤ 100 MB): the time from New to ready, and the heap the runs hold. It
// runs when RULED_PARKED_RUNS says how many (parking them costs a record
// write and its fsync each on bbolt: ~10 s for 20,000), for its figures;
// it asserts only that every run is back.
func TestRestartWithParkedRuns(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RULED_PARKED_RUNS"))
	if n <= 0 {
		t.Skip("set RULED_PARKED_RUNS to measure a restart with that many parked runs")
	}
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), `
- id: ride
  on: ride.start
  key: vehicle
  mode: parallel
  max: 2
  max-keys: 1000000
  steps:
    - name: arrive
      wait-for: {topic: ride.end, match: vehicle, timeout: 24h}
    - do: log.log
      with: {message: "ride of {{vehicle}} ended"}
`)
	cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data")}
	d := startDaemon(t, cfg)
	start := time.Now()
	for i := range n {
		for i-d.eng.Runner().Waiting() > 500 { // the pool's queue is bounded: a trigger past it is refused
			time.Sleep(time.Millisecond)
		}
		d.send(t, `{"topic":"ride.start","vehicle":"v-`+strconv.Itoa(i)+`","battery":71,"lat":52.52,"lon":13.40}`)
	}
	deadline := time.Now().Add(time.Duration(n)*5*time.Millisecond + 30*time.Second)
	for d.eng.Runner().Waiting() < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d runs parked in %v", d.eng.Runner().Waiting(), time.Since(start).Round(time.Millisecond))
	d.Stop()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start = time.Now()
	d2 := startDaemon(t, cfg)
	ready := time.Since(start)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	got := d2.eng.Runner().Waiting()
	t.Logf("restart with %d parked runs: ready in %v; heap %d MB -> %d MB (%.0f bytes a run)", got, ready.Round(time.Millisecond),
		before.HeapAlloc>>20, after.HeapAlloc>>20, float64(after.HeapAlloc-before.HeapAlloc)/float64(max(got, 1)))
	if got != n {
		t.Errorf("%d runs waiting after the restart; want %d", got, n)
	}
}
