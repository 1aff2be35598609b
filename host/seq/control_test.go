package seq

import (
	"errors"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq/core"
)

// liveRun is the id of the env's one live run.
func liveRun(t *testing.T, e *env) string {
	t.Helper()
	e.rn.mu.Lock()
	defer e.rn.mu.Unlock()
	if len(e.rn.m.runs) != 1 {
		t.Fatalf("%d live runs; want 1", len(e.rn.m.runs))
	}
	for id := range e.rn.m.runs {
		return id
	}
	return ""
}

// TestRunControl: an operator cancels a run waiting on a durable step,
// runs its step now, or drops it; each leaves its node in the tree with
// who asked, and the run's record goes with it.
func TestRunControl(t *testing.T) {
	tests := []struct {
		name    string
		do      func(rn *Runner, id string) error
		journal string // steps run, once the hour has passed
		stats   RuleStats
		node    string // kind: detail (by) of the node the control left
	}{
		{"cancel", func(rn *Runner, id string) error { return rn.Control(id, ControlCancel, "uid 1000") },
			"a:0:s1 f:0:s1", RuleStats{Started: 1, Cancelled: 1}, "cancel: cancelled by uid 1000 (uid 1000)"},
		{"run now", func(rn *Runner, id string) error { return rn.Control(id, ControlNow, "token ops") },
			"a:0:s1 b:0:s1 f:0:s1", RuleStats{Started: 1, Completed: 1}, "delay: after 1h0m0s (durable); run now by token ops (token ops)"},
		{"drop", func(rn *Runner, id string) error { return rn.Control(id, ControlDrop, "uid 0") },
			"a:0:s1 f:0:s1", RuleStats{Started: 1, Dropped: 1}, "drop: dropped by uid 0 (uid 0)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			tr := &recTracer{}
			e.configure(func(c *RunnerConfig) { c.Tracer = tr })
			s := e.withFinally(e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "a", "b+1h!"), "f")
			e.fire(s, `{"topic":"t","vehicle":"s1"}`)
			id := liveRun(t, e)
			if e.h.Len(PendingHash) != 1 {
				t.Fatalf("%d records; want the durable step's", e.h.Len(PendingHash))
			}
			if err := tc.do(e.rn, id); err != nil {
				t.Fatal(err)
			}
			e.settle()
			if err := tc.do(e.rn, id); !errors.Is(err, ErrNoRun) {
				t.Errorf("the same control again: %v; want ErrNoRun", err)
			}
			e.advance(2 * time.Hour)
			if got := e.j.String(); got != tc.journal {
				t.Errorf("journal %q; want %q", got, tc.journal)
			}
			st := e.rn.RuleStats("r")
			st.Active = 0
			if st != tc.stats {
				t.Errorf("stats %+v; want %+v", st, tc.stats)
			}
			if n := e.h.Len(PendingHash); n != 0 {
				t.Errorf("%d records left", n)
			}
			var last string // the node the control left: the last that says who asked
			for _, n := range tr.nodes() {
				if n.By != "" {
					last = n.Kind + ": " + n.Detail + " (" + n.By + ")"
				}
			}
			if last != tc.node {
				t.Errorf("node %q; want %q (nodes %+v)", last, tc.node, tr.nodes())
			}
			if tc.name == "run now" {
				for _, n := range tr.nodes() {
					if n.Kind == runlog.KindDelay && n.Outcome != runlog.OK {
						t.Errorf("delay node %+v", n)
					}
				}
			}
		})
	}
}

// TestRunControlRefused: a run that waits for no step cannot have one run
// now or dropped, and a run that is not live cannot be controlled.
func TestRunControlRefused(t *testing.T) {
	e := newEnv(t, 2, 100)
	gate := make(chan struct{})
	s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "a")
	a := &act{j: e.j, name: "a", gate: gate, entered: make(chan struct{}, 1)}
	s.Steps[0].Action = a
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1"}`)})
	<-a.entered
	id := liveRun(t, e)
	if err := e.rn.Control(id, ControlNow, "me"); !errors.Is(err, ErrNotWaiting) {
		t.Errorf("run now of a running step: %v", err)
	}
	if err := e.rn.Control(id, ControlDrop, "me"); !errors.Is(err, ErrNotWaiting) {
		t.Errorf("drop of a running step: %v", err)
	}
	close(gate)
	e.settle()
	for _, c := range []Control{ControlCancel, ControlNow, ControlDrop} {
		if err := e.rn.Control("nope", c, "me"); !errors.Is(err, ErrNoRun) {
			t.Errorf("control %d of no run: %v", c, err)
		}
	}
}

// TestRunControlWhileParking: a run now or a drop that comes while the
// run writes its record (listed already, its timer not yet armed) is
// carried out once the record is down, not refused as "not waiting":
// an operator who saw the record in `ruled pending ls` may act at once.
func TestRunControlWhileParking(t *testing.T) {
	tests := []struct {
		name    string
		do      func(rn *Runner, id string) error
		journal string
		stats   RuleStats
	}{
		{"run now", func(rn *Runner, id string) error { return rn.Control(id, ControlNow, "uid 7") },
			"a:0:s1 b:0:s1", RuleStats{Started: 1, Completed: 1}},
		{"drop", func(rn *Runner, id string) error { return rn.Control(id, ControlDrop, "uid 7") },
			"a:0:s1", RuleStats{Started: 1, Dropped: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "a", "b+1h!")
			entered, release := e.h.HoldWrites() // the record's write waits
			defer release()
			e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1"}`)})
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the run never wrote its record")
			}
			var id string
			e.rn.mu.Lock()
			for rid, r := range e.rn.m.runs {
				if r.Hand == core.HandParking {
					id = rid
				}
			}
			e.rn.mu.Unlock()
			if id == "" {
				t.Fatal("a run writes its record, and none is parking")
			}
			err := tc.do(e.rn, id)
			release()
			if err != nil {
				t.Fatalf("control while parking: %v", err)
			}
			e.settle()
			e.advance(2 * time.Hour)
			if got := e.j.String(); got != tc.journal {
				t.Errorf("journal %q; want %q", got, tc.journal)
			}
			st := e.rn.RuleStats("r")
			st.Active = 0
			if st != tc.stats {
				t.Errorf("stats %+v; want %+v", st, tc.stats)
			}
			if n := e.h.Len(PendingHash); n != 0 {
				t.Errorf("%d records left", n)
			}
		})
	}
}
