package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/sun"
)

func TestSchedules(t *testing.T) {
	rs, errs := ParseFile("f.yaml", []byte(`
- id: r
  on:
    - door.opened
    - {schedule: "0 3 * * *", timezone: Europe/Berlin, missed: all, within: 6h}
    - {every: 15m, missed: skip}
  steps: [{do: p.a}]
- id: only
  on: {schedule: "@daily"}
  steps: [{do: p.a}]
`), nil)
	if len(errs) != 0 || len(rs) != 2 {
		t.Fatalf("errs %v", errs)
	}
	r := rs[0]
	if len(r.On) != 1 || r.On[0] != "door.opened" || len(r.Schedules) != 2 {
		t.Fatalf("on %v, schedules %+v", r.On, r.Schedules)
	}
	a, b := r.Schedules[0], r.Schedules[1]
	if a.String() != "0 3 * * * Europe/Berlin" || a.Missed != MissedAll || a.Within != 6*time.Hour || a.Zone.String() != "Europe/Berlin" {
		t.Errorf("cron schedule %+v", a)
	}
	if b.String() != "every 15m0s" || b.Missed != MissedSkip || b.Every != 15*time.Minute {
		t.Errorf("every schedule %+v", b)
	}
	if n := a.Next(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC), nil); !n.Equal(time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("next %v", n)
	}
	sunny, errs := ParseFile("s.yaml", []byte(`
- id: porch
  on: [{sun: sunset, offset: -30m, missed: skip}, {sun: dawn}, {sun: noon, offset: 1h30m}]
  when: sun.elevation < 10 && !sun.above_horizon || sun.rising
  steps: [{do: p.a, with: {a: "{{sun.azimuth}}"}}]
`), nil)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if s := sunny[0].Schedules; len(s) != 3 || s[0].Sun != sun.Sunset || s[0].Offset != -30*time.Minute || s[0].Missed != MissedSkip ||
		s[0].String() != "sunset -30m0s" || s[0].Key() != "sun sunset -30m0s" || s[1].String() != "dawn" || s[2].String() != "noon +1h30m0s" {
		t.Errorf("sun schedules %+v", s)
	}
	if !sunny[0].ReadsSun {
		t.Error("a rule reading sun.elevation does not read the sun")
	}
	berlin := &sun.Location{Latitude: 52.52, Longitude: 13.405}
	set := berlin.Next(sun.Sunset, time.Date(2026, 6, 21, 0, 0, 0, 0, time.UTC))
	if n := sunny[0].Schedules[0].Next(time.Date(2026, 6, 21, 0, 0, 0, 0, time.UTC), berlin); !n.Equal(set.Add(-30 * time.Minute).Truncate(time.Second).Add(time.Second)) {
		t.Errorf("half an hour before sunset, on the second after: %v; sunset %v", n, set)
	} else if again := sunny[0].Schedules[0].Next(n, berlin); again.Sub(n) < 23*time.Hour {
		t.Errorf("the occurrence after %v: %v; want tomorrow's", n, again)
	} else if back := sunny[0].Schedules[0].Next(time.UnixMilli(n.UnixMilli()), berlin); !back.Equal(again) {
		t.Errorf("after the occurrence as a record keeps it (%v): %v; want tomorrow's", time.UnixMilli(n.UnixMilli()), back)
	}
	if n := sunny[0].Schedules[0].Next(set.Add(-10*time.Minute), berlin); !n.After(set) {
		t.Errorf("ten minutes before sunset, the next half hour before it is tomorrow's: %v", n)
	}
	if n := sunny[0].Schedules[0].Next(set, nil); !n.IsZero() {
		t.Errorf("a sun schedule without a location came due: %v", n)
	}
	if _, errs := ParseFile("s.yaml", []byte("- id: r\n  on: t\n  when: sun.elevatoin > 3\n  steps: [{do: p.a}]\n"), nil); !strings.Contains(errText(errs),
		`sun.elevatoin: the sun has no "elevatoin" (hint: did you mean sun.elevation? sun.elevation, sun.azimuth, sun.above_horizon, sun.rising`) {
		t.Errorf("a misspelt sun field: %v", errs)
	}
	if o := rs[1]; len(o.On) != 0 || len(o.Schedules) != 1 || o.Schedules[0].Zone != time.Local || o.Schedules[0].Missed != MissedOnce {
		t.Errorf("a rule on a schedule alone: %+v", o)
	}
	tests := []struct{ name, on, err string }{
		{"a field out of range", `{schedule: "0 25 * * *"}`, `f.yaml:2:21: schedule: hour: 25 is outside 0-23 (hint: 0-23, *, a list (1,15), a range (1-5) or a step (*/15); five fields`},
		{"a plain scalar's column", `{schedule: 0 3 * * FUN}`, `f.yaml:2:26: schedule: day-of-week: "FUN" is not a number`},
		{"four fields", `{schedule: "0 3 * *"}`, `f.yaml:2:19: schedule: 4 fields, want 5`},
		{"both", `{schedule: "@daily", every: 1h}`, `f.yaml:2:28: a schedule is one of schedule, every and sun`},
		{"neither", `{timezone: UTC}`, `f.yaml:2:7: a schedule needs schedule, every or sun (hint: on: {schedule: "0 3 * * *", timezone: Europe/Berlin}, on: {every: 15m} or on: {sun: sunset, offset: -30m})`},
		{"a zone misspelt", `{schedule: "@daily", timezone: Europe/Berln}`, `timezone: "Europe/Berln" is not a time zone (hint: an IANA name such as Europe/Berlin or America/New_York, or UTC, or Local for the daemon's own; did you mean Europe/Berlin?)`},
		{"a zone on every", `{every: 1h, timezone: UTC}`, `f.yaml:2:19: timezone: an every: schedule has no time zone`},
		{"every without a unit", `{every: 15}`, `f.yaml:2:15: every: 15 has no unit`},
		{"every below a second", `{every: 500ms}`, `every: want whole seconds, at least 1s, got 500ms`},
		{"missed misspelt", `{every: 1h, missed: al}`, `f.yaml:2:27: missed: "al" is not one of once, skip, all (hint: did you mean all?)`},
		{"a typo", `{every: 1h, mised: all}`, `f.yaml:2:19: unknown key "mised" in a schedule (hint: did you mean missed?)`},
		{"@every", `{schedule: "@every 1h"}`, `schedule: @every is not a cron expression (hint: write on: {every: 15m} for a fixed interval)`},
		{"an empty list", `[]`, `f.yaml:2:7: on is an empty list`},
		{"a sun event misspelt", `{sun: sunsett}`, `f.yaml:2:13: sun: "sunsett" is not one of sunrise, sunset, dawn, dusk, noon (hint: did you mean sunset?)`},
		{"the sun and every", `{sun: sunset, every: 1h}`, `a schedule is one of schedule, every and sun`},
		{"an offset without the sun", `{every: 1h, offset: 1m}`, `f.yaml:2:19: offset: only a sun schedule has one`},
		{"an offset too far", `{sun: sunset, offset: -13h}`, `offset: -13h0m0s is more than 12h0m0s from the sun's event`},
		{"an offset without a unit", `{sun: sunset, offset: 30}`, `offset: 30 has no unit`},
		{"a sun schedule in a zone", `{sun: dusk, timezone: UTC}`, `timezone: a sun schedule has no time zone`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := ParseFile("f.yaml", []byte("- id: r\n  on: "+tc.on+"\n  steps: [{do: p.a}]\n"), nil)
			if joined := errText(errs); !strings.Contains(joined, tc.err) {
				t.Errorf("errors %q; want %q", joined, tc.err)
			}
		})
	}
}
