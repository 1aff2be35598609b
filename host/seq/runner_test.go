package seq

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
)

func TestModes(t *testing.T) {
	tests := []struct {
		name   string
		rule   rules.Rule
		fires  int
		want   string // journal after every step finished
		stats  RuleStats
		refuse uint64
	}{
		{"single ignores triggers while a run is live",
			rules.Rule{ID: "r", Mode: rules.ModeSingle}, 3,
			"a:0: b:0:", RuleStats{Started: 1, Completed: 1, Suppressed: 2}, 0},
		{"restart cancels the tail and starts anew",
			rules.Rule{ID: "r", Mode: rules.ModeRestart}, 3,
			"a:0: a:0: a:0: b:0:", RuleStats{Started: 3, Completed: 1, Cancelled: 2}, 0},
		// max counts the live run with the queued ones, as Home Assistant
		// does: max 2 is one running and one waiting; the third is refused,
		// counted for the rule and the runner.
		{"queue runs them one after another, bounded",
			rules.Rule{ID: "r", Mode: rules.ModeQueue, Max: 2}, 3,
			"a:0: b:0: a:0: b:0:", RuleStats{Started: 2, Completed: 2, Refused: 1}, 1},
		{"parallel runs up to max at once",
			rules.Rule{ID: "r", Mode: rules.ModeParallel, Max: 2}, 3,
			"a:0: a:0: b:0: b:0:", RuleStats{Started: 2, Completed: 2, Refused: 1}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			s := e.rule(tc.rule, "a", "b+1m")
			for i := 0; i < tc.fires; i++ {
				e.fire(s, `{"topic":"t"}`)
			}
			e.advance(time.Minute)
			e.advance(time.Minute) // a queued run's own wait
			if got := e.j.String(); got != tc.want {
				t.Errorf("journal %q; want %q", got, tc.want)
			}
			if got := e.rn.RuleStats("r"); got != tc.stats {
				t.Errorf("stats %+v; want %+v", got, tc.stats)
			}
			if e.rn.Counts().Refused != tc.refuse {
				t.Errorf("refused %d; want %d", e.rn.Counts().Refused, tc.refuse)
			}
			if e.rn.Counts().Active != 0 {
				t.Errorf("%d runs still active", e.rn.Counts().Active)
			}
		})
	}
}

func TestModeIsPerKey(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.rule(rules.Rule{ID: "r", Mode: rules.ModeSingle, Key: "vehicle"}, "a", "b+1m")
	e.fire(s, `{"topic":"t","vehicle":"s1"}`)
	e.fire(s, `{"topic":"t","vehicle":"s2"}`)
	e.fire(s, `{"topic":"t","vehicle":"s1"}`) // suppressed: s1 is live
	if e.rn.Counts().Active != 2 {
		t.Fatalf("active %d; want 2 (one per vehicle)", e.rn.Counts().Active)
	}
	e.advance(time.Minute)
	if st := e.rn.RuleStats("r"); st.Started != 2 || st.Suppressed != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestFailingConditionTakesNoSlotAndNoCooldown(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.rule(rules.Rule{ID: "r", Cooldown: time.Hour}, "a")
	c := &cond{field: "go"}
	s.When = c
	e.fire(s, `{"topic":"t","go":"false"}`)
	e.fire(s, `{"topic":"t"}`) // the condition errs: counted, no slot
	e.fire(s, `{"topic":"t","go":"true"}`)
	e.fire(s, `{"topic":"t","go":"true"}`) // within the cooldown
	if got := e.j.String(); got != "a:0:" {
		t.Errorf("journal %q; want one run", got)
	}
	st := e.rn.RuleStats("r")
	if st.Started != 1 || st.Errors != 1 || st.Suppressed != 1 {
		t.Errorf("stats %+v; want 1 start, 1 error, 1 suppressed", st)
	}
	e.advance(time.Hour)
	e.fire(s, `{"topic":"t","go":"true"}`)
	if got := e.j.String(); got != "a:0: a:0:" {
		t.Errorf("after the cooldown: journal %q", got)
	}
}

func TestRepeat(t *testing.T) {
	e := newEnv(t, 1, 100)
	s := e.rule(rules.Rule{ID: "alarm", Repeat: rules.Repeat{Passes: 3, Interval: time.Minute}}, "beep")
	e.fire(s, `{"topic":"t"}`)
	if got := e.j.String(); got != "beep:0:" {
		t.Fatalf("journal %q", got)
	}
	if e.rn.Counts().Active != 1 {
		t.Error("a run between passes is not active")
	}
	e.advance(time.Minute)
	e.advance(time.Minute)
	if got := e.j.String(); got != "beep:0: beep:1: beep:2:" {
		t.Errorf("journal %q", got)
	}
	if st := e.rn.RuleStats("alarm"); st.Started != 1 || st.Completed != 1 || st.Active != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestCancelOn(t *testing.T) {
	e := newEnv(t, 2, 100)
	plain := e.rule(rules.Rule{ID: "p", Mode: rules.ModeParallel,
		CancelOn: []rules.Cancel{{Pattern: "charger.*"}}}, "a", "b+5m!")
	corr := e.rule(rules.Rule{ID: "c", Mode: rules.ModeParallel, Key: "vehicle",
		CancelOn: []rules.Cancel{{Pattern: "lock.opened", Match: []string{"vehicle"}}}}, "a", "b+5m!")
	e.fire(plain, `{"topic":"t","vehicle":"s1"}`)
	e.fire(plain, `{"topic":"t","vehicle":"s2"}`)
	e.fire(corr, `{"topic":"t","vehicle":"s1"}`)
	e.fire(corr, `{"topic":"t","vehicle":"s2"}`)
	if e.h.Len(PendingHash) != 4 {
		t.Fatalf("%d records; want 4 waiting", e.h.Len(PendingHash))
	}
	if n := e.rn.CancelMatching(e.event(`{"topic":"lock.opened","vehicle":"s1"}`)); n != 1 {
		t.Errorf("correlated cancel ended %d runs; want 1 (s1 of rule c)", n)
	}
	if n := e.rn.CancelMatching(e.event(`{"topic":"charger.connected","vehicle":"s9"}`)); n != 2 {
		t.Errorf("plain cancel ended %d runs; want 2", n)
	}
	if n := e.rn.CancelMatching(e.event(`{"topic":"unrelated"}`)); n != 0 {
		t.Errorf("an unrelated event cancelled %d", n)
	}
	e.advance(5 * time.Minute)
	if got := e.j.String(); strings.Count(got, "b:") != 1 || !strings.Contains(got, "b:0:s2") {
		t.Errorf("journal %q; want only rule c's s2 to reach b", got)
	}
	if e.h.Len(PendingHash) != 0 {
		t.Errorf("%d records left; cancels and fires remove theirs", e.h.Len(PendingHash))
	}
	if st := e.rn.RuleStats("p"); st.Cancelled != 2 || st.Completed != 0 {
		t.Errorf("p stats %+v", st)
	}
}

// TestCancelLeavesQueuedStepsToRun: a step already waiting in the pool
// queue still runs after a cancel, and the tail after it does not.
func TestCancelLeavesQueuedStepsToRun(t *testing.T) {
	e := newEnv(t, 1, 100)
	s := e.rule(rules.Rule{ID: "r", Mode: rules.ModeParallel, CancelOn: []rules.Cancel{{Pattern: "stop"}}}, "a+1m", "b")
	e.fire(s, `{"topic":"t","vehicle":"v1"}`)
	e.fire(s, `{"topic":"t","vehicle":"v2"}`)
	gate, entered := make(chan struct{}), make(chan struct{})
	e.pool.Submit(pool.Job{Run: func() { close(entered); <-gate }})
	<-entered
	e.clk.Advance(time.Minute) // both a steps are due: into the pool queue, behind the blocker
	if q := e.pool.Stats().Queued; q != 2 {
		t.Fatalf("%d jobs queued; want the two due steps", q)
	}
	if n := e.rn.CancelMatching(e.event(`{"topic":"stop"}`)); n != 2 {
		t.Fatalf("cancelled %d; want 2", n)
	}
	close(gate)
	e.settle()
	if got := e.j.String(); got != "a:0:v1 a:0:v2" {
		t.Errorf("journal %q; want both queued steps and neither tail", got)
	}
}

func TestCancelDuringStepStopsTail(t *testing.T) {
	e := newEnv(t, 1, 100)
	a := &act{j: e.j, name: "a", gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	s := e.rule(rules.Rule{ID: "r", Mode: rules.ModeQueue, Max: 3, CancelOn: []rules.Cancel{{Pattern: "stop"}}}, "a", "b")
	s.Steps[0].Action = a
	other := e.rule(rules.Rule{ID: "o"}, "o1")
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"first"}`)})
	<-a.entered // step a of the first run is on the only worker
	// Queued in the pool behind it: the admissions of two more triggers of
	// r and one of o.
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"q1"}`)})
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"q2"}`)})
	e.rn.Fire(Trigger{Seq: other, Event: e.event(`{"topic":"t"}`)})
	if n := e.rn.CancelMatching(e.event(`{"topic":"stop"}`)); n != 1 {
		t.Fatalf("cancel ended %d runs; want 1 (the live one)", n)
	}
	close(a.gate) // the step on the worker finishes
	e.settle()
	// The step on the worker ran; its tail (b) did not. The admissions that
	// were waiting in the pool queue still ran: they found no live run and
	// started new ones (the cancel came before them).
	got := e.j.String()
	if strings.Contains(got, "b:0:first") {
		t.Errorf("journal %q: the cancelled run's tail ran", got)
	}
	if !strings.HasPrefix(got, "a:0:first") || !strings.Contains(got, "o1:0:") {
		t.Errorf("journal %q: want the step on the worker and the other rule's step", got)
	}
}

func TestCancelDropsQueuedTriggersUncounted(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.rule(rules.Rule{ID: "r", Mode: rules.ModeQueue, Max: 5, CancelOn: []rules.Cancel{{Pattern: "stop"}}}, "a", "b+1m")
	for i := 0; i < 4; i++ {
		e.fire(s, `{"topic":"t"}`)
	}
	if e.rn.Counts().Active != 1 {
		t.Fatalf("active %d; want 1: queued triggers are not active", e.rn.Counts().Active)
	}
	if n := e.rn.CancelMatching(e.event(`{"topic":"stop"}`)); n != 1 {
		t.Errorf("cancelled %d; want 1 (the queued three are not counted)", n)
	}
	e.advance(5 * time.Minute)
	if got := e.j.String(); got != "a:0:" {
		t.Errorf("journal %q: queued triggers ran after the cancel", got)
	}
	if st := e.rn.RuleStats("r"); st.Started != 1 || st.Cancelled != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestActiveCountsParkedRuns(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.rule(rules.Rule{ID: "r", Mode: rules.ModeParallel, Max: 100}, "a+1h")
	for i := 0; i < 5; i++ {
		e.fire(s, `{"topic":"t"}`)
	}
	if e.rn.Counts().Active != 5 || e.clk.Len() != 5 {
		t.Errorf("active %d, timers %d; want 5 parked runs", e.rn.Counts().Active, e.clk.Len())
	}
	e.advance(time.Hour)
	if e.rn.Counts().Active != 0 {
		t.Errorf("active %d after they ran", e.rn.Counts().Active)
	}
}

func TestFailedStepEndsRun(t *testing.T) {
	e := newEnv(t, 1, 100)
	s := e.rule(rules.Rule{ID: "r"}, "a", "b")
	s.Steps[0].Action = &act{j: e.j, name: "a", fail: true}
	e.fire(s, `{"topic":"t"}`)
	if got := e.j.String(); got != "a:0:" {
		t.Errorf("journal %q", got)
	}
	if st := e.rn.RuleStats("r"); st.Failed != 1 || st.Errors != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestStepCondition(t *testing.T) {
	e := newEnv(t, 1, 100)
	s := e.rule(rules.Rule{ID: "r"}, "a", "b", "c")
	s.Steps[1].When = &cond{field: "go"}
	e.fire(s, `{"topic":"t","go":"false"}`)
	e.fire(s, `{"topic":"t","go":"true"}`)
	if got := e.j.String(); got != "a:0: c:0: a:0: b:0: c:0:" {
		t.Errorf("journal %q", got)
	}
}

// TestBurstOnTinyPool: one worker and a queue of one under a burst: no
// deadlock, and only new triggers are refused — steps of admitted runs and
// timer fires never are.
func TestBurstOnTinyPool(t *testing.T) {
	e := newEnv(t, 1, 1)
	s := e.rule(rules.Rule{ID: "r", Mode: rules.ModeParallel, Max: 1000}, "a", "b+1s", "c")
	for i := 0; i < 200; i++ {
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t"}`)})
	}
	e.settle()
	started := e.rn.RuleStats("r").Started
	if started == 0 || started == 200 {
		t.Fatalf("started %d of 200; want some admitted and some refused", started)
	}
	if got := e.pool.Refused(); got+started != 200 {
		t.Errorf("refused %d + started %d != 200", got, started)
	}
	e.advance(time.Second)
	if st := e.rn.RuleStats("r"); st.Completed != started || st.Active != 0 {
		t.Errorf("stats %+v: every admitted run must finish", st)
	}
	if n := strings.Count(e.j.String(), "c:0:"); uint64(n) != started {
		t.Errorf("%d runs reached c; want %d", n, started)
	}
}

// TestFailingStepWarningsFolded: a step that fails on every event is
// warned about at most once a second per rule and step, with the count
// it folded, while every failure is still counted (issue 38: a plugin
// failing at 1,500 runs/s wrote a warning a run).
func TestFailingStepWarningsFolded(t *testing.T) {
	e := newEnv(t, 2, 0)
	s := e.rule(rules.Rule{ID: "flaky", Mode: rules.ModeParallel, Max: 1000}, "call")
	s.Steps[0].Action = failAction{}
	start := time.Now()
	for i := range 200 {
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","id":"e` + strconv.Itoa(i) + `"}`)})
	}
	e.settle()
	took := time.Since(start)
	if st := e.rn.RuleStats("flaky"); st.Failed != 200 {
		t.Fatalf("stats %+v; want 200 failed runs", st)
	}
	if n, most := e.log.Count("step failed"), 1+int(took/time.Second)+1; n == 0 || n > most {
		t.Errorf("%d warnings for 200 failures in %v; want 1 to %d (once a second)", n, took, most)
	}
}

// TestMaxKeys: whoever sends the events chooses the keys (issue 38:
// 184,000 debounce keys took a device to 561 MB). A rule holds at most
// MaxKeys keys: a trigger of a new key past it is refused and counted,
// while keys it holds still run; keys that hold nothing any more are
// forgotten, and new ones come in again. The debounced keys are bounded
// the same way.
func TestMaxKeys(t *testing.T) {
	e := newEnv(t, 2, 1000)
	s := e.rule(rules.Rule{ID: "parked", Key: "k", Mode: rules.ModeParallel, MaxKeys: 100}, "wait+1h")
	for i := range 150 {
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","k":"` + strconv.Itoa(i) + `"}`)})
	}
	e.settle()
	st := e.rn.RuleStats("parked")
	if st.Active != 100 || st.RefusedKeys != 50 || st.Keys != 100 {
		t.Fatalf("stats %+v; want 100 runs of 100 keys, 50 new keys refused", st)
	}
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","k":"7"}`)}) // a key it holds
	e.settle()
	if st := e.rn.RuleStats("parked"); st.Active != 101 {
		t.Errorf("a trigger of a key the rule holds: active %d; want 101", st.Active)
	}
	if !e.log.Has("its key is new and the rule holds max-keys keys") {
		t.Error("no warning says a new key was refused")
	}
	e.advance(time.Hour) // every run ends: their keys hold nothing
	for i := 200; i < 250; i++ {
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","k":"` + strconv.Itoa(i) + `"}`)})
	}
	e.settle()
	if st := e.rn.RuleStats("parked"); st.Active != 50 || st.RefusedKeys != 50 {
		t.Errorf("after the keys went idle: %+v; want the 50 new keys taken", st)
	}

	d := e.rule(rules.Rule{ID: "flap", Key: "k", MaxKeys: 10, Debounce: rules.Debounce{For: time.Minute}}, "alert")
	for i := range 30 {
		e.rn.Fire(Trigger{Seq: d, Event: e.event(`{"topic":"t","k":"` + strconv.Itoa(i) + `"}`)})
	}
	e.settle()
	if st := e.rn.RuleStats("flap"); st.RefusedKeys != 20 || st.Keys != 10 {
		t.Errorf("debounce: %+v; want 10 keys held, 20 refused", st)
	}

	// A debounced trigger was taken within the bound when it came: its
	// release is not refused, though the keys with runs are at the bound.
	l := e.rule(rules.Rule{ID: "late", Key: "k", Mode: rules.ModeParallel, MaxKeys: 2, Debounce: rules.Debounce{For: time.Minute}}, "long+1h")
	e.rn.Fire(Trigger{Seq: l, Event: e.event(`{"topic":"t","k":"a"}`)})
	e.settle()
	e.advance(time.Minute) // a's run starts, and parks for an hour
	for _, k := range []string{"b", "c"} {
		e.rn.Fire(Trigger{Seq: l, Event: e.event(`{"topic":"t","k":"` + k + `"}`)})
	}
	e.settle()
	e.advance(time.Minute)
	if st := e.rn.RuleStats("late"); st.Active != 3 || st.RefusedKeys != 0 {
		t.Errorf("debounced triggers released past the bound: %+v; want 3 runs, none refused", st)
	}
}
