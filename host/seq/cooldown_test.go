package seq

import (
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// TestCooldownSurvivesRestart: a key in its rule's cooldown is still in
// it after a restart (issue 37, 6: a 24 h cooldown notified again 3 h
// later, after a restart), another key is not, and the cooldown ends when
// it says; the stored state goes once it is over.
func TestCooldownSurvivesRestart(t *testing.T) {
	e := newEnv(t, 2, 100)
	rule := rules.Rule{ID: "notify", Key: "vehicle", Cooldown: 24 * time.Hour}
	e.fire(e.rule(rule, "send"), `{"topic":"t","vehicle":"s1"}`)
	if n := e.h.Len(CooldownHash); n != 1 {
		t.Fatalf("%d cooldowns kept; want s1's", n)
	}
	e.advance(3 * time.Hour)
	e.restart()
	s := e.rule(rule, "send")
	e.rn.Replay([]*Sequence{s}, time.Hour)
	e.fire(s, `{"topic":"t","vehicle":"s1"}`) // in its cooldown
	e.fire(s, `{"topic":"t","vehicle":"s2"}`) // another key: none
	if got, want := e.j.String(), "send:0:s1 send:0:s2"; got != want {
		t.Errorf("journal %q; want %q", got, want)
	}
	if st := e.rn.RuleStats("notify"); st.Suppressed != 1 {
		t.Errorf("stats %+v; want one trigger suppressed by the cooldown", st)
	}
	e.advance(21 * time.Hour) // s1's cooldown over
	e.restart()
	s = e.rule(rule, "send")
	e.rn.Replay([]*Sequence{s}, time.Hour)
	if n := e.h.Len(CooldownHash); n != 1 {
		t.Errorf("%d cooldowns kept; want only s2's, s1's over", n)
	}
	e.fire(s, `{"topic":"t","vehicle":"s1"}`)
	if got, want := e.j.String(), "send:0:s1 send:0:s2 send:0:s1"; got != want {
		t.Errorf("journal %q; want %q", got, want)
	}
}
