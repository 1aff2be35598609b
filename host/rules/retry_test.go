package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRetry(t *testing.T) {
	def := Retry{Attempts: 1, Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff, Factor: DefaultFactor, Jitter: DefaultJitter}
	with := func(f func(*Retry)) Retry { r := def; f(&r); return r }
	tests := []struct {
		name       string
		rule, step string // the rule's and the step's retry: lines ("" none)
		want       Retry  // the step's
		err        string
	}{
		{"none", "", "", Retry{}, ""},
		{"attempts", "", "retry: 5", with(func(r *Retry) { r.Attempts = 5 }), ""},
		{"whole", "", "retry: {attempts: 3, backoff: 2s, max-backoff: 1m, factor: 1.5, jitter: 0}",
			Retry{Attempts: 3, Backoff: 2 * time.Second, MaxBackoff: time.Minute, Factor: 1.5}, ""},
		{"backoff above the default cap", "", "retry: {attempts: 3, backoff: 10m}",
			with(func(r *Retry) { r.Attempts, r.Backoff, r.MaxBackoff = 3, 10*time.Minute, 10*time.Minute }), ""},
		{"rule default", "retry: 4", "", with(func(r *Retry) { r.Attempts = 4 }), ""},
		{"step replaces the rule's", "retry: {attempts: 4, backoff: 1m}", "retry: 1", def, ""},
		{"no attempts", "", "retry: {backoff: 1s}", Retry{}, "f.yaml:6:14: retry has no attempts (hint: retry: 5, or"},
		{"zero attempts", "", "retry: 0", Retry{}, "f.yaml:6:14: retry: want 1 to 100, got 0 (hint: attempts counts every try, the first included: 1 does not retry)"},
		{"too many", "", "retry: {attempts: 1000}", Retry{}, "f.yaml:6:25: attempts: want 1 to 100, got 1000"},
		{"cap below backoff", "", "retry: {attempts: 2, backoff: 1m, max-backoff: 10s}", Retry{}, "f.yaml:6:54: max-backoff: 10s is below backoff 1m0s"},
		{"factor below 1", "", "retry: {attempts: 2, factor: 0.5}", Retry{}, "f.yaml:6:36: factor: want a number from 1 to 10, got 0.5 (hint: factor multiplies"},
		{"jitter as text", "", "retry: {attempts: 2, jitter: lots}", Retry{}, "f.yaml:6:36: jitter: want a number, got a string (hint: jitter takes"},
		{"backoff without a unit", "", "retry: {attempts: 2, backoff: 5}", Retry{}, "f.yaml:6:37: backoff: 5 has no unit"},
		{"misspelt key", "", "retry: {attempts: 2, backof: 5s}", Retry{}, `f.yaml:6:28: unknown key "backof" in retry (hint: did you mean backoff?)`},
		{"a string", "", "retry: forever", Retry{}, "f.yaml:6:14: retry: want a number of attempts or {attempts, backoff, max-backoff, factor, jitter}, got a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "- id: r\n  on: t\n"
			if tc.rule != "" {
				src += "  " + tc.rule + "\n"
			} else {
				src += "\n"
			}
			src += "  steps:\n    - do: p.a\n"
			if tc.step != "" {
				src += "      " + tc.step + "\n"
			}
			rs, errs := ParseFile("f.yaml", []byte(src), nil)
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
			if got := rs[0].Steps[0].Retry; got != tc.want {
				t.Errorf("Retry = %+v; want %+v", got, tc.want)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	rt := Retry{Attempts: 10, Backoff: time.Second, MaxBackoff: 10 * time.Second, Factor: 2, Jitter: 0.2}
	tests := []struct {
		attempt int
		u       float64
		want    time.Duration
	}{
		{2, 0, time.Second},
		{3, 0, 2 * time.Second},
		{4, 0, 4 * time.Second},
		{5, 0, 8 * time.Second},
		{6, 0, 10 * time.Second}, // capped
		{9, 0, 10 * time.Second},
		{2, 0.5, 900 * time.Millisecond}, // up to 20% off
		{6, 0.999999, 8*time.Second + 2*time.Microsecond},
	}
	for _, tc := range tests {
		if got := rt.Delay(tc.attempt, tc.u); got.Round(time.Microsecond) != tc.want {
			t.Errorf("Delay(%d, %v) = %v; want %v", tc.attempt, tc.u, got, tc.want)
		}
	}
}

func ExampleRetry_Delay() {
	rt := Retry{Attempts: 5, Backoff: time.Second, MaxBackoff: 5 * time.Second, Factor: 2}
	for n := 2; n <= 5; n++ {
		fmt.Println(n, rt.Delay(n, 0))
	}
	// Output:
	// 2 1s
	// 3 2s
	// 4 4s
	// 5 5s
}
