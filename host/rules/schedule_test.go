package rules

import (
	"strings"
	"testing"
	"time"
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
	if n := a.Next(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)); !n.Equal(time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("next %v", n)
	}
	if o := rs[1]; len(o.On) != 0 || len(o.Schedules) != 1 || o.Schedules[0].Zone != time.Local || o.Schedules[0].Missed != MissedOnce {
		t.Errorf("a rule on a schedule alone: %+v", o)
	}
	tests := []struct{ name, on, err string }{
		{"a field out of range", `{schedule: "0 25 * * *"}`, `f.yaml:2:21: schedule: hour: 25 is outside 0-23 (hint: 0-23, *, a list (1,15), a range (1-5) or a step (*/15); five fields`},
		{"a plain scalar's column", `{schedule: 0 3 * * FUN}`, `f.yaml:2:26: schedule: day-of-week: "FUN" is not a number`},
		{"four fields", `{schedule: "0 3 * *"}`, `f.yaml:2:19: schedule: 4 fields, want 5`},
		{"both", `{schedule: "@daily", every: 1h}`, `f.yaml:2:28: a schedule has both schedule and every`},
		{"neither", `{timezone: UTC}`, `f.yaml:2:7: a schedule needs schedule or every (hint: on: {schedule: "0 3 * * *", timezone: Europe/Berlin} or on: {every: 15m})`},
		{"a zone misspelt", `{schedule: "@daily", timezone: Europe/Berln}`, `timezone: "Europe/Berln" is not a time zone (hint: an IANA name such as Europe/Berlin or America/New_York, or UTC, or Local for the daemon's own; did you mean Europe/Berlin?)`},
		{"a zone on every", `{every: 1h, timezone: UTC}`, `f.yaml:2:19: timezone: an every: schedule has no time zone`},
		{"every without a unit", `{every: 15}`, `f.yaml:2:15: every: 15 has no unit`},
		{"every below a second", `{every: 500ms}`, `every: want whole seconds, at least 1s, got 500ms`},
		{"missed misspelt", `{every: 1h, missed: al}`, `f.yaml:2:27: missed: "al" is not one of once, skip, all (hint: did you mean all?)`},
		{"a typo", `{every: 1h, mised: all}`, `f.yaml:2:19: unknown key "mised" in a schedule (hint: did you mean missed?)`},
		{"@every", `{schedule: "@every 1h"}`, `schedule: @every is not a cron expression (hint: write on: {every: 15m} for a fixed interval)`},
		{"an empty list", `[]`, `f.yaml:2:7: on is an empty list`},
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
