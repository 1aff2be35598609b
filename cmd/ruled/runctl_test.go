package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/host/runlog"
)

const runControlRules = `
- id: remind
  on: job
  key: n
  mode: parallel
  steps:
    - name: first
      do: log.log
      with: {message: "FIRST {{n}}"}
    - name: later
      after: 1h
      durable: true
      do: log.log
      with: {message: "LATER {{n}}"}
`

// TestRunControl: an operator runs a waiting step now, cancels a run,
// drops a waiting step and reruns a finished run, through the CLI and
// the real daemon; each leaves a node in the run's tree naming the uid
// that asked, read from the socket.
func TestRunControl(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	rules, plugins := fixture(t, runControlRules)
	data := t.TempDir()
	p := startRuled(t, data, "--rules", rules, "--plugins", plugins)
	uid := fmt.Sprintf("uid %d", os.Getuid())
	waitingRun := func(n int) string {
		t.Helper()
		p.post(fmt.Sprintf(`{"topic":"job","id":"e%d","time":"2026-11-30T08:00:00Z","n":%d}`, n, n))
		p.waitPending(1)
		return p.pending()[0].Run
	}
	ctl := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCLI(t, "", append(args, "--data", data)...)
		if code != want {
			t.Fatalf("%v: exit %d; want %d: %s%s", args, code, want, out, errs)
		}
		return out + errs
	}
	byNode := func(id string) *runlog.Node {
		t.Helper()
		var last *runlog.Node // a cancel's delay node says who, and the cancel node after it
		for _, r := range tree(t, data, nil, id) {
			if r.Node != nil && r.Node.By != "" {
				last = r.Node
			}
		}
		if last == nil {
			t.Fatalf("run %s: no node says who asked", id)
		}
		return last
	}

	first := waitingRun(1)
	if out := ctl(0, "pending", "now", first); !strings.Contains(out, "runs now (by "+uid+")") {
		t.Errorf("pending now said %q", out)
	}
	p.waitLog("LATER 1", 1)
	p.waitNoPending()
	if n := byNode(first); n.Kind != runlog.KindDelay || n.By != uid || !strings.Contains(n.Detail, "run now by "+uid) {
		t.Errorf("run now's node %+v", n)
	}

	second := waitingRun(2)
	ctl(0, "cancel", second)
	p.waitNoPending()
	if n := byNode(second); n.Kind != runlog.KindCancel || n.Detail != "cancelled by "+uid {
		t.Errorf("cancel's node %+v", n)
	}

	third := waitingRun(3)
	ctl(0, "pending", "drop", third)
	p.waitNoPending()
	if n := byNode(third); n.Kind != runlog.KindDrop || n.Detail != "dropped by "+uid {
		t.Errorf("drop's node %+v", n)
	}
	if runs := runsOf(t, data, nil, "remind"); len(runs) != 3 {
		t.Fatalf("runs %+v", runs)
	}

	out := ctl(0, "rerun", first)
	p.waitLog("FIRST 1", 2)
	p.waitPending(1)
	again := p.pending()[0].Run
	if !strings.Contains(out, "started again as "+again) {
		t.Errorf("rerun said %q; the new run is %s", out, again)
	}
	if n := byNode(again); n.Kind != runlog.KindTrigger || n.Detail != "rerun of "+first+" by "+uid || !strings.Contains(compactJSON(n.Input), `"n":1`) {
		t.Errorf("rerun's trigger node %+v", n)
	}

	// A paused rule's waiting step cannot be run now: it would be held.
	ctl(0, "rule", "pause", "remind")
	if out := ctl(1, "pending", "now", again); !strings.Contains(out, "rule remind is paused") {
		t.Errorf("run now while paused said %q", out)
	}
	ctl(0, "rule", "resume", "remind")

	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"cancel", first}, "no such live run"},
		{[]string{"pending", "now", "nope"}, "no such live run"},
		{[]string{"rerun", again}, "has not ended"},
		{[]string{"rerun", "0000"}, "no such run"},
	} {
		if out := ctl(1, tc.args...); !strings.Contains(out, tc.says) {
			t.Errorf("%v said %q; want %q", tc.args, out, tc.says)
		}
	}
}

// TestRerunTurnedAway: a rerun its rule turns away (the key still in its
// cooldown) is refused with the reason, not reported as a run that never
// comes.
func TestRerunTurnedAway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	rules, plugins := fixture(t, "- id: cool\n  on: job\n  key: n\n  cooldown: 1h\n  steps:\n    - do: log.log\n      with: {message: \"COOL {{n}}\"}\n")
	data := t.TempDir()
	p := startRuled(t, data, "--rules", rules, "--plugins", plugins)
	p.post(`{"topic":"job","id":"e1","n":1}`)
	p.waitLog("COOL 1", 1)
	runs := runsOf(t, data, nil, "cool")
	if len(runs) != 1 {
		t.Fatalf("runs %+v", runs)
	}
	code, out, errs := runCLI(t, "", "rerun", runs[0].ID, "--data", data)
	if code != exitFailed || !strings.Contains(out+errs, "turned the trigger away: its key is in the rule's cooldown") {
		t.Errorf("rerun in the cooldown: exit %d: %s%s", code, out, errs)
	}
}
