package daemon

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/golden"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// treeRules: a run with a condition, three steps (one fires a sub-run), and
// a durable delay before the last.
const treeRules = `
- id: parent
  on: job
  when: {do: expr.expr, with: {expr: "n > 0"}}
  steps:
    - name: first
      do: log.log
      with: {message: "first {{n}}"}
    - name: spawn
      do: fire.fire
      with: {rule: child, payload: {n: "{{n}}"}}
    - name: later
      after: 10m
      durable: true
      do: publish.publish
      with: {topic: "done.{{n}}"}
- id: child
  on: fire.child
  steps:
    - name: note
      do: log.log
      with: {message: "child of {{n}}"}
`

// stableTree renders a run's tree for a golden file.
func stableTree(t *testing.T, d *Daemon, id string) string {
	t.Helper()
	rows, err := d.RunTree(id)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	runlog.Render(&b, rows, true)
	return b.String()
}

// detailTree lists what each node of a run's tree worked on and did
// (input, values, effects), for a golden file: the tree's lines keep only
// their start.
func detailTree(t *testing.T, d *Daemon, id string) string {
	t.Helper()
	rows, err := d.RunTree(id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range rows {
		if n := r.Node; n != nil {
			fmt.Fprintf(&b, "%d %s %s input=%s values=%s effects=%q\n", n.Seq, n.Kind, n.Name, n.Input, n.Values, n.Effects)
		}
	}
	return b.String()
}

// TestExecutionTree: the golden tree of a run with a condition, three
// steps, a durable delay and a sub-run, from bbolt and from a real Redis.
func TestExecutionTree(t *testing.T) {
	for _, backend := range []string{"bbolt", "redis"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			writeRules(t, filepath.Join(dir, "rules"), treeRules)
			clk := sched.NewVirtual(t0)
			cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"), Clock: clk}
			if backend == "redis" {
				cfg.RedisURL = redistest.Start(t).URL()
			}
			d := startDaemon(t, cfg)
			d.send(t, `{"topic":"job","id":"e1","time":"2026-11-30T08:00:00Z","n":7}`)
			d.send(t, `{"topic":"job","id":"e2","time":"2026-11-30T08:00:00Z","n":0}`) // the condition says no: no run
			eventually(t, "the record", func() bool { recs, _ := d.Pending(); return len(recs) == 1 })
			// The sub-run runs on another worker: the parent's record can be
			// written before the child has ended (a loaded machine).
			eventually(t, "the sub-run's end", func() bool {
				runs, _ := d.Runs(runlog.Filter{Rule: "child"})
				return len(runs) == 1 && runs[0].Outcome == runlog.OK
			})
			runs, err := d.Runs(runlog.Filter{Rule: "parent"})
			if err != nil || len(runs) != 1 || runs[0].Outcome != runlog.Running {
				t.Fatalf("runs %+v, %v; want one running", runs, err)
			}
			id := runs[0].ID
			golden.Check(t, "tree-waiting.txt", stableTree(t, d.Daemon, id))
			waitTimer(t, clk, 10*time.Minute)
			clk.Advance(10 * time.Minute)
			eventually(t, "the run's end", func() bool {
				runs, _ := d.Runs(runlog.Filter{Rule: "parent", Outcome: runlog.OK})
				return len(runs) == 1
			})
			golden.Check(t, "tree.txt", stableTree(t, d.Daemon, id))
			golden.Check(t, "tree-detail.txt", detailTree(t, d.Daemon, id))
			if st := d.ExecLogStats(); st.DroppedTotal() != 0 || st.Written == 0 {
				t.Errorf("log stats %+v", st)
			}
		})
	}
}

// TestExecLogRedisOutage: Redis stops in the middle of a run. The run
// completes, the entries the log could not store are dropped and counted,
// and logging resumes when Redis is back.
func TestExecLogRedisOutage(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Persistent: true})
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), `
- id: slow
  on: slow
  mode: parallel
  steps:
    - name: before
      do: log.log
      with: {message: "BEFORE {{n}}"}
    - name: busy
      do: gozoo.busy
      with: {ms: 1500}
    - name: after
      do: log.log
      with: {message: "AFTER {{n}}"}
`)
	plugins := map[string]PluginConfig{"gozoo": {Limits: wasm.Limits{Timeout: time.Minute, Fuel: -1}}}
	d := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: withZoo(t, pluginsDir(t)),
		DataDir: filepath.Join(dir, "data"), RedisURL: srv.URL(), Plugins: plugins})
	d.send(t, `{"topic":"slow","n":1}`)
	eventually(t, "the first step", func() bool { return strings.Contains(d.logs.String(), "BEFORE 1") })
	var first string
	eventually(t, "the first run in the log", func() bool {
		d.execLog.Flush()
		runs, _ := d.Runs(runlog.Filter{Rule: "slow"})
		if len(runs) == 1 {
			first = runs[0].ID
		}
		return first != ""
	})
	srv.Stop()
	eventually(t, "the run to complete without Redis", func() bool { return strings.Contains(d.logs.String(), "AFTER 1") })
	eventually(t, "entries dropped to the store", func() bool {
		d.execLog.Flush()
		return d.ExecLogStats().Dropped[runlog.DropStore] > 0
	})
	if !strings.Contains(d.logs.String(), "execution log: the store failed") {
		t.Error("no log line says the execution log's store failed")
	}
	srv.Restart()
	// The bus resubscribes on its own; an event published before it has
	// is lost (the Redis bus is at most once), so send until one runs.
	n := 1
	eventually(t, "a run logged after Redis came back", func() bool {
		n++
		if e, err := d.Decoder().Decode([]byte(`{"topic":"slow","n":` + strconv.Itoa(n) + `}`)); err == nil {
			d.Publish(context.Background(), e)
		}
		time.Sleep(200 * time.Millisecond)
		runs, err := d.Runs(runlog.Filter{Rule: "slow", Outcome: runlog.OK})
		return err == nil && len(runs) > 0
	})
	// The run that ended in the outage is ended in the log (its entry
	// outlived the outage; issue 37), its nodes of the outage are not.
	eventually(t, "the outage's run ended in the log", func() bool {
		x, err := runlog.ReadRunEntry(d.execLog.Reader(), first)
		return err == nil && x != nil && x.Outcome == runlog.OK
	})
	eventually(t, "a run after the outage in the log", func() bool {
		runs, _ := d.Runs(runlog.Filter{Rule: "slow", Outcome: runlog.OK})
		return len(runs) >= 2
	})
	runs, _ := d.Runs(runlog.Filter{Rule: "slow", Outcome: runlog.OK})
	var after string
	for _, r := range runs {
		if r.ID != first {
			after = r.ID
			break
		}
	}
	rows, err := d.RunTree(after)
	if err != nil || len(rows) != 5 {
		t.Errorf("the run after the outage: %d rows, %v; want the run, its trigger and its 3 steps", len(rows), err)
	}
	if !strings.Contains(d.logs.String(), "logging resumed") {
		t.Error("no log line says logging resumed")
	}
}

// TestCancelAndDropTrees: a run cancelled while it waits, and one dropped
// because its rule was killed, each end in the log with what ended them.
func TestCancelAndDropTrees(t *testing.T) {
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), `
- id: remind
  on: ride.start
  key: vehicle
  mode: parallel
  cancel-on:
    - {topic: ride.end, match: [vehicle]}
  steps:
    - name: wait
      after: 10m
      durable: true
      do: log.log
      with: {message: "still riding {{vehicle}}"}
`)
	clk := sched.NewVirtual(t0)
	d := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"), Clock: clk})
	d.send(t, `{"topic":"ride.start","id":"e1","time":"2026-11-30T08:00:00Z","vehicle":"s1"}`)
	d.send(t, `{"topic":"ride.start","id":"e2","time":"2026-11-30T08:00:00Z","vehicle":"s2"}`)
	eventually(t, "two records", func() bool { recs, _ := d.Pending(); return len(recs) == 2 })
	d.send(t, `{"topic":"ride.end","id":"e3","time":"2026-11-30T08:01:00Z","vehicle":"s1"}`)
	eventually(t, "the cancel", func() bool {
		runs, _ := d.Runs(runlog.Filter{Outcome: runlog.Cancelled})
		return len(runs) == 1
	})
	if _, err := d.Command("remind", status.Command{Command: "kill"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the drop", func() bool {
		runs, _ := d.Runs(runlog.Filter{Outcome: runlog.Dropped})
		return len(runs) == 1
	})
	cancelled, _ := d.Runs(runlog.Filter{Outcome: runlog.Cancelled})
	dropped, _ := d.Runs(runlog.Filter{Outcome: runlog.Dropped})
	golden.Check(t, "tree-cancelled.txt", stableTree(t, d.Daemon, cancelled[0].ID))
	golden.Check(t, "tree-dropped.txt", stableTree(t, d.Daemon, dropped[0].ID))
}
