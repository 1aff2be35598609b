package seq

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/rules"
)

// TestWhyNot: every trigger a rule starts no run for is counted under its
// reason and the last WhyNotKeep kept, newest first, with what a condition
// that said no saw.
func TestWhyNot(t *testing.T) {
	tests := []struct {
		name  string
		rule  rules.Rule
		steps []string
		gate  *fakeGate
		// events fired in order; {n} is the event's number
		events []string
		want   string // reason:count:event ids of the last, newest first
	}{
		{"condition said no", rules.Rule{ID: "r", Key: "vehicle"}, []string{"a"}, nil,
			[]string{`{"topic":"t","id":"e{n}","vehicle":"s1","go":"no"}`},
			"its condition said no:12:e12 e11 e10 e9 e8 e7 e6 e5 e4 e3"},
		{"cooldown", rules.Rule{ID: "r", Key: "vehicle", Cooldown: time.Hour}, []string{"a"}, nil,
			[]string{`{"topic":"t","id":"e{n}","vehicle":"s1","go":"true"}`},
			"its key is in the rule's cooldown:11:e12 e11 e10 e9 e8 e7 e6 e5 e4 e3"},
		{"single with a run live", rules.Rule{ID: "r", Key: "vehicle", Mode: rules.ModeSingle}, []string{"a+1h"}, nil,
			[]string{`{"topic":"t","id":"e{n}","vehicle":"s1","go":"true"}`},
			"a run of its key is live (mode single):11:e12 e11 e10 e9 e8 e7 e6 e5 e4 e3"},
		{"debounced", rules.Rule{ID: "r", Key: "vehicle", Debounce: rules.Debounce{For: time.Minute}}, []string{"a"}, nil,
			[]string{`{"topic":"t","id":"e{n}","vehicle":"s1","go":"true"}`},
			"a later trigger of its key replaced it (debounce):11:e11 e10 e9 e8 e7 e6 e5 e4 e3 e2"},
		{"paused", rules.Rule{ID: "r", Key: "vehicle"}, []string{"a"}, &fakeGate{hold: true},
			[]string{`{"topic":"t","id":"e{n}","vehicle":"s1","go":"true"}`},
			"the rule is paused or asleep (on-pause: drop):12:e12 e11 e10 e9 e8 e7 e6 e5 e4 e3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			if tc.gate != nil {
				e.configure(func(c *RunnerConfig) { c.Gate = tc.gate })
			}
			s := e.rule(tc.rule, tc.steps...)
			s.When = &cond{field: "go"}
			s.WhenValues = mustTmpl(t, map[string]any{"go": "{{go}}", "vehicle": "{{vehicle}}"})
			for n := 1; n <= 12; n++ {
				for _, ev := range tc.events {
					e.fire(s, strings.ReplaceAll(ev, "{n}", fmt.Sprint(n)))
				}
			}
			ws := e.rn.WhyNot("r")
			if len(ws) != 1 {
				t.Fatalf("reasons %+v; want one", ws)
			}
			w := ws[0]
			var ids []string
			for _, ns := range w.Last {
				ids = append(ids, ns.EventID)
				if ns.Key != "s1" || ns.Topic != "t" || !strings.Contains(string(ns.Event), `"id":"`+ns.EventID+`"`) {
					t.Errorf("kept %+v", ns)
				}
				if w.Reason == whyFalse && string(ns.Values) != `{"go":"no","vehicle":"s1"}` {
					t.Errorf("values %s", ns.Values)
				}
				if w.Reason != whyFalse && ns.Values != nil {
					t.Errorf("values %s for %s", ns.Values, w.Reason)
				}
			}
			if got := fmt.Sprintf("%s:%d:%s", w.Reason, w.Count, strings.Join(ids, " ")); got != tc.want {
				t.Errorf("why not %s; want %s", got, tc.want)
			}
			if e.rn.WhyNot("other") == nil || len(e.rn.WhyNot("other")) != 0 {
				t.Error("a rule with nothing turned away has reasons")
			}
		})
	}
}

// fixedStates is a StateReader of fixed states, reported an hour ago.
type fixedStates map[string]string

func (f fixedStates) State(id string) ([]byte, time.Time, bool) {
	b, ok := f[id]
	return []byte(b), time.Time{}, ok
}

// TestWhyNotSawContext: a condition that said no is shown with what it
// saw below states., previous. and sun. as it was when it said no, not
// as nothing (the event alone has none of them).
func TestWhyNotSawContext(t *testing.T) {
	e := newEnv(t, 2, 100)
	e.configure(func(c *RunnerConfig) {
		c.States = fixedStates{"door.front": `{"open":false}`}
		c.Sun = func(time.Time) []byte { return []byte(`{"elevation":-4.5}`) }
	})
	s := e.rule(rules.Rule{ID: "r"}, "a")
	s.States = []StateRead{{Name: "door", Entity: mustText(t, "door.front")}}
	s.Previous, s.Sun = true, true
	s.When = &cond{field: "go"}
	s.WhenValues = mustTmpl(t, map[string]any{"door": "{{states.door.open}}", "was": "{{previous.watts}}", "sun": "{{sun.elevation}}"})
	ev := e.event(`{"topic":"t","id":"e1","go":"no","watts":3}`)
	ev.Prior = []byte(`{"watts":120}`)
	e.rn.Fire(Trigger{Seq: s, Event: ev})
	e.settle()
	ws := e.rn.WhyNot("r")
	if len(ws) != 1 || len(ws[0].Last) != 1 {
		t.Fatalf("why not %+v", ws)
	}
	if got := string(ws[0].Last[0].Values); got != `{"door":false,"sun":-4.5,"was":120}` {
		t.Errorf("saw %s; want the states, previous and the sun it read", got)
	}
}

func mustText(t *testing.T, s string) *tmpl.Template {
	t.Helper()
	tp, err := tmpl.Text(s)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// TestDeepStateInContext: a state nested as deep as an event may be is
// read as any other, and does not cost the run its other states: the
// context puts it two levels below its root.
func TestDeepStateInContext(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64)
	if _, err := new(abi.ViewBuilder).Append(nil, []byte(deep), false); err != nil {
		t.Fatalf("the deep state is not an event the host takes: %v", err)
	}
	e := newEnv(t, 2, 100)
	e.configure(func(c *RunnerConfig) {
		c.States = fixedStates{"deep": deep, "door.front": `{"open":true}`}
	})
	s := e.outputs(rules.Rule{ID: "r"}, `a||states.door.open states.deep.a.a.a`)
	s.States = []StateRead{{Name: "deep", Entity: mustText(t, "deep")}, {Name: "door", Entity: mustText(t, "door.front")}}
	e.fire(s, `{"topic":"t"}`)
	want := `a,states.door.open=true,states.deep.a.a.a=` + strings.Repeat(`{"a":`, 61) + "1" + strings.Repeat("}", 61)
	if got := e.j.String(); got != want {
		t.Errorf("journal %.80q…; want both states read", got)
	}
}
