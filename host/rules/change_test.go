package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestChanges(t *testing.T) {
	rs, errs := ParseFile("f.yaml", []byte(`
- id: r
  on:
    - door.test
    - {topic: door.front, changes: open, from: false, to: [true, "ajar", 1, null]}
    - {topic: "sensor.*", changes: true}
    - {topic: room.temp, changes: t, above: 30, below: 40.5, for: 5m}
  steps: [{do: p.a}]
`), nil)
	if len(errs) != 0 || len(rs) != 1 {
		t.Fatalf("errs %v", errs)
	}
	r := rs[0]
	if len(r.On) != 1 || len(r.Changes) != 3 {
		t.Fatalf("on %v, changes %+v", r.On, r.Changes)
	}
	a, b := r.Changes[0], r.Changes[1]
	if a.Topic != "door.front" || a.Field != "open" || fmt.Sprint(a.From) != "[false]" || fmt.Sprint(a.To) != "[true ajar 1 <nil>]" {
		t.Errorf("a field's change: %+v", a)
	}
	if b.Topic != "sensor.*" || b.Field != "" || b.From != nil || b.To != nil || b.String() != "sensor.* changes state" {
		t.Errorf("the whole state's change: %+v %s", b, b)
	}
	if a.String() != `door.front changes open from [false] to [true,"ajar",1,null]` {
		t.Errorf("String: %s", a)
	}
	shorter := r.Changes[2]
	shorter.For = time.Minute
	if !a.Equal(a) || a.Equal(b) || r.Changes[2].Equal(shorter) {
		t.Errorf("Equal: a trigger equals itself, not another, nor itself with another for:")
	}
	if r.Key != "" {
		t.Errorf("a rule with a topic trigger too: key %q, want the whole rule's", r.Key)
	}
	only, errs := ParseFile("g.yaml", []byte("- id: o\n  on: {topic: door.*, changes: open, for: 1m}\n  steps: [{do: p.a}]\n"), nil)
	if len(errs) != 0 || only[0].Key != "topic" {
		t.Errorf("a rule of change triggers alone: key %q (%v), want topic", only[0].Key, errs)
	}
	if c := r.Changes[2]; c.String() != "room.temp changes t above 30 below 40.5 for 5m0s" || !c.InRange(35) || c.InRange(30) || c.InRange(40.5) {
		t.Errorf("a threshold: %s", c)
	}
}

func TestChangesRefused(t *testing.T) {
	for _, tc := range []struct{ on, err string }{
		{`{topic: door.front}`, "2:7: a trigger with a topic needs changes"},
		{`{topic: door.front, changes: false}`, "2:36: changes: false triggers nothing"},
		{`{topic: door.front, changes: true, to: 1}`, "2:7: from and to compare a field's value: they need changes: FIELD"},
		{`{topic: door.front, changes: "a..b"}`, `is not a field path`},
		{`{topic: "door.>.x", changes: a}`, `2:15: topic: "door.>.x"`},
		{`{topic: door.front, changes: a, to: []}`, "to is an empty list"},
		{`{topic: door.front, changes: a, to: [{x: 1}]}`, "want a string, number, true, false or null"},
		{`{topic: door.front, changes: a, frm: 1}`, `unknown key "frm" in a change trigger (hint: did you mean from?)`},
		{`{topic: room.temp, changes: true, above: 30}`, "above and below compare a field's number: they need changes: FIELD"},
		{`{topic: room.temp, changes: t, above: 30, to: 31}`, "a threshold (above, below) and from/to both say"},
		{`{topic: room.temp, changes: t, above: 30, below: 20}`, "above 30 and below 20 leave no number between them"},
		{`{topic: room.temp, changes: t, above: hot}`, "above: want a number"},
		{`{topic: room.temp, changes: t, above: 30, for: 500ms}`, "for: 500ms is under a second"},
		{`{topic: room.temp, changes: t, for: 10000h}`, "for: 10000h0m0s is over 8784h0m0s"},
		{`{topic: door.front, changes: id}`, "a report's id and time are not its state"},
		{`{topic: door.front, changes: open, from: true, to: true}`, "from and to are the same value"},
		{`{topic: door.front, changes: "open.", to: true}`, "is not a field path"},
		{`{topic: room.temp, changes: t, hysteresis: 1}`, "hysteresis needs one line to cross: above or below, not neither"},
		{`{topic: room.temp, changes: t, above: 18, below: 24, hysteresis: 1}`, "not both"},
		{`{topic: room.temp, changes: t, above: 30, hysteresis: 0}`, "hysteresis: 0: want a number above 0"},
		{`{topic: room.temp, changes: t, above: 30, hysteresis: 1, for: 1m}`, "for: and hysteresis: both keep a threshold from flapping"},
	} {
		_, errs := ParseFile("f.yaml", []byte("- id: r\n  on: "+tc.on+"\n  steps: [{do: p.a}]\n"), nil)
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if !strings.Contains(strings.Join(got, "\n"), tc.err) {
			t.Errorf("on: %s: errors %q, want one with %q", tc.on, got, tc.err)
		}
	}
}
