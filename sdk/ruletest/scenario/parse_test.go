package scenario

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/fuzzmem"
)

const header = "name: n\nrules: r\nsteps:\n"

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"empty", "", "f.yaml: no scenario"},
		{"no name", "rules: r\nsteps: [{advance: 1m}]\n", "f.yaml:1: scenario: no name"},
		{"no rules", "name: n\nsteps: [{advance: 1m}]\n", "f.yaml:1: scenario n: no rules directory"},
		{"no steps", "name: n\nrules: r\n", "f.yaml:1: scenario n: no steps"},
		{"unknown key", "name: n\nrulez: r\n", `f.yaml:2: scenario: unknown key "rulez"`},
		{"two kinds", header + "  - publish: {topic: a}\n    advance: 1m\n", "f.yaml:5: step: both publish and advance; one per step"},
		{"nothing", header + "  - {}\n", "f.yaml:4: step: nothing to do"},
		{"bad duration", header + "  - advance: soon\n", `f.yaml:4: advance: "soon" is not a duration`},
		{"negative at", header + "  - at: -1m\n    restart: true\n", `f.yaml:4: at: "-1m" is not a duration`},
		{"event without topic", header + "  - publish: {vehicle: s1}\n", `f.yaml:4: publish: the event has no "topic"`},
		{"event not an object", header + "  - publish: '[1]'\n", "f.yaml:4: publish: an event is a JSON object"},
		{"bad capability", "name: n\nrules: r\ngrants: {p: [root]}\nsteps: [{advance: 1m}]\n", `f.yaml:3: grants: unknown capability "root"`},
		{"bad start", "name: n\nrules: r\nstart: tomorrow\nsteps: [{advance: 1m}]\n", "f.yaml:3: start: want an RFC 3339 time"},
		{"command without rule", header + "  - command: {do: pause}\n", "f.yaml:4: command: want rule and do"},
		{"restart false", header + "  - restart: false\n", "f.yaml:4: restart: want true, or {down: 25s} for a restart after an outage"},
		{"restart of a mapping not down", header + "  - restart: {for: 25s}\n", "f.yaml:4: restart: want true, or {down: 25s}"},
		{"published without topic", header + "  - expect: {published: [{count: 1}]}\n", "f.yaml:4: published: no topic"},
		{"bad count", header + "  - expect: {published: [{topic: a, count: -1}]}\n", "f.yaml:4: count: want a count"},
		{"actions without selector", header + "  - expect: {actions: [{count: 1}]}\n", "f.yaml:4: actions: say which"},
		{"bad keys", header + "  - expect: {actions: [{do: a.b, keys: some}]}\n", "f.yaml:4: keys: want same or distinct"},
		{"unknown counter", header + "  - expect: {stats: {r: {runs: 1}}}\n", `f.yaml:4: stats: unknown counter "runs"`},
		{"unknown expectation", header + "  - expect: {logs: 1}\n", `f.yaml:4: expect: unknown key "logs"`},
		{"replay without capture", header + "  - replay: {ignore: [ts]}\n", "f.yaml:4: replay: no capture file"},
		{"not yaml", "name: [\n", "f.yaml: yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want %q", err, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	ss, err := Parse("dir/f.yaml", []byte(`name: first
rules: rules
plugins: {p: p.wasm, abs: /x/q.wasm}
grants: {p: [publish, kv]}
start: 2026-03-01T00:00:00Z
steps:
  - publish: '{"topic":"a","n":1}'
  - at: 90m
    publish: [{topic: b}, {topic: c, v: [1, 2]}, {topic: d, f: 20.0, big: 9223372036854775807, h: 0x10, t: true, "n": ~}]
  - replay: cap.ndjson
  - command: {rule: r, do: sleep, for: 1h}
  - expect:
      published: [{topic: "x.*", count: 0, at: 2h, payload: {n: 1}}]
      actions: [{do: p.f, keys: same}]
      states: {r: sleeping}
      runs: {r: {ok: 2}}
  - at: 3h
---
name: second
steps: [{advance: 1m}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 {
		t.Fatalf("%d scenarios", len(ss))
	}
	s := ss[0]
	if s.Rules != "dir/rules" || s.Plugins["p"] != "dir/p.wasm" || s.Plugins["abs"] != "/x/q.wasm" ||
		len(s.Grants["p"]) != 2 || !s.Start.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) || len(s.Steps) != 6 {
		t.Errorf("scenario %+v", s)
	}
	kinds := []string{}
	for _, st := range s.Steps {
		kinds = append(kinds, st.Kind)
	}
	if got := strings.Join(kinds, " "); got != "publish publish replay command expect advance" {
		t.Errorf("kinds %s", got)
	}
	if st := s.Steps[1]; *st.At != 90*time.Minute || len(st.Events) != 3 || string(st.Events[1]) != `{"topic":"c","v":[1,2]}` {
		t.Errorf("step 2 %+v", st)
	}
	// Numbers reach the rules as written: a float stays a float, a large
	// int keeps its digits.
	if got := string(s.Steps[1].Events[2]); got != `{"topic":"d","f":20.0,"big":9223372036854775807,"h":16,"t":true,"n":null}` {
		t.Errorf("event %s", got)
	}
	if c := s.Steps[3].Command; c.Rule != "r" || c.Do != "sleep" || c.For != "1h0m0s" {
		t.Errorf("command %+v", c)
	}
	e := s.Steps[4].Expect
	if p := e.Published[0]; p.Topic != "x.*" || *p.Count != 0 || *p.At != 2*time.Hour || !subset(map[string]any{"n": 1.0}, p.Payload) {
		t.Errorf("published %+v", p)
	}
	if e.Actions[0].Keys != "same" || e.States["r"] != "sleeping" || e.Runs["r"]["ok"] != 2 {
		t.Errorf("expect %+v", e)
	}
	if s2 := ss[1]; s2.Rules != s.Rules || s2.Plugins["p"] != s.Plugins["p"] || !s2.Start.Equal(s.Start) {
		t.Errorf("the second scenario did not take the first's setup: %+v", s2)
	}
}

// TestRestartDown: restart: {down: 25s}, the form people write for a
// restart after an outage, is the step down: 25s (issue 37, 9: it got
// only "restart: want true").
func TestRestartDown(t *testing.T) {
	ss, err := Parse("f.yaml", []byte(header+"  - restart: {down: 25s}\n  - down: 25s\n  - restart: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := ss[0].Steps
	if st[0].Kind != "down" || st[0].Down != 25*time.Second || st[1].Kind != st[0].Kind || st[1].Down != st[0].Down || st[2].Kind != "restart" {
		t.Errorf("steps %+v", st)
	}
}

func TestSubset(t *testing.T) {
	for _, tc := range []struct {
		want, got string
		ok        bool
	}{
		{`{}`, `{"a":1}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, true},
		{`{"a":1}`, `{"a":"1"}`, false},
		{`{"a":{"b":true}}`, `{"a":{"b":true,"c":null}}`, true},
		{`{"a":[1,{"x":1}]}`, `{"a":[1,{"x":1,"y":2}]}`, true},
		{`{"a":[1]}`, `{"a":[1,2]}`, false},
		{`{"a":null}`, `{}`, false},
		{`{"a":null}`, `{"a":null}`, true},
	} {
		if got := subset(decode([]byte(tc.want)), decode([]byte(tc.got))); got != tc.ok {
			t.Errorf("subset(%s, %s) = %v", tc.want, tc.got, got)
		}
	}
}

func TestTreeMatches(t *testing.T) {
	got := "run #1 r   cancelled\n  1 trigger a  ok  {\"x\":1}\n  2 cancel   cancelled  cancel-on: b (event 12ab)\n"
	for _, tc := range []struct {
		want string
		ok   bool
	}{
		{"run #1 r cancelled\n  1 trigger a ok {\"x\":1}\n  2 cancel cancelled cancel-on: b (event *\n", true},
		{"run #1 r cancelled\n1 trigger a ok {\"x\":1}\n2 cancel cancelled cancel-on: b (event *\n", false}, // indent
		{"run #1 r cancelled\n  1 trigger a ok {\"x\":1}\n", false},
		{"run #1 r ok\n  1 trigger a ok {\"x\":1}\n  2 cancel cancelled cancel-on: b (event *\n", false},
	} {
		if treeMatches(tc.want, got) != tc.ok {
			t.Errorf("treeMatches(%q) = %v", tc.want, !tc.ok)
		}
	}
}

func TestReadCapture(t *testing.T) {
	ok := `{"at":"2026-11-30T10:00:00Z","event":{"topic":"a"}}
{"at":"2026-11-30T10:00:01Z","by":"r/s","event":{"topic":"b"}}

{"dropped":2}
{"end":"2026-11-30T10:00:05Z"}
`
	c, err := ReadCapture(strings.NewReader(ok))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Events) != 2 || c.Events[1].By != "r/s" || c.Dropped != 2 || c.End.Sub(c.Start()) != 5*time.Second {
		t.Errorf("capture %+v", c)
	}
	for _, tc := range []struct{ src, want string }{
		{"", "no events"},
		{"{", "line 1: unexpected end of JSON input"},
		{`{"at":"2026-11-30T10:00:00Z","event":[1]}`, "line 1: the event is not a JSON object"},
		{`{"x":1}`, "line 1: neither an event"},
		{`{"at":"2026-11-30T10:00:01Z","event":{}}` + "\n" + `{"at":"2026-11-30T10:00:00Z","event":{}}`, "line 2: event at 2026-11-30T10:00:00Z before the previous one"},
	} {
		if _, err := ReadCapture(strings.NewReader(tc.src)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadCapture(%q) = %v; want %q", tc.src, err, tc.want)
		}
	}
}

// FuzzParse: no scenario file panics the parser, and whatever it accepts
// has a name, rules and steps that each know their kind.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		header + "  - publish: {topic: a}\n  - at: 1h\n    expect: {published: [{topic: a, count: 1}]}\n",
		header + "  - replay: {capture: c, ignore: [ts]}\n  - command: {rule: r, do: pause}\n",
		"name: a\nrules: r\nsteps: [{at: 1m}]\n---\nname: b\nsteps: [{restart: true}]\n",
		header + "  - expect: {tree: [{rule: r, is: x}], runs: {r: {ok: 1}}, states: {r: paused}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		var ss []*Scenario
		var err error
		// YAML's node tree costs more per byte than a flat decoder.
		fuzzmem.Check(t, src, 512, 256<<10, func() { ss, err = Parse("f.yaml", src) })
		if err != nil {
			return
		}
		for _, s := range ss {
			if s.Name == "" || s.Rules == "" || len(s.Steps) == 0 {
				t.Fatalf("accepted %+v", s)
			}
			for _, st := range s.Steps {
				if st.Kind == "" {
					t.Fatalf("a step without a kind: %+v", st)
				}
			}
		}
	})
}

// FuzzReadCapture: no capture panics the reader, and what it accepts is in
// time order with an end no earlier than its last event.
func FuzzReadCapture(f *testing.F) {
	f.Add([]byte(`{"at":"2026-11-30T10:00:00Z","event":{"topic":"a"}}` + "\n" + `{"end":"2026-11-30T10:00:05Z"}`))
	f.Add([]byte(`{"dropped":3}` + "\n" + `{"at":"2026-11-30T10:00:00Z","by":"r","event":{}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		var c *Capture
		var err error
		// The reader's 64 KiB line buffer is the fixed part.
		fuzzmem.Check(t, src, 32, 192<<10, func() { c, err = ReadCapture(bytes.NewReader(src)) })
		if err != nil {
			return
		}
		for i := 1; i < len(c.Events); i++ {
			if c.Events[i].At.Before(c.Events[i-1].At) {
				t.Fatal("out of order")
			}
		}
		if c.End.Before(c.Events[len(c.Events)-1].At) {
			t.Fatal("ends before its last event")
		}
	})
}
