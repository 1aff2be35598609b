package seq

import (
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// TestThrottle: a burst of five triggers against limit 2 per minute,
// burst 2: two start at once, the rest one every 30s, oldest first
// (excess: queue); the key's state survives a restart; with excess: drop
// the rest are suppressed.
func TestThrottle(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.rule(rules.Rule{ID: "th", Mode: rules.ModeParallel, Max: 100,
		Throttle: rules.Throttle{Limit: 2, Per: time.Minute, Burst: 2}}, "go")
	// One after another at the same instant: fired together, two
	// workers may admit them in either order, and "oldest first" is the
	// order they were admitted in.
	for _, v := range []string{"a", "b", "c", "d", "e"} {
		e.fire(s, `{"topic":"t","vehicle":"`+v+`"}`)
	}
	if got := e.j.String(); got != "go:0:a go:0:b" && got != "go:0:b go:0:a" {
		t.Fatalf("at once: %q; want two", got)
	}
	if st := e.rn.RuleStats("th"); st.Throttled != 3 {
		t.Errorf("throttled %d; want 3 waiting", st.Throttled)
	}
	e.j.got = nil
	e.advance(30 * time.Second)
	e.advance(30 * time.Second)
	e.advance(30 * time.Second)
	if got := e.j.String(); got != "go:0:c go:0:d go:0:e" {
		t.Errorf("then %q; want c, d, e one every 30s, in order", got)
	}
	// The state survives a restart: two more at once use the allowance up.
	e.advance(2 * time.Minute)
	e.j.got = nil
	e.fire(s, `{"topic":"t","vehicle":"f"}`)
	e.fire(s, `{"topic":"t","vehicle":"g"}`)
	if e.h.Len(ThrottleHash) != 1 {
		t.Fatalf("%d throttle states kept; want the key at its limit", e.h.Len(ThrottleHash))
	}
	e.restart()
	s = e.rule(rules.Rule{ID: "th", Mode: rules.ModeParallel, Max: 100,
		Throttle: rules.Throttle{Limit: 2, Per: time.Minute, Burst: 2}}, "go")
	e.rn.Replay([]*Sequence{s}, time.Hour)
	e.fire(s, `{"topic":"t","vehicle":"h"}`)
	if got := e.j.String(); got != "go:0:f go:0:g" {
		t.Errorf("after the restart: %q; want h to wait (no fresh burst)", got)
	}
	e.advance(30 * time.Second)
	if got := e.j.String(); got != "go:0:f go:0:g go:0:h" {
		t.Errorf("%q; want h after 30s", got)
	}
	// excess: drop
	e2 := newEnv(t, 2, 100)
	s2 := e2.rule(rules.Rule{ID: "th", Mode: rules.ModeParallel, Max: 100,
		Throttle: rules.Throttle{Limit: 1, Per: time.Minute, Burst: 1, Drop: true}}, "go")
	for _, v := range []string{"a", "b", "c"} {
		e2.fire(s2, `{"topic":"t","vehicle":"`+v+`"}`)
	}
	e2.advance(2 * time.Minute)
	if got, st := e2.j.String(), e2.rn.RuleStats("th"); got != "go:0:a" || st.Suppressed != 2 {
		t.Errorf("drop: %q, stats %+v; want a only, 2 suppressed", got, st)
	}
}
