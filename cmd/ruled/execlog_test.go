package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/internal/golden"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

const execLogRules = `
- id: parent
  on: job
  mode: parallel
  when: {do: expr.expr, with: {expr: "n > 0"}}
  steps:
    - name: first
      do: log.log
      with: {message: "FIRST {{n}}"}
    - name: spawn
      do: fire.fire
      with: {rule: child, payload: {n: "{{n}}"}}
    - name: later
      after: 2s
      durable: true
      do: log.log
      with: {message: "FIRED {{n}}"}
- id: child
  on: fire.child
  steps:
    - name: note
      do: log.log
      with: {message: "CHILD {{n}}"}
- id: slow
  on: slow
  steps:
    - name: before
      do: log.log
      with: {message: "BEFORE {{n}}"}
    - name: busy
      do: gozoo.busy
      with: {ms: 60000}
    - name: after
      do: log.log
      with: {message: "AFTER {{n}}"}
`

// execLogFixture is the rules above with the plugins they use, and the
// flags that grant fire and give the busy step time to be killed in.
func execLogFixture(t *testing.T) []string {
	t.Helper()
	rules, plugins := fixture(t, execLogRules)
	for name, src := range map[string]string{"expr": "plugins/build/expr.wasm", "fire": "plugins/build/fire.wasm", "gozoo": "host/wasm/testdata/zoo/go"} {
		b, err := os.ReadFile(plugintest.Module(t, src))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(plugins, name+".wasm"), b, 0o644)
	}
	cfg := filepath.Join(t.TempDir(), "ruled.yaml")
	os.WriteFile(cfg, []byte("plugin:\n  fire: {grant: [fire]}\n  gozoo: {timeout: 2m, fuel: -1}\n"), 0o644)
	return []string{"--rules", rules, "--plugins", plugins, "--config", cfg}
}

// tree reads a run's tree through `ruled log tree --json` (from the daemon,
// or from the store when none runs).
func tree(t *testing.T, data string, extra []string, id string) []runlog.Row {
	t.Helper()
	code, out, errs := runCLI(t, "", append([]string{"log", "tree", id, "--json", "--data", data}, extra...)...)
	if code != 0 {
		t.Fatalf("log tree: exit %d: %s", code, errs)
	}
	var rows []runlog.Row
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// runsOf lists a rule's runs through `ruled log ls --json`.
func runsOf(t *testing.T, data string, extra []string, rule string) []runlog.Run {
	t.Helper()
	code, out, errs := runCLI(t, "", append([]string{"log", "ls", "--rule", rule, "--json", "--data", data}, extra...)...)
	if code != 0 {
		t.Fatalf("log ls: exit %d: %s", code, errs)
	}
	var runs []runlog.Run
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatal(err)
	}
	return runs
}

// waitTree polls a run's tree until ok says so.
func waitTree(t *testing.T, what string, read func() []runlog.Row, ok func([]runlog.Row) bool) []runlog.Row {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows := read()
		if ok(rows) {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s:\n%s", what, render(rows, false))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func render(rows []runlog.Row, stable bool) string {
	var b bytes.Buffer
	runlog.Render(&b, rows, stable)
	return b.String()
}

// lastNode is the last node row of a tree's top run.
func lastNode(rows []runlog.Row) *runlog.Node {
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Depth == 1 && rows[i].Node != nil {
			return rows[i].Node
		}
	}
	return nil
}

// TestExecLogSurvivesKill9: SIGKILL while a run waits out its durable
// delay; after the restart the run's tree is one whole tree — the nodes
// before the kill, the replay, the delay closed, the last step — with no
// node overwritten, on bbolt and on Redis.
func TestExecLogSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		args := append(execLogFixture(t), storeArgs()...)
		data := t.TempDir()
		a := startRuled(t, data, args...)
		a.post(`{"topic":"job","id":"e7","time":"2026-11-30T08:00:00Z","n":7}`)
		a.waitLog("CHILD 7", 1)
		a.waitPending(1)
		runs := runsOf(t, data, storeArgs(), "parent")
		if len(runs) != 1 {
			t.Fatalf("runs %+v", runs)
		}
		id := runs[0].ID
		read := func() []runlog.Row { return tree(t, data, storeArgs(), id) }
		waitTree(t, "the delay open", read, func(rows []runlog.Row) bool {
			n := lastNode(rows)
			return n != nil && n.Kind == runlog.KindDelay && n.Outcome == runlog.Open
		})
		a.kill()
		// With no daemon, the CLI reads the tree from the store.
		golden.Check(t, "tree-killed-waiting.txt", render(read(), true))
		b := startRuled(t, data, args...)
		b.waitLog("FIRED 7", 1)
		rows := waitTree(t, "the run's end", read, func(rows []runlog.Row) bool {
			return len(rows) > 0 && rows[0].Run != nil && rows[0].Run.Outcome == runlog.OK
		})
		golden.Check(t, "tree-after-kill.txt", render(rows, true))
		seqs := map[int]bool{}
		for _, r := range rows {
			if r.Depth == 1 && r.Node != nil {
				if seqs[r.Node.Seq] {
					t.Errorf("node %d twice", r.Node.Seq)
				}
				seqs[r.Node.Seq] = true
			}
		}
	})
}

// TestExecLogKilledMidStep: a process killed while a step runs leaves a
// readable partial tree with the step's node open; the next start marks
// the run interrupted and the open node with it.
func TestExecLogKilledMidStep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	args := execLogFixture(t)
	data := t.TempDir()
	a := startRuled(t, data, args...)
	a.post(`{"topic":"slow","id":"e1","time":"2026-11-30T08:00:00Z","n":1}`)
	a.waitLog("BEFORE 1", 1)
	var id string
	deadline := time.Now().Add(20 * time.Second)
	for id == "" && time.Now().Before(deadline) {
		if runs := runsOf(t, data, nil, "slow"); len(runs) == 1 {
			id = runs[0].ID
		}
	}
	read := func() []runlog.Row { return tree(t, data, nil, id) }
	waitTree(t, "the busy step open", read, func(rows []runlog.Row) bool {
		n := lastNode(rows)
		return n != nil && n.Name == "busy" && n.Outcome == runlog.Open
	})
	a.kill()
	partial := render(read(), true)
	golden.Check(t, "tree-killed-mid-step.txt", partial)
	b := startRuled(t, data, args...)
	b.waitLog("left running marked", 1)
	rows := waitTree(t, "the run marked", read, func(rows []runlog.Row) bool {
		return len(rows) > 0 && rows[0].Run.Outcome == runlog.Interrupted
	})
	golden.Check(t, "tree-interrupted.txt", render(rows, true))
	if strings.Contains(b.out.String()+a.out.String(), "AFTER 1") {
		t.Error("the step after the interrupted one ran")
	}
	code, out, _ := runCLI(t, "", "log", "ls", "--outcome", "interrupted", "--data", data)
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "1 run\n") {
		t.Errorf("log ls --outcome interrupted: %d\n%s", code, out)
	}
}

// TestExecLogKilledJustAfterTheStep: SIGKILL the moment durable steps ran,
// before the log (which writes within its Flush, 100 ms) has their end.
// The restart finds those runs open in the log with no record left: they
// went on, so they are marked unlogged with why — never "interrupted" with
// "nothing was waiting to resume it", which was false of them (outside
// testing saw ~2% of runs so marked although their step had run).
func TestExecLogKilledJustAfterTheStep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	rules, plugins := fixture(t, durableRules)
	data := t.TempDir()
	args := []string{"--rules", rules, "--plugins", plugins}
	a := startRuled(t, data, args...)
	a.post(events("u", 20)...)
	a.waitPending(20)
	a.waitLogWithin("FIRED u", 1, time.Minute)
	a.kill()
	fired := len(fired(a.out.String()))
	b := startRuled(t, data, args...)
	b.waitLog("FIRED u", 20-fired) // the rest replay
	b.waitNoPending()
	outcomes := map[string]int{}
	for _, r := range runsOf(t, data, nil, "later") {
		outcomes[r.Outcome]++
		if r.Outcome == runlog.Unlogged && !strings.Contains(r.Error, `durable delay "fire"`) {
			t.Errorf("run %s unlogged without its reason: %q", r.ID, r.Error)
		}
	}
	if outcomes[runlog.Interrupted] != 0 || outcomes[runlog.OK]+outcomes[runlog.Unlogged] != 20 {
		t.Errorf("outcomes %v; want 20 ok or unlogged, none interrupted", outcomes)
	}
	t.Logf("%d steps fired before the kill; outcomes after the restart: %v", fired, outcomes)
}

// TestLogWhy: `ruled log why RULE` from the real daemon says what the
// rule's condition saw for the triggers it said no to; with no daemon it
// says that the reasons live in the daemon.
func TestLogWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	args := execLogFixture(t)
	data := t.TempDir()
	a := startRuled(t, data, args...)
	for i := range 3 {
		a.post(fmt.Sprintf(`{"topic":"job","id":"no%d","time":"2026-11-30T08:00:00Z","n":%d}`, i, -i))
	}
	var ws []seq.WhyNot
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		code, out, errs := runCLI(t, "", "log", "why", "parent", "--json", "--data", data)
		if code != 0 {
			t.Fatalf("log why: exit %d: %s", code, errs)
		}
		if err := json.Unmarshal([]byte(out), &ws); err != nil {
			t.Fatal(err)
		}
		if len(ws) == 1 && ws[0].Count == 3 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(ws) != 1 || ws[0].Reason != "its condition said no" || ws[0].Count != 3 || len(ws[0].Last) != 3 ||
		ws[0].Last[0].EventID != "no2" || compactJSON(ws[0].Last[0].Values) != `{"n":-2}` {
		t.Fatalf("why not %+v", ws)
	}
	code, out, _ := runCLI(t, "", "log", "why", "parent", "--data", data)
	if code != 0 || !strings.Contains(out, "its condition said no: 3 triggers") || !strings.Contains(out, `saw {"n":-1}`) {
		t.Errorf("log why: exit %d:\n%s", code, out)
	}
	if code, _, errs := runCLI(t, "", "log", "why", "nope", "--data", data); code == 0 || !strings.Contains(errs, "nope") {
		t.Errorf("log why of an unknown rule: exit %d: %s", code, errs)
	}
	a.kill()
	if code, _, errs := runCLI(t, "", "log", "why", "parent", "--data", data); code == 0 || !strings.Contains(errs, "in memory") {
		t.Errorf("log why with no daemon: exit %d: %s", code, errs)
	}
}

// compactJSON is b without insignificant space (the API indents).
func compactJSON(b []byte) string {
	var c bytes.Buffer
	json.Compact(&c, b)
	return c.String()
}
