package seq

import (
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// withFinally adds finally steps (names, journaling as act does) to s.
func (e *env) withFinally(s *Sequence, names ...string) *Sequence {
	for i, name := range names {
		st := rules.Step{Name: name, Index: i, Do: rules.Call{Plugin: "p", Function: name, With: []byte("{}")}}
		s.Rule.Finally = append(s.Rule.Finally, st)
		s.Finally = append(s.Finally, CompiledStep{Name: name, Action: &act{j: e.j, name: name},
			Fingerprint: st.Fingerprint(), Digest: "d1"})
	}
	return s
}

// TestFinally: finally steps run, in order, when a run ends for any cause
// but a stop — done, failed, cancelled while it waits, dropped — after the
// run's own steps, and the run counts as it ended.
func TestFinally(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *env, s *Sequence)
		act   func(e *env, s *Sequence)
		want  string
		stats func(RuleStats) bool
	}{
		{"completed", nil, func(e *env, s *Sequence) { e.advance(10 * time.Minute) },
			"open:0:s1 close:0:s1 safe:0:s1 tell:0:s1", func(st RuleStats) bool { return st.Completed == 1 }},
		{"cancelled while waiting", nil, func(e *env, s *Sequence) {
			e.advance(time.Minute)
			e.rn.CancelMatching(e.event(`{"topic":"stop","vehicle":"s1"}`))
			e.settle()
			e.advance(10 * time.Minute)
		}, "open:0:s1 safe:0:s1 tell:0:s1", func(st RuleStats) bool { return st.Cancelled == 1 }},
		{"dropped: its rule killed", nil, func(e *env, s *Sequence) {
			e.rn.EndRule("valve", "killed")
			e.settle()
			e.advance(10 * time.Minute)
		}, "open:0:s1 safe:0:s1 tell:0:s1", func(st RuleStats) bool { return st.Dropped == 1 }},
		{"failed", func(e *env, s *Sequence) { s.Steps[0].Action.(*act).fail = true }, nil,
			"open:0:s1 safe:0:s1 tell:0:s1", func(st RuleStats) bool { return st.Failed == 1 }},
		{"a finally step fails: the next runs, the run failed", func(e *env, s *Sequence) { s.Finally[0].Action.(*act).fail = true },
			func(e *env, s *Sequence) { e.advance(10 * time.Minute) },
			"open:0:s1 close:0:s1 safe:0:s1 tell:0:s1", func(st RuleStats) bool { return st.Failed == 1 && st.Errors == 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			s := e.withFinally(e.rule(rules.Rule{ID: "valve", Key: "vehicle", CancelOn: []rules.Cancel{{Pattern: "stop"}}},
				"open", "close+10m!"), "safe", "tell")
			if tt.setup != nil {
				tt.setup(e, s)
			}
			e.fire(s, `{"topic":"t","vehicle":"s1"}`)
			if tt.act != nil {
				tt.act(e, s)
			}
			if got := e.j.String(); got != tt.want {
				t.Errorf("journal %q; want %q", got, tt.want)
			}
			if st := e.rn.RuleStats("valve"); !tt.stats(st) || st.Active != 0 {
				t.Errorf("stats %+v", st)
			}
			if e.h.Len(PendingHash) != 0 {
				t.Errorf("%d records left", e.h.Len(PendingHash))
			}
		})
	}
}

// TestFinallyAfterRunningStep: a run cancelled while a step of its own is
// on a worker runs its finally steps once that step returns, never beside
// it: the valve is closed after it was opened.
func TestFinallyAfterRunningStep(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.withFinally(e.rule(rules.Rule{ID: "valve", Key: "vehicle", CancelOn: []rules.Cancel{{Pattern: "stop"}}},
		"open", "more"), "safe")
	a := s.Steps[0].Action.(*act)
	a.gate, a.entered = make(chan struct{}), make(chan struct{}, 1)
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1"}`)})
	<-a.entered
	if n := e.rn.CancelMatching(e.event(`{"topic":"stop"}`)); n != 1 {
		t.Fatalf("cancelled %d; want 1", n)
	}
	e.quiet(1) // a finally step beside open would journal now
	if got := e.j.String(); got != "" {
		t.Fatalf("journal %q before open returned", got)
	}
	close(a.gate)
	e.settle()
	if got, want := e.j.String(), "open:0:s1 safe:0:s1"; got != want {
		t.Errorf("journal %q; want %q (more is not run: the run was cancelled)", got, want)
	}
}

// TestFinallyHoldsTheSlot: a restart-mode trigger that ends a run with
// finally steps starts its own run after them, the newest trigger winning;
// a single-mode trigger while they run is suppressed.
func TestFinallyHoldsTheSlot(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.withFinally(e.rule(rules.Rule{ID: "valve", Key: "vehicle", Mode: rules.ModeRestart}, "open", "close+10m"), "safe")
	f := s.Finally[0].Action.(*act)
	f.gate, f.entered = make(chan struct{}), make(chan struct{}, 1)
	e.fire(s, `{"topic":"t","vehicle":"s1","n":"1"}`)
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1","n":"2"}`)})
	<-f.entered // the first run's finally step holds the slot
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1","n":"3"}`)})
	e.quiet(1) // its admission decided: a run started would have run open
	if got := e.j.String(); got != "open:0:s1" {
		t.Fatalf("journal %q while the finally step runs; want the first open only", got)
	}
	close(f.gate)
	e.settle()
	e.advance(10 * time.Minute)
	if got, want := e.j.String(), "open:0:s1 safe:0:s1 open:0:s1 close:0:s1 safe:0:s1"; got != want {
		t.Errorf("journal %q; want %q", got, want)
	}
	if st := e.rn.RuleStats("valve"); st.Started != 2 || st.Cancelled != 1 || st.Completed != 1 || st.Suppressed != 1 {
		t.Errorf("stats %+v; want 2 started (the 3rd trigger superseding the 2nd), 1 cancelled, 1 completed", st)
	}
}

// TestFinallyNotOnStop: a run let go because the process stops does not
// run its finally steps: it is not over, and goes on after the restart.
func TestFinallyNotOnStop(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.withFinally(e.rule(rules.Rule{ID: "valve", Key: "vehicle"}, "open", "close+10m!"), "safe")
	e.fire(s, `{"topic":"t","vehicle":"s1"}`)
	e.restart()
	s = e.withFinally(e.rule(rules.Rule{ID: "valve", Key: "vehicle"}, "open", "close+10m!"), "safe")
	if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 1 {
		t.Fatalf("replayed %d", n)
	}
	e.advance(10 * time.Minute)
	if got, want := e.j.String(), "open:0:s1 close:0:s1 safe:0:s1"; got != want {
		t.Errorf("journal %q; want %q", got, want)
	}
}

// TestFinallyRecorded: a durable run's finally steps are recorded while
// they run, and a record a crashed process left runs them again at the
// next start, from the first, then goes.
func TestFinallyRecorded(t *testing.T) {
	e := newEnv(t, 2, 100)
	rule := rules.Rule{ID: "valve", Key: "vehicle", CancelOn: []rules.Cancel{{Pattern: "stop"}}}
	s := e.withFinally(e.rule(rule, "open", "close+10m!"), "safe", "tell")
	f := s.Finally[0].Action.(*act)
	f.gate, f.entered = make(chan struct{}), make(chan struct{}, 1)
	e.fire(s, `{"topic":"t","vehicle":"s1"}`)
	e.rn.CancelMatching(e.event(`{"topic":"stop"}`))
	<-f.entered
	recs, _ := e.rn.store.List()
	if len(recs) != 1 || recs[0].Finally != "cancelled" || recs[0].Step != "safe" {
		t.Fatalf("records while the finally steps run: %+v; want one naming them", recs)
	}
	close(f.gate)
	e.settle()
	if e.h.Len(PendingHash) != 0 {
		t.Fatalf("%d records after the finally steps ran", e.h.Len(PendingHash))
	}
	// The process died in the middle of them: the record is back.
	if err := e.rn.store.Put(recs[0]); err != nil {
		t.Fatal(err)
	}
	e.restart()
	e.j.got = nil
	s = e.withFinally(e.rule(rule, "open", "close+10m!"), "safe", "tell")
	if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 1 {
		t.Fatalf("replayed %d; want the run's finally steps", n)
	}
	e.settle()
	if got := e.j.String(); got != "safe:0:s1 tell:0:s1" {
		t.Errorf("journal %q; want the finally steps again", got)
	}
	if st := e.rn.RuleStats("valve"); st.Cancelled != 1 || st.Active != 0 {
		t.Errorf("stats %+v; want the run ended cancelled", st)
	}
	if e.h.Len(PendingHash) != 0 {
		t.Errorf("%d records left", e.h.Len(PendingHash))
	}
}
