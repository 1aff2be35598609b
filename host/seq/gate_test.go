package seq

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// fakeGate is a Gate set by hand: the rule's verdict for new runs and for
// due steps.
type fakeGate struct {
	mu    sync.Mutex
	admit bool
	hold  bool
	drop  string
}

func (g *fakeGate) Admits(string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.admit
}

func (g *fakeGate) Due(string) (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hold, g.drop
}

func (g *fakeGate) set(admit, hold bool, drop string) {
	g.mu.Lock()
	g.admit, g.hold, g.drop = admit, hold, drop
	g.mu.Unlock()
}

func TestGate(t *testing.T) {
	tests := []struct {
		name string
		// after the first step ran, the gate turns to admit/hold/drop
		admit bool
		hold  bool
		drop  string
		// then the clock moves wait, ReleaseHeld runs with window
		wait, window time.Duration
		want         string // journal
		held         int    // Held before the release
		dropped      string // reason counted in Dropped, if any
	}{
		{"runnable: the step runs when due", true, false, "", 0, time.Hour,
			"a:0: b:0:", 0, ""},
		{"paused: the due step waits, then runs on release", false, true, "", 10 * time.Minute, time.Hour,
			"a:0: b:0:", 1, ""},
		{"paused past the window: the held step is dropped", false, true, "", 2 * time.Hour, time.Hour,
			"a:0:", 1, DropHeldTooLong},
		{"killed: the due step is dropped with the gate's reason", false, false, "rule killed", 0, time.Hour,
			"a:0:", 0, "rule killed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			g := &fakeGate{admit: true}
			e.configure(func(c *RunnerConfig) { c.Gate = g })
			s := e.rule(rules.Rule{ID: "r"}, "a", "b+1m!")
			e.fire(s, `{"topic":"t"}`)
			if e.h.Len(PendingHash) != 1 {
				t.Fatalf("%d records; want b's", e.h.Len(PendingHash))
			}
			g.set(tc.admit, tc.hold, tc.drop)
			e.advance(time.Minute)
			if got := e.rn.Held("r"); got != tc.held {
				t.Fatalf("held %d; want %d", got, tc.held)
			}
			e.advance(tc.wait)
			g.set(true, false, "")
			e.rn.ReleaseHeld("r", tc.window)
			e.settle()
			if got := e.j.String(); got != tc.want {
				t.Errorf("journal %q; want %q", got, tc.want)
			}
			if e.h.Len(PendingHash) != 0 || e.rn.Counts().Active != 0 || e.rn.Held("r") != 0 {
				t.Errorf("records %d, active %d, held %d; want none",
					e.h.Len(PendingHash), e.rn.Counts().Active, e.rn.Held("r"))
			}
			if tc.dropped != "" && e.rn.Counts().Dropped[tc.dropped] != 1 {
				t.Errorf("dropped %v; want one %q", e.rn.Counts().Dropped, tc.dropped)
			}
		})
	}
}

func TestGateRefusesNewRuns(t *testing.T) {
	e := newEnv(t, 2, 100)
	g := &fakeGate{}
	e.configure(func(c *RunnerConfig) { c.Gate = g })
	s := e.rule(rules.Rule{ID: "r"}, "a")
	e.fire(s, `{"topic":"t"}`)
	if e.j.String() != "" {
		t.Fatalf("a refused rule ran: %q", e.j.String())
	}
	if st := e.rn.RuleStats("r"); st.Refused != 1 || st.Suppressed != 0 || st.Started != 0 {
		t.Errorf("stats %+v; want one trigger refused by the gate", st)
	}
	g.set(true, false, "")
	e.fire(s, `{"topic":"t"}`)
	if e.j.String() != "a:0:" {
		t.Errorf("journal %q after the gate opened", e.j.String())
	}
}

func TestGateHooks(t *testing.T) {
	e := newEnv(t, 2, 100)
	var mu sync.Mutex
	var errs, done []string
	e.configure(func(c *RunnerConfig) {
		c.OnError = func(rule string, err error) {
			mu.Lock()
			errs = append(errs, rule+": "+err.Error())
			mu.Unlock()
		}
		c.OnComplete = func(rule string) {
			mu.Lock()
			done = append(done, rule)
			mu.Unlock()
		}
	})
	ok := e.rule(rules.Rule{ID: "ok"}, "a")
	bad := e.rule(rules.Rule{ID: "bad"}, "a")
	bad.Steps[0].Action = &act{j: e.j, name: "a", fail: true}
	e.fire(ok, `{"topic":"t"}`)
	e.fire(bad, `{"topic":"t"}`)
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(done, ",") != "ok" {
		t.Errorf("completed %v; want ok only", done)
	}
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "bad: ") {
		t.Errorf("errors %v; want one for bad", errs)
	}
}

func TestReplayDropsRecordsTheGateRefuses(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.rule(rules.Rule{ID: "r"}, "a", "b+1m!")
	e.fire(s, `{"topic":"t"}`)
	e.restart()
	e.configure(func(c *RunnerConfig) { c.Gate = &fakeGate{drop: "rule failed"} })
	s = e.rule(rules.Rule{ID: "r"}, "a", "b+1m!")
	if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 0 {
		t.Fatalf("replayed %d; want the failed rule's record dropped", n)
	}
	if e.h.Len(PendingHash) != 0 || e.rn.Counts().Dropped["rule failed"] != 1 {
		t.Errorf("records %d, dropped %v", e.h.Len(PendingHash), e.rn.Counts().Dropped)
	}
}

// TestGateHoldsTriggers: a paused rule with on-pause: hold keeps the
// triggers that arrive, up to its bound, their Done callbacks not
// called (a journal keeps their events); past the bound one is refused,
// and logged. The release admits them in order; a stop abandons them; a
// rule that ends (killed) drops them, settled.
func TestGateHoldsTriggers(t *testing.T) {
	// One worker: the release submits the held triggers in order, and
	// with two workers their admissions (and so their settling) could
	// finish in either order.
	e := newEnv(t, 1, 100)
	g := &fakeGate{admit: false, hold: true} // paused
	e.configure(func(c *RunnerConfig) { c.Gate = g })
	s := e.rule(rules.Rule{ID: "r", Mode: rules.ModeQueue, OnPause: rules.PauseTriggers{Hold: true, Max: 2}}, "a")
	var mu sync.Mutex
	var settled []string
	for _, n := range []string{"1", "2", "3"} {
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","n":"` + n + `"}`), Done: func() {
			mu.Lock()
			settled = append(settled, n)
			mu.Unlock()
		}})
	}
	e.settle()
	st := e.rn.RuleStats("r")
	mu.Lock()
	if e.j.String() != "" || st.HeldTriggers != 2 || st.Refused != 1 || strings.Join(settled, ",") != "3" {
		t.Fatalf("paused: journal %q, stats %+v, settled %v; want nothing run, 2 held, the third refused and settled",
			e.j.String(), st, settled)
	}
	mu.Unlock()
	if !e.log.Has("rule holds a trigger") || !e.log.Has("as many triggers as on-pause allows") {
		t.Errorf("log %v; want the hold and the overflow said", e.log.Lines())
	}
	g.set(true, false, "")
	if n := e.rn.ReleaseHeld("r", time.Hour); n != 2 {
		t.Errorf("released %d; want 2 triggers", n)
	}
	e.settle()
	mu.Lock()
	if e.j.String() != "a:0: a:0:" || strings.Join(settled, ",") != "3,1,2" || e.rn.RuleStats("r").HeldTriggers != 0 {
		t.Errorf("released: journal %q, settled %v; want both run, in order", e.j.String(), settled)
	}
	mu.Unlock()

	// Dropped with the rule, or kept by a stop.
	g.set(false, true, "")
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","n":"4"}`), Done: func() { mu.Lock(); settled = append(settled, "4"); mu.Unlock() }})
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","n":"5"}`), Done: func() { mu.Lock(); settled = append(settled, "5"); mu.Unlock() }})
	e.settle()
	e.rn.EndRule("r", "rule killed")
	e.rn.Stop()
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(settled, ",") != "3,1,2,4,5" {
		t.Errorf("settled %v after the rule ended; want 4 and 5 settled (dropped)", settled)
	}
}

// TestOnPauseDropLogsAndCounts: a paused rule without on-pause: hold
// refuses its triggers, counts them and says so, once per spell.
func TestOnPauseDropLogsAndCounts(t *testing.T) {
	e := newEnv(t, 2, 100)
	e.configure(func(c *RunnerConfig) { c.Gate = &fakeGate{admit: false, hold: true} })
	s := e.rule(rules.Rule{ID: "r"}, "a")
	for range 5 {
		e.fire(s, `{"topic":"t"}`)
	}
	if st := e.rn.RuleStats("r"); st.Refused != 5 || st.HeldTriggers != 0 {
		t.Errorf("stats %+v; want 5 refused", st)
	}
	if n := e.log.Count("rule turned a trigger away"); n != 1 {
		t.Errorf("%d log lines for 5 refusals within a minute; want 1: %v", n, e.log.Lines())
	}
	e.clk.Advance(2 * time.Minute)
	e.fire(s, `{"topic":"t"}`)
	if n := e.log.Count("rule turned a trigger away"); n != 2 {
		t.Errorf("%d log lines after a minute more; want 2", n)
	}
}
