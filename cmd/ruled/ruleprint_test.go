package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
)

// TestPrintRuleSchedules: `ruled rule show` says each schedule and when
// it comes due next, and the flow counters when there are any.
func TestPrintRuleSchedules(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	next := now.Add(2 * time.Hour)
	var b strings.Builder
	printRule(&b, status.RuleStatus{ID: "nightly", File: "r.yaml", Stats: seq.RuleStats{Debounced: 3, Throttled: 1},
		Schedules: []status.ScheduleStatus{{Schedule: "0 3 * * * Europe/Berlin", Missed: "once", Next: &next}, {Schedule: "every 15m0s", Missed: "skip"}}}, now)
	for _, want := range []string{
		"  schedule  0 3 * * * Europe/Berlin, missed: once, next 2026-12-02T03:00:00Z (in 2h0m0s)\n",
		"  schedule  every 15m0s, missed: skip, not read yet\n",
		"  flow      3 replaced by a later one (debounce), 1 waiting for the throttle\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
