package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestContextRefs: a condition or a template that reads steps.<name> must
// name a step that runs before it, and vars.<name> a variable; the error
// is at the name's place inside the string.
func TestContextRefs(t *testing.T) {
	ok := `
- id: depot
  on: ride.end
  steps:
    - {name: ask, do: p.a, with: {url: "https://d/{{vehicle}}"}}
    - name: book
      when: steps.ask.free && steps?.ask.n > 1
      do: p.a
      with: {url: "https://d/{{ steps.ask.slot }}", body: {bay: "{{steps.ask.bay}}", n: [1, "{{steps.ask.n}}"]}}
    - {name: done, do: p.b, with: {topic: "t.{{steps.book.id}}.{{steps}}"}}
  finally:
    - {do: p.b, with: {a: "{{steps.done.topic}}"}}
    - {do: p.b, with: {a: "{{steps.finally-0.topic}}"}}
`
	if _, errs := ParseFile("d.yaml", []byte(ok), nil); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	tests := []struct{ name, rule, err string }{
		{"a typo in a template",
			"  steps:\n    - {name: ask, do: p.a}\n    - {name: book, do: p.a, with: {url: \"x/{{steps.aks.slot}}\"}}\n",
			`r.yaml:5:46: steps.aks: no step named "aks" runs before step book (hint: did you mean steps.ask? steps.<name> is the output of an earlier step (ask), never an event's own field named steps (that is read only whole, as steps))`},
		{"a later step in a condition",
			"  steps:\n    - {name: ask, do: p.a, when: \"steps.book.id == 1\"}\n    - {name: book, do: p.a}\n",
			`r.yaml:4:35: steps.book: step "book" runs after step ask, so its output is not there yet (hint: a step sees the outputs of the steps before it (none: it is the first))`},
		{"itself",
			"  steps:\n    - {name: ask, do: p.a, with: {x: \"{{steps.ask.x}}\"}}\n",
			`steps.ask: no step named "ask" runs before step ask`},
		{"the rule's condition",
			"  when: steps.ask.free\n  steps:\n    - {name: ask, do: p.a}\n",
			`r.yaml:3:9: steps.ask: step "ask" runs after the rule's condition (it runs before any step)`},
		{"a variable the rule does not have",
			"  steps:\n    - {name: ask, do: p.a, with: {x: \"{{ vars.zone }}\"}}\n",
			`r.yaml:4:42: vars.zone: the rule has no variable "zone" (hint: declare it in the rule's vars: (it has none))`},
		{"a block string",
			"  steps:\n    - name: ask\n      do: p.a\n      with:\n        msg: |\n          hello\n          {{steps.nope}}\n",
			`r.yaml:9:13: steps.nope: no step named "nope" runs before step ask`},
		{"a finally step's condition",
			"  steps:\n    - {name: ask, do: p.a}\n  finally:\n    - {do: p.a, when: \"steps.later.x\"}\n    - {name: later, do: p.a}\n",
			`steps.later: no step named "later" runs before finally step finally-0`},
	}
	refused(t, tests)
}

// refused checks that each rule (the lines after "- id: r", "on: t") is
// refused with an error holding err.
func refused(t *testing.T, tests []struct{ name, rule, err string }) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, errs := ParseFile("r.yaml", []byte("- id: r\n  on: t\n"+tc.rule), nil)
			if joined := errText(errs); !strings.Contains(joined, tc.err) {
				t.Errorf("errors %q; want %q", joined, tc.err)
			}
			if len(rs) != 0 {
				t.Error("a refused rule loaded")
			}
		})
	}
}

// TestVarsParse: vars: is a mapping of names to values; its strings may
// read the trigger but not steps or other variables; steps read them as
// vars.<name>.
func TestVarsParse(t *testing.T) {
	rs, errs := ParseFile("v.yaml", []byte(`
- id: valve
  on: flow.start
  vars:
    zone: "{{data.zone}}"
    limit: 20
    label: "valve {{data.zone}}"
  steps:
    - {name: open, do: p.a, with: {topic: "valve.{{vars.zone}}", max: "{{vars.limit}}"}}
  finally:
    - {do: p.a, when: "vars.limit > 10"}
`), nil)
	if len(errs) != 0 || len(rs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	if r := rs[0]; string(r.Vars) != `{"label":"valve {{data.zone}}","limit":20,"zone":"{{data.zone}}"}` || strings.Join(r.VarNames, ",") != "zone,limit,label" {
		t.Errorf("vars %s %v", r.Vars, r.VarNames)
	}
	_, errs = ParseFile("v.yaml", []byte("- id: r\n  on: t\n  when: vars.a == 1\n  vars: {a: 1}\n  steps: [{do: p.a}]\n"), nil)
	if joined := errText(errs); !strings.Contains(joined, `v.yaml:3:9: vars.a: the rule's condition (it runs before any step) cannot read the rule's variables (hint: variables are worked out from the trigger when a run starts, after the rule's condition`) {
		t.Errorf("a variable in the rule's condition: %q", joined)
	}
	tests := []struct{ name, vars, err string }{
		{"a list", "  vars: [a]\n", `v.yaml:3:9: vars: want a mapping of names to values`},
		{"empty", "  vars: {}\n", `v.yaml:3:9: vars is empty`},
		{"a bad name", "  vars: {Zone: 1}\n", `"Zone" is not a valid name`},
		{"a step's output", "  vars: {a: \"{{steps.open.x}}\"}\n", `v.yaml:3:16: steps.open: step "open" runs after the rule's vars (they are worked out from the trigger when a run starts)`},
		{"another variable", "  vars: {a: 1, b: \"{{vars.a}}\"}\n", `v.yaml:3:22: vars.a: the rule's vars (they are worked out from the trigger when a run starts) cannot read the rule's variables`},
		{"an unclosed placeholder", "  vars: {a: \"zone {{data.zone\"}\n", `v.yaml:3:19: unclosed {{ in a template (hint: a placeholder is {{path}}, closed by }})`},
		{"one a step does not have", "  vars: {a: 1}\n", `v.yaml:5:42: vars.b: the rule has no variable "b" (hint: declare it in the rule's vars: (a))`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "- id: r\n  on: t\n" + tc.vars + "  steps:\n    - {name: open, do: p.a, with: {x: \"{{vars.b}}\"}}\n"
			if tc.name != "one a step does not have" {
				src = "- id: r\n  on: t\n" + tc.vars + "  steps:\n    - {name: open, do: p.a}\n"
			}
			_, errs := ParseFile("v.yaml", []byte(src), nil)
			if joined := errText(errs); !strings.Contains(joined, tc.err) {
				t.Errorf("errors %q; want %q", joined, tc.err)
			}
		})
	}
}

// TestWaitFor: a wait-for step's keys, what it refuses beside it, and
// its errors at their places.
func TestWaitFor(t *testing.T) {
	rs, errs := ParseFile("w.yaml", []byte(`
- id: valve
  on: flow.start
  steps:
    - {name: open, do: p.a}
    - name: flow
      when: zone != nil
      wait-for: {topic: flow.sensor, match: [zone, site], when: "rate > 0.5 && steps.open.ok", timeout: 10m, on-timeout: stop}
    - {name: close, do: p.a, with: {x: "{{steps.flow.event.rate}}"}}
`), nil)
	if len(errs) != 0 || len(rs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	w := rs[0].Steps[1].Wait
	if w == nil || w.Pattern != "flow.sensor" || strings.Join(w.Match, ",") != "zone,site" || w.Timeout != 10*time.Minute ||
		w.Continue || w.When == nil || rs[0].Steps[1].When == nil || !rs[0].Steps[1].Keeps() || rs[0].OnPause.Hold != true {
		t.Errorf("wait %+v", w)
	}
	tests := []struct{ name, step, err string }{
		{"no timeout", "{name: w, wait-for: {topic: t}}", `w.yaml:4:27: wait-for has no timeout (hint: timeout bounds the wait`},
		{"no topic", "{name: w, wait-for: {timeout: 1m}}", `w.yaml:4:27: wait-for has no topic`},
		{"a do beside it", "{name: w, do: p.a, wait-for: {topic: t, timeout: 1m}}", `w.yaml:4:17: do: a wait-for step does not take it (hint: a wait-for step waits for an event`},
		{"after beside it", "{name: w, after: 1m, wait-for: {topic: t, timeout: 1m}}", `w.yaml:4:17: after: a wait-for step does not take it`},
		{"a bad on-timeout", "{name: w, wait-for: {topic: t, timeout: 1m, on-timeout: fail}}", `on-timeout: "fail" is not one of stop, continue (hint: continue (the default)`},
		{"too long", "{name: w, wait-for: {topic: t, timeout: 9000h}}", `timeout 9000h0m0s is longer than a year`},
		{"a zero timeout", "{name: w, wait-for: {topic: t, timeout: 0s}}", `timeout: want a duration above 0, got 0s (hint: a wait-for needs a timeout`},
		{"in a finally step", "{name: w, do: p.a}\n  finally:\n    - {wait-for: {topic: t, timeout: 1m}}", `wait-for: a finally step does not take it`},
		{"a typo", "{name: w, wait-for: {topic: t, timeout: 1m, mach: zone}}", `unknown key "mach" in a wait-for (hint: did you mean match?)`},
		{"a later step in its when", "{name: w, wait-for: {topic: t, timeout: 1m, when: steps.x.ok}}\n    - {name: x, do: p.a}", `steps.x: step "x" runs after step w`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := ParseFile("w.yaml", []byte("- id: r\n  on: t\n  steps:\n    - "+tc.step+"\n"), nil)
			if joined := errText(errs); !strings.Contains(joined, tc.err) {
				t.Errorf("errors %q; want %q", joined, tc.err)
			}
		})
	}
}

// TestStates: states: names the entities a rule reads, by names its
// conditions and templates read below states.; previous. is always
// readable and marks the rule as reading it; every mistake is refused
// where it is.
func TestStates(t *testing.T) {
	ok := `
- id: warm
  on: heating.room
  max-age: 1h
  states:
    window: "window.{{room}}"
    outside: {entity: weather.outside, max-age: 10m}
    door: door.front
  vars: {cold: "{{states.outside.t}}"}
  when: states.window.open && previous.on == false
  steps:
    - {do: p.a, when: "states.door.open", with: {x: "{{states.door.open}}"}}
`
	rs, errs := ParseFile("s.yaml", []byte(ok), nil)
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	r := rs[0]
	want := []StateRead{{Name: "window", Entity: "window.{{room}}", MaxAge: time.Hour}, {Name: "outside", Entity: "weather.outside", MaxAge: 10 * time.Minute},
		{Name: "door", Entity: "door.front", MaxAge: time.Hour}}
	if len(r.States) != len(want) {
		t.Fatalf("states %+v", r.States)
	}
	for i, w := range want {
		if g := r.States[i]; g.Name != w.Name || g.Entity != w.Entity || g.MaxAge != w.MaxAge {
			t.Errorf("state %d = %+v; want %+v", i, g, w)
		}
	}
	if !r.ReadsPrevious {
		t.Error("previous.on read, but ReadsPrevious is false")
	}
	// A state, the previous state or the sun compared by order may be
	// missing, and nil > 100 fails the condition: warned, at its place.
	if rs, errs := ParseFile("w.yaml", []byte("- id: r\n  on: t\n  states: {lux: sensor.lux}\n  when: previous.watts > 100 && (states.lux.v ?? 0) < 3 && states.lux.on == true\n  steps: [{do: p.a, when: \"sun.elevation < 5\"}]\n"), nil); len(errs) != 0 {
		t.Fatal(errs)
	} else if w := errText(rs[0].Warnings); !strings.Contains(w, `w.yaml:4:9: warning: previous.watts is nil when there is none (an entity's first report, a schedule's trigger), and comparing or computing with nil fails the condition (hint: give it a default: (previous.watts ?? 0), or test it first`) ||
		!strings.Contains(w, `w.yaml:5:28: warning: sun.elevation is nil`) || strings.Contains(w, "states.lux") || len(rs[0].Warnings) != 2 {
		t.Errorf("warnings %q", w)
	}
	if rs, _ := ParseFile("s.yaml", []byte("- id: r\n  on: {every: 1h}\n  steps: [{do: p.a, with: {x: \"{{previous.watts}}\"}}]\n"), nil); !strings.Contains(errText(rs[0].Warnings), "s.yaml:1:3: warning: the rule reads previous., and only schedules trigger it") {
		t.Errorf("previous on a schedule: %v", rs[0].Warnings)
	}
	if rs, _ := ParseFile("s.yaml", []byte("- id: r\n  on: {every: 1h}\n  states: {w: \"window.{{room}}\"}\n  steps: [{do: p.a, with: {x: \"{{states.w.open}}\"}}]\n"), nil); !strings.Contains(errText(rs[0].Warnings), "s.yaml:3:15: warning: state w's entity window.{{room}} is filled from the trigger, and only schedules trigger the rule") {
		t.Errorf("an entity from a schedule's trigger: %v", rs[0].Warnings)
	}
	if rs, _ := ParseFile("g.yaml", []byte("- id: r\n  on: t\n  when: previous.watts != nil && previous.watts > 100\n  steps: [{do: p.a}]\n"), nil); len(rs[0].Warnings) != 0 {
		t.Errorf("a guarded comparison warned: %v", rs[0].Warnings)
	}
	if rs, _ := ParseFile("p.yaml", []byte("- id: r\n  on: t\n  steps: [{do: p.a, with: {x: \"{{previous}}\"}}]\n"), nil); rs[0].ReadsPrevious {
		t.Error("a bare previous (the event's own field) made the rule read the previous state")
	}
	tests := []struct{ name, rule, err string }{
		{"a state the rule does not read",
			"  states: {door: door.front}\n  when: states.dor.open\n  steps: [{do: p.a}]\n",
			`r.yaml:4:9: states.dor: the rule reads no state named "dor" (hint: did you mean states.door? declare it in the rule's states: (door)`},
		{"states in a template, none declared",
			"  steps: [{do: p.a, with: {x: \"{{states.door.open}}\"}}]\n",
			`states.door: the rule reads no state named "door" (hint: declare it in the rule's states: (it has none)`},
		{"an entity filled from a step's output",
			"  states: {door: \"door.{{steps.a.room}}\"}\n  steps: [{name: a, do: p.a}]\n",
			`steps.a: an entity id is filled from the trigger alone`},
		{"an empty entity", "  states: {door: \"\"}\n  steps: [{do: p.a}]\n", `door: an entity id is empty`},
		{"a long entity", "  states: {door: " + strings.Repeat("d", 300) + "}\n  steps: [{do: p.a}]\n", `the entity id is 300 bytes, over 256`},
		{"a bad name", "  states: {Door: door.front}\n  steps: [{do: p.a}]\n", `"Door" is not a valid name`},
		{"no entity", "  states: {door: {max-age: 1m}}\n  steps: [{do: p.a}]\n", `state door has no entity`},
		{"an unknown key", "  states: {door: {entity: d, age: 1m}}\n  steps: [{do: p.a}]\n", `age`},
		{"a list", "  states: [door.front]\n  steps: [{do: p.a}]\n", `a mapping of names to entity ids`},
		{"empty", "  states: {}\n  steps: [{do: p.a}]\n", `states is empty`},
		{"max-age without states", "  max-age: 1m\n  steps: [{do: p.a}]\n", `max-age applies to the states the rule reads, and it reads none`},
		{"max-age without a unit", "  states: {door: d}\n  max-age: 60\n  steps: [{do: p.a}]\n", `max-age: 60 has no unit`},
		{"too many", "  states: {" + manyStates(MaxStateReads+1) + "}\n  steps: [{do: p.a}]\n", `states names 33 entities; at most 32`},
	}
	refused(t, tests)
}

func manyStates(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "s%d: e.%d", i, i)
	}
	return b.String()
}
