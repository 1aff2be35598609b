package seq

import (
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// TestAsideDropsTakeWhatAnOutageLeft: the records a store outage left
// behind are dropped with the next drop, an aside one included (a run
// that completed with no other drop in its move).
func TestAsideDropsTakeWhatAnOutageLeft(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.rule(rules.Rule{ID: "r", Key: "vehicle", Mode: rules.ModeParallel, Max: 10}, "limit+5m!")
	e.fire(s, `{"topic":"t","vehicle":"v1"}`)
	e.fire(s, `{"topic":"t","vehicle":"v2"}`)
	e.advance(time.Minute)
	e.fire(s, `{"topic":"t","vehicle":"v3"}`) // due a minute after the others
	e.h.SetDown(true)
	e.advance(4 * time.Minute)
	if n := e.rn.Counts().Undropped; n != 2 {
		t.Fatalf("undropped %d; want the two records the outage left", n)
	}
	e.h.SetDown(false)
	e.advance(time.Minute) // v3 completes: its record goes aside, and the two left with it
	e.settle()
	if e.h.Len(PendingHash) != 0 || e.rn.Counts().Undropped != 0 {
		t.Errorf("records %d, undropped %d; want none once the store is back", e.h.Len(PendingHash), e.rn.Counts().Undropped)
	}
}

// TestFinallyRecordSurvivesAParkInFlight: a durable run cancelled while
// the record of its wait is being written runs its finally steps once
// that write has answered, and their record — under the same id — is
// not removed by the park's answer: while a finally step runs, a crash
// would run it again.
func TestFinallyRecordSurvivesAParkInFlight(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.withFinally(e.rule(rules.Rule{ID: "valve", Key: "vehicle"}, "open", "close+10m!"), "safe")
	f := s.Finally[0].Action.(*act)
	done := e.gateAct(f)
	entered, release := e.h.HoldWrites()
	t.Cleanup(release)
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1"}`)})
	<-entered // close's record is being written
	id := e.onlyRun()
	if err := e.rn.Control(id, ControlCancel, "test"); err != nil { // it drops nothing: the finally steps' record replaces close's
		t.Fatal(err)
	}
	release()
	select {
	case <-f.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the finally step never ran")
	}
	e.quiet(1) // safe holds its worker; the rest has landed
	recs, err := e.rn.store.List()
	if err != nil || len(recs) != 1 || recs[0].ID != id || recs[0].Finally == "" {
		t.Errorf("while safe runs the store holds %+v (%v); want the finally steps' record", recs, err)
	}
	done()
	e.settle()
	if got, want := e.j.String(), "open:0:s1 safe:0:s1"; got != want {
		t.Errorf("journal %q; want %q", got, want)
	}
	if n := e.h.Len(PendingHash); n != 0 {
		t.Errorf("%d records once the run ended; want none", n)
	}
}

// TestCancelledWaitKeepsNoRecord: a run that took the event it waited
// for, and is cancelled while that is being recorded, leaves no record:
// the write that lands after the cancel's drop is dropped again.
func TestCancelledWaitKeepsNoRecord(t *testing.T) {
	for i := range 20 { // the drop and the write race: each order, many times
		e := newEnv(t, 2, 100)
		s := e.rule(rules.Rule{ID: "w", Key: "vehicle"}, "ask", "ack?ack/10m", "done")
		s.Steps[1].Durable = true
		e.fire(s, `{"topic":"t","vehicle":"v1"}`)
		if e.h.Len(PendingHash) != 1 {
			t.Fatalf("round %d: %d records while it waits; want 1", i, e.h.Len(PendingHash))
		}
		id := e.onlyRun()
		entered, release := e.h.HoldWrites()
		t.Cleanup(release)
		e.rn.Deliver("w", e.event(`{"topic":"ack","vehicle":"v1"}`), nil)
		<-entered // the event taken is being recorded
		go func() { _ = e.rn.Control(id, ControlCancel, "test") }()
		<-entered // the cancel's drop waits too
		release()
		e.settle()
		if n := e.h.Len(PendingHash); n != 0 {
			t.Fatalf("round %d: %d records after the cancel; want none", i, n)
		}
	}
}

// TestRunningCountsOverlappingSteps: a step's end is carried out after
// the next step was handed on, so the next may begin first; a cancel
// then must still see a step of the run on a worker, and its finally
// steps wait for it.
func TestRunningCountsOverlappingSteps(t *testing.T) {
	for i := range 20 {
		e := newEnv(t, 2, 100)
		s := e.withFinally(e.rule(rules.Rule{ID: "valve", Key: "vehicle"}, "open", "more"), "safe")
		b := s.Steps[1].Action.(*act)
		done := e.gateAct(b)
		began := make(chan struct{})
		e.rn.beforeOver = sync.OnceFunc(func() { <-began }) // open's end waits for more to begin
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1"}`)})
		<-b.entered
		close(began)
		e.quiet(1) // open's worker is done with it: only more is on a worker
		id := e.onlyRun()
		if err := e.rn.Control(id, ControlCancel, "test"); err != nil {
			t.Fatal(err)
		}
		e.quiet(1)
		if got := e.j.String(); got != "open:0:s1" {
			t.Fatalf("round %d: journal %q while more runs; want its finally step to wait", i, got)
		}
		done()
		e.settle()
		if got, want := e.j.String(), "open:0:s1 more:0:s1 safe:0:s1"; got != want {
			t.Fatalf("round %d: journal %q; want %q", i, got, want)
		}
	}
}

// TestDebounceUnderConcurrentTriggers: a debounce's timers fire (without
// the runner's lock) while later triggers of its key replace the held one
// (under it), and the burst still ends in a run. Run with -race: what a
// timer's job needs is read when the timer is armed.
func TestDebounceUnderConcurrentTriggers(t *testing.T) {
	e := newEnv(t, 2, 1000)
	s := e.rule(rules.Rule{ID: "d", Key: "vehicle", Debounce: rules.Debounce{For: time.Second}}, "a")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"v1"}`), Waited: true})
		}
	}()
	for range 200 {
		e.clk.Advance(time.Second)
	}
	<-done
	e.settle() // every admission in: the last trigger's quiet period armed
	e.advance(time.Second)
	if st := e.rn.RuleStats("d"); st.Started == 0 {
		t.Errorf("stats %+v: a quiet period ended, and no run started", st)
	}
}

// onlyRun is the id of the one run the runner has.
func (e *env) onlyRun() string {
	e.t.Helper()
	var ids []string
	e.rn.view(func() {
		for id := range e.rn.m.runs {
			ids = append(ids, id)
		}
	})
	if len(ids) != 1 {
		e.t.Fatalf("%d runs; want one", len(ids))
	}
	return ids[0]
}

// gateAct makes a's calls wait (a.entered hears the first) until the
// returned func is called, or the test ends: a failure must not leave a
// worker held.
func (e *env) gateAct(a *act) (release func()) {
	a.gate, a.entered = make(chan struct{}), make(chan struct{}, 1)
	release = sync.OnceFunc(func() { close(a.gate) })
	e.t.Cleanup(release)
	return release
}
