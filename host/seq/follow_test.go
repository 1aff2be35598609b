package seq

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
)

// kill is a SIGKILL: a new process over the store as it is now. The
// killed runner's steps still on a worker go on, writing into a store that
// nobody reads any more.
func (e *env) kill() {
	e.h = e.h.Snapshot()
	e.pool = pool.New(pool.Config{Workers: 2})
	e.rn = e.newRunner()
}

// hold makes s's step name block on a worker until the test ends, and
// returns a channel that receives when it has started.
func (e *env) hold(s *Sequence, name string) <-chan struct{} {
	e.t.Helper()
	for i := range s.Steps {
		if a, ok := s.Steps[i].Action.(*act); ok && a.name == name {
			a.gate, a.entered = make(chan struct{}), make(chan struct{}, 1)
			e.t.Cleanup(func() { close(a.gate) })
			return a.entered
		}
	}
	e.t.Fatalf("no step %s", name)
	return nil
}

// advanceUntil advances the clock by d at a time, at most ten times,
// until the held step has started.
func (e *env) advanceUntil(d time.Duration, entered <-chan struct{}) {
	e.t.Helper()
	for range 10 {
		if e.clkAdvanced(d, entered) {
			return
		}
	}
	e.t.Fatal("the held step never started")
}

// TestStepsAfterADurablePointSurviveAKill: once a run has passed a
// durable step, its record follows it to each later step, so a kill during
// any of them runs that step again at the next start, and the rest after
// it (issue 37, 3: the step after `after: 1s, durable: true` never ran
// again, 5 of 5 trials). A kill before the durable point loses nothing the
// journal does not keep: that is the trigger's ticket, not this test's.
func TestStepsAfterADurablePointSurviveAKill(t *testing.T) {
	for _, tc := range []struct {
		victim string
		want   string
	}{
		{"c", "a:0: b:0: c:0: d:0:"},
		{"d", "a:0: b:0: c:0: d:0:"},
	} {
		t.Run("kill during "+tc.victim, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			rule := rules.Rule{ID: "r"}
			steps := []string{"a", "b+1m!", "c", "d+10s"}
			s := e.rule(rule, steps...)
			entered := e.hold(s, tc.victim)
			e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t"}`)})
			e.advanceUntil(time.Minute, entered)
			e.kill()
			if n := e.h.Len(PendingHash); n != 1 {
				t.Fatalf("%d records at the kill during %s; want the run's", n, tc.victim)
			}
			if n := e.rn.Replay([]*Sequence{e.rule(rule, steps...)}, time.Hour); n != 1 {
				t.Fatalf("replayed %d runs; want 1", n)
			}
			e.advance(0)
			e.advance(10 * time.Second)
			if got := e.j.String(); got != tc.want {
				t.Errorf("journal %q; want %q", got, tc.want)
			}
			if n := e.h.Len(PendingHash); n != 0 {
				t.Errorf("%d records left after the run ended", n)
			}
		})
	}
}

// clkAdvanced advances the clock by d, then waits until the runner is
// quiet or the held step has entered (taking its word), and reports
// whether it entered. A held step keeps the runner from being quiet.
func (e *env) clkAdvanced(d time.Duration, entered <-chan struct{}) bool {
	e.t.Helper()
	e.clk.Advance(d)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	quiet, rn := make(chan error, 1), e.rn // the test may kill e's runner once entered
	go func() { quiet <- rn.Quiet(ctx, 0) }()
	select {
	case <-entered:
		return true
	case err := <-quiet:
		if err != nil {
			e.t.Fatal("neither settled nor entered")
		}
		return false
	}
}

// TestStopCutsAFailingStep: a step that fails while the runner is
// stopping — its publish refused by a daemon going down — is nobody's
// error (issue 37, 1: a normal SIGTERM stored a rule failed): not counted
// against the rule, its record kept, and run again at the next start.
func TestStopCutsAFailingStep(t *testing.T) {
	e := newEnv(t, 2, 100)
	var errs atomic.Int32
	e.configure(func(c *RunnerConfig) { c.OnError = func(string, error) { errs.Add(1) } })
	rule := rules.Rule{ID: "r"}
	steps := []string{"a+1m!", "b"}
	s := e.rule(rule, steps...)
	b := s.Steps[1].Action.(*act)
	entered := e.hold(s, "b")
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t"}`)})
	e.advanceUntil(time.Minute, entered)
	e.rn.Stop()
	b.fail = true // its publish is refused: the daemon is stopping
	b.gate <- struct{}{}
	e.settle()
	if n := errs.Load(); n != 0 {
		t.Errorf("the rule was told of %d errors; a stop is nobody's error", n)
	}
	if st := e.rn.RuleStats("r"); st.Errors != 0 || st.Failed != 0 {
		t.Errorf("stats %+v; want no error and no failed run", st)
	}
	if n := e.h.Len(PendingHash); n != 1 {
		t.Fatalf("%d records after the stop; want b's", n)
	}
	e.restart()
	if n := e.rn.Replay([]*Sequence{e.rule(rule, steps...)}, time.Hour); n != 1 {
		t.Fatalf("replayed %d runs; want 1", n)
	}
	e.advance(0)
	if got, want := e.j.String(), "a:0: b:0: b:0:"; got != want {
		t.Errorf("journal %q; want %q (b cut by the stop, then run again)", got, want)
	}
	if n := e.h.Len(PendingHash); n != 0 {
		t.Errorf("%d records left after the run ended", n)
	}
}
