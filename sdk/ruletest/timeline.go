package ruletest

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/host/runlog"
)

func (h *Harness) note(text string) {
	h.mu.Lock()
	h.notes = append(h.notes, note{h.clk.Now(), text})
	h.mu.Unlock()
}

// observe is the daemon's Config.ObserveAction.
func (h *Harness) observe(c observe.ActionCall) {
	h.mu.Lock()
	h.actions = append(h.actions, Action{ActionCall: c, At: h.clk.Now()})
	h.mu.Unlock()
}

// Actions returns the action calls of steps whose plugin.function (Do),
// step name or rule is what, in the order they were made; "" returns them
// all. A step that ran twice (a repeat, a retry, a replay after a crash
// mid-action) is there twice, with the same idempotency key when it was a
// repeat delivery.
func (h *Harness) Actions(what string) []Action {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Action
	for _, a := range h.actions {
		if what == "" || a.Do == what || a.Step == what || a.Rule == what {
			out = append(out, a)
		}
	}
	return out
}

// ExpectActions fails the test unless exactly n action calls match what
// (see Actions).
func (h *Harness) ExpectActions(what string, n int) []Action {
	h.t.Helper()
	got := h.Actions(what)
	if len(got) != n {
		h.fail("ruletest: %d action calls of %s; want %d.", len(got), what, n)
	}
	return got
}

// fail reports a failed expectation with the timeline beside it.
func (h *Harness) fail(format string, args ...any) {
	h.t.Helper()
	h.t.Errorf("%s\n%s", fmt.Sprintf(format, args...), h.Timeline())
}

// Timeline is what happened, in virtual-clock order: the test's own steps
// (», publishes, restarts, upgrades, commands), what the rules published
// («), the action calls (·) and each run's log — start, steps, delays,
// cancels, drops with their reasons (▸). Failures print it; a test may
// log it.
func (h *Harness) Timeline() string {
	type line struct {
		at   time.Time
		n    int
		text string
	}
	var lines []line
	add := func(at time.Time, text string) { lines = append(lines, line{at, len(lines), text}) }
	h.mu.Lock()
	for _, n := range h.notes {
		add(n.at, n.text)
	}
	for _, a := range h.actions {
		res := "ok"
		if a.Err != nil {
			res = "error: " + a.Err.Error()
		}
		add(a.At, fmt.Sprintf("· action %s/%s %s pass %d key %s: %s", a.Rule, a.Step, a.Do, a.Pass, short(a.Key), res))
	}
	h.mu.Unlock()
	if h.d != nil {
		runs, err := h.d.Runs(runlog.Filter{Limit: 1000})
		if err != nil {
			add(h.clk.Now(), "(the execution log could not be read: "+err.Error()+")")
		}
		num := map[string]int{}
		for i := len(runs) - 1; i >= 0; i-- { // oldest first: #1 is the first run
			num[runs[i].ID] = len(num) + 1
		}
		for i := len(runs) - 1; i >= 0; i-- {
			r := runs[i]
			name := fmt.Sprintf("run #%d %s", num[r.ID], r.Rule)
			rows, err := h.d.RunTree(r.ID)
			if err != nil {
				continue
			}
			for _, row := range rows {
				if row.Node == nil || row.Node.Run != r.ID { // sub-runs are listed as runs of their own
					continue
				}
				n := row.Node
				text := fmt.Sprintf("▸ %s: %s", name, n.Kind)
				if n.Name != "" {
					text += " " + n.Name
				}
				if n.Do != "" {
					text += " " + n.Do
				}
				text += " " + n.Outcome
				if row.Interrupted {
					text += " (interrupted)"
				}
				if n.Error != "" {
					text += ": " + n.Error
				} else if n.Detail != "" && n.Kind != runlog.KindTrigger {
					text += ": " + n.Detail
				}
				add(n.Started, text)
			}
			if r.Outcome != runlog.Running {
				add(r.Ended, fmt.Sprintf("▸ %s ended %s %s", name, r.Outcome, r.Error))
			}
		}
	}
	sort.SliceStable(lines, func(i, j int) bool {
		if !lines[i].at.Equal(lines[j].at) {
			return lines[i].at.Before(lines[j].at)
		}
		return lines[i].n < lines[j].n
	})
	var b strings.Builder
	b.WriteString("timeline (virtual time since the start):\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "  %10s  %s\n", "+"+l.at.Sub(h.opts.Start).String(), strings.TrimSpace(l.text))
	}
	return b.String()
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
