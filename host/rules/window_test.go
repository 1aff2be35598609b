package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWindows: windows: beside rules:, the three kinds, the states that
// read them and the triggers on their closes.
func TestWindows(t *testing.T) {
	src := `windows:
  - name: outdoor
    on: weather.outdoor
    field: temp
    last: 15m
  - name: opens
    on: {topic: door.>, changes: open, to: true}
    key: door
    every: day
    timezone: Europe/Berlin
  - name: recent
    on: [sensor.*, meter.*]
    field: w
    time: ts
    last: 100 events
    max-keys: 50
rules:
  - id: heat
    on: {every: 1m}
    states: {out: {window: outdoor}}
    when: (states.out.avg ?? 99) < 5
    steps: [{do: log.log, with: {message: "avg {{states.out.avg}}"}}]
  - id: nightly
    on: {window: opens, closed: true}
    key: key
    states: {front: {window: opens, key: front}}
    steps: [{do: log.log, with: {message: "{{count}} opens"}}]
`
	rs, ws, errs := ParseFileWindows("w.yaml", []byte(src), plugins)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(rs) != 2 || len(ws) != 3 {
		t.Fatalf("%d rules, %d windows", len(rs), len(ws))
	}
	if w := ws[0]; w.Last != 15*time.Minute || w.Field != "temp" || w.Tumbling() {
		t.Errorf("outdoor: %+v", w)
	}
	if w := ws[1]; w.Calendar != "day" || w.Zone.String() != "Europe/Berlin" || w.Key != "door" || len(w.Changes) != 1 || !w.Tumbling() {
		t.Errorf("opens: %+v", w)
	}
	if w := ws[2]; w.Events != 100 || w.Time != "ts" || len(w.On) != 2 || w.MaxKeys != 50 {
		t.Errorf("recent: %+v", w)
	}
	if sr := rs[0].States[0]; sr.Window != "outdoor" || sr.Entity != "" {
		t.Errorf("heat's read: %+v", sr)
	}
	if sr := rs[1].States[0]; sr.Window != "opens" || sr.Entity != "front" || len(rs[1].Closes) != 1 || rs[1].Closes[0].Window != "opens" {
		t.Errorf("nightly: %+v %+v", sr, rs[1].Closes)
	}
	if kept, _, errs := CheckWindows(rs, ws); len(errs) > 0 || len(kept) != 2 {
		t.Fatalf("check: %v", errs)
	}
}

func TestWindowsBad(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"both", "windows: [{name: w, on: a, last: 1m, every: 1h}]", "not both"},
		{"neither", "windows: [{name: w, on: a}]", "neither last: nor every:"},
		{"no on", "windows: [{name: w, last: 1m}]", "has no on"},
		{"a hold", "windows: [{name: w, on: {topic: a, changes: x, for: 1m}, last: 1m}]", "for: and hysteresis: are a rule's"},
		{"a schedule", "windows: [{name: w, on: {every: 1m}, last: 1m}]", "a window hears events"},
		{"too many events", "windows: [{name: w, on: a, last: 20000 events}]", "1 to 10000 events"},
		{"zone without a day", "windows: [{name: w, on: a, every: 1h, timezone: UTC}]", "timezone: is for every: day"},
		{"bad zone", "windows: [{name: w, on: a, every: day, timezone: Mars/Base}]", "not a time zone"},
		{"buckets of a count", "windows: [{name: w, on: a, last: 5 events, buckets: 4}]", "buckets: are a sliding window's"},
		{"short every", "windows: [{name: w, on: a, every: 10ms}]", "a period is 1s"},
		{"bad name", "windows: [{name: W!, on: a, last: 1m}]", "not a valid name"},
		{"unknown aggregate", "rules: [{id: r, on: a, states: {w: {window: x}}, when: states.w.cuont > 1, steps: [{do: log.log}]}]",
			`states.w.cuont: a window has no "cuont" (hint: did you mean states.w.count?`},
		{"window with max-age", "rules: [{id: r, on: a, states: {w: {window: x, max-age: 1m}}, steps: [{do: log.log}]}]", "max-age: is an entity's"},
		{"closed false", "rules: [{id: r, on: {window: x, closed: false}, steps: [{do: log.log}]}]", "closed: false triggers nothing (hint: on: {window: x, closed: true})"},
		{"a bare count", "windows: [{name: w, on: a, last: 100}]", "last: 100 is neither a span nor a count (hint: last: 15m (the last 15 minutes), or last: 100 events"},
		{"every in ms", "windows: [{name: w, on: a, every: 1500ms}]", "a period is whole seconds"},
		{"a template key", `windows: [{name: w, on: a, key: "{{dev}}", last: 1m}]`, "a window's key is an event field's path, not a template (hint: key: dev)"},
		{"a bucket under 1ms", "windows: [{name: w, on: a, last: 1ns}]", "hint: a bucket is 1ms at least: last: 60ms or longer, or buckets: 1 or fewer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, errs := ParseFileWindows("w.yaml", []byte(tc.src), plugins)
			var all []string
			for _, e := range errs {
				all = append(all, e.Error())
			}
			if !strings.Contains(strings.Join(all, "\n"), tc.want) {
				t.Fatalf("want %q in %q", tc.want, all)
			}
		})
	}
}

// TestCheckWindows: across a directory, a window is named once, and a
// rule reading or triggered by an unknown one — or by a sliding one's
// close — is refused at its place.
func TestCheckWindows(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml": "windows: [{name: temp, on: t, field: v, last: 1h}, {name: day, on: d, every: day}]\n",
		"b.yaml": `windows: [{name: temp, on: t2, last: 1h}]
rules:
  - {id: ok, on: {window: day, closed: true}, steps: [{do: log.log}]}
  - {id: typo, on: a, states: {x: {window: tmp}}, steps: [{do: log.log}]}
  - {id: sliding, on: {window: temp, closed: true}, steps: [{do: log.log}]}
`,
	}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, errs := LoadDir(dir, plugins)
	var got []string
	for _, e := range errs {
		got = append(got, strings.TrimPrefix(e.Error(), dir+"/"))
	}
	want := []string{
		`b.yaml:1:11: window "temp" is already defined at ` + dir + `/a.yaml:1:11`,
		`b.yaml:4:35: no window named "tmp" is defined (hint: did you mean temp? windows: temp, day (a windows: list in any rule file))`,
		`b.yaml:5:23: window temp never closes: only a tumbling window (every:) does (hint: read a sliding or count window as a state instead: states: {w: {window: temp}})`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if set.Len() != 1 || len(set.Windows()) != 2 {
		t.Fatalf("%d rules, %d windows", set.Len(), len(set.Windows()))
	}
}

// TestWindowReadKeys: key: on a window of one value is refused; a keyed
// window read by the trigger in a rule only schedules trigger is warned
// of (always nil).
func TestWindowReadKeys(t *testing.T) {
	src := `windows:
  - {name: one, on: a, last: 1h}
  - {name: per, on: a, key: dev, last: 1h}
rules:
  - {id: keyed-one, on: a, states: {x: {window: one, key: k}}, steps: [{do: log.log}]}
  - {id: nightly, on: {schedule: "0 0 * * *"}, states: {x: {window: per}}, steps: [{do: log.log}]}
`
	rs, ws, errs := ParseFileWindows("w.yaml", []byte(src), plugins)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	kept, _, errs := CheckWindows(rs, ws)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "window one keeps one value, by no key") {
		t.Fatalf("errors %v", errs)
	}
	if len(kept) != 1 || len(kept[0].Warnings) != 1 || !strings.Contains(kept[0].Warnings[0].Msg, "always nil") {
		t.Fatalf("kept %d, warnings %v", len(kept), kept[0].Warnings)
	}
}

// TestCloseRuleKey: a rule heard only through windows' closes counts its
// runs by the close's key: each key's period is a run of its own.
func TestCloseRuleKey(t *testing.T) {
	rs, _, errs := ParseFileWindows("w.yaml", []byte(`rules:
  - {id: a, on: {window: w, closed: true}, steps: [{do: log.log}]}
  - {id: b, on: {window: w, closed: true}, key: meter, steps: [{do: log.log}]}
  - {id: c, on: [{window: w, closed: true}, x], steps: [{do: log.log}]}
`), plugins)
	if len(errs) > 0 || len(rs) != 3 {
		t.Fatal(errs)
	}
	if rs[0].Key != "key" || rs[1].Key != "meter" || rs[2].Key != "" {
		t.Fatalf("keys %q %q %q", rs[0].Key, rs[1].Key, rs[2].Key)
	}
}

// TestBrokenWindowNoSecondError: a rule reading a window whose
// definition has errors is refused for them, not told it is undefined.
func TestBrokenWindowNoSecondError(t *testing.T) {
	rs, ws, errs := ParseFileWindows("w.yaml", []byte(`windows: [{name: tiny, on: a, every: 1ms}]
rules: [{id: r, on: a, states: {t: {window: tiny}}, steps: [{do: log.log}]}]
`), plugins)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "every: 1ms") {
		t.Fatalf("parse: %v", errs)
	}
	kept, windows, errs := CheckWindows(rs, ws)
	if len(kept) != 0 || len(windows) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), `window "tiny" has errors`) {
		t.Fatalf("kept %d, windows %d, errors %v", len(kept), len(windows), errs)
	}
}

// TestNumberOfACountWindow: reading a number aggregate (sum, avg …) of a
// window with no field: is warned of at its place; count is not.
func TestNumberOfACountWindow(t *testing.T) {
	rs, ws, errs := ParseFileWindows("w.yaml", []byte(`windows: [{name: opens, on: a, last: 1h}]
rules:
  - id: r
    on: a
    states: {o: {window: opens}}
    when: states.o.count > 1 && (states.o.avg ?? 0) > 1
    steps: [{do: log.log, with: {message: "{{states.o.sum}}"}}]
`), plugins)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	kept, _, errs := CheckWindows(rs, ws)
	if len(errs) > 0 || len(kept) != 1 {
		t.Fatal(errs)
	}
	var got []string
	for _, w := range kept[0].Warnings {
		got = append(got, w.Error())
	}
	want := []string{
		"w.yaml:7:46: warning: states.o.sum is always nil: window opens has no field:, so it counts events and keeps no numbers (hint: read states.o.count, or give the window a field: to aggregate)",
		"w.yaml:6:34: warning: states.o.avg is always nil: window opens has no field:, so it counts events and keeps no numbers (hint: read states.o.count, or give the window a field: to aggregate)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	CheckWindows(rs, ws) // a reload checks again: warned once
	if len(kept[0].Warnings) != 2 {
		t.Fatalf("%d warnings after a second check", len(kept[0].Warnings))
	}
}
