package rules

import (
	"strings"
	"testing"
	"time"
)

func TestOnError(t *testing.T) {
	rs, errs := ParseFile("f.yaml", []byte(`
- id: r
  on: t
  on-error: {max: 3, within: 1h, sleep: 30s}
  steps:
    - do: p.a
`), nil)
	if len(errs) != 0 || len(rs) != 1 {
		t.Fatalf("errs %v", errs)
	}
	if got, want := rs[0].OnError, (ErrorBudget{Max: 3, Within: time.Hour, Sleep: 30 * time.Second}); got != want {
		t.Errorf("OnError = %+v; want %+v", got, want)
	}
	_, errs = ParseFile("f.yaml", []byte(`
- id: r
  on: t
  on-error: {maximum: 3, sleep: 30}
  steps:
    - do: p.a
`), nil)
	joined := errText(errs)
	if !strings.Contains(joined, `f.yaml:4:14: unknown key "maximum"`) || !strings.Contains(joined, "f.yaml:4:33: sleep: 30 has no unit") {
		t.Errorf("errors:\n%s", joined)
	}
}

func TestOnPause(t *testing.T) {
	const durable = "  steps:\n    - {name: a, do: p.a}\n    - {name: b, do: p.a, after: 1m, durable: true}\n"
	const plain = "  steps:\n    - do: p.a\n"
	tests := []struct {
		name, field, steps string
		want               PauseTriggers
		err                string
	}{
		{"plain default: drop", "", plain, PauseTriggers{}, ""},
		{"durable default: hold", "", durable, PauseTriggers{Hold: true, Max: DefaultHold}, ""},
		{"drop a durable rule's", "  on-pause: drop\n", durable, PauseTriggers{}, ""},
		{"hold a plain rule's", "  on-pause: hold\n", plain, PauseTriggers{Hold: true, Max: DefaultHold}, ""},
		{"hold with a bound", "  on-pause: {hold: 5}\n", plain, PauseTriggers{Hold: true, Max: 5}, ""},
		{"misspelt", "  on-pause: hodl\n", plain, PauseTriggers{}, `f.yaml:4:13: on-pause: "hodl" is not one of drop, hold (hint: did you mean hold?)`},
		{"bound of zero", "  on-pause: {hold: 0}\n", plain, PauseTriggers{}, "f.yaml:4:20: hold: want at least 1, got 0"},
		{"mapping without hold", "  on-pause: {max: 5}\n", plain, PauseTriggers{}, `unknown key "max"`},
		{"a list", "  on-pause: [hold]\n", plain, PauseTriggers{}, "on-pause: want drop, hold or {hold: N}, got a list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, errs := ParseFile("f.yaml", []byte("- id: r\n  on: t\n\n"+tc.field+tc.steps), nil)
			joined := errText(errs)
			if tc.err != "" {
				if !strings.Contains(joined, tc.err) {
					t.Fatalf("errors %q; want %q", joined, tc.err)
				}
				return
			}
			if len(errs) != 0 || len(rs) != 1 {
				t.Fatalf("errs %v", joined)
			}
			if rs[0].OnPause != tc.want {
				t.Errorf("OnPause = %+v; want %+v", rs[0].OnPause, tc.want)
			}
		})
	}
}

// TestOnPauseSchedule: a rule with a schedule holds its occurrences by
// default while paused; on-pause: drop says otherwise.
func TestOnPauseSchedule(t *testing.T) {
	for field, want := range map[string]PauseTriggers{"": {Hold: true, Max: DefaultHold}, "  on-pause: drop\n": {}} {
		rs, errs := ParseFile("f.yaml", []byte("- id: r\n  on: {every: 1h}\n"+field+"  steps: [{do: p.a}]\n"), nil)
		if len(errs) != 0 || len(rs) != 1 || rs[0].OnPause != want {
			t.Errorf("%q: %v %+v; want %+v", field, errs, rs, want)
		}
	}
}
