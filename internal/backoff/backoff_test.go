package backoff

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRetry(t *testing.T) {
	down := errors.New("not answering")
	wrong := errors.New("wrong password")
	p := Policy{First: time.Millisecond, Max: 4 * time.Millisecond, For: time.Second}
	tests := []struct {
		name     string
		p        Policy
		results  []error // f's answers in turn; the last repeats
		calls    int
		want     error  // errors.Is, nil for success
		gaveUp   bool   // the error says it gave up
		waits    string // the waits retrying was told of
		canceled bool
	}{
		{"succeeds at once", p, []error{nil}, 1, nil, false, "", false},
		{"succeeds after failures, waiting longer each time", p, []error{down, down, down, down, nil}, 5, nil, false, "1ms 2ms 4ms 4ms", false},
		{"a permanent error at once, unwrapped", p, []error{down, Permanent(wrong)}, 2, wrong, false, "1ms", false},
		// (No wall-clock bound is asserted: a next attempt that would start
		// past For is never made, here the second.)
		{"gives up when the next attempt would start past For", Policy{First: time.Hour, Max: time.Hour, For: time.Minute},
			[]error{down}, 1, down, true, "", false},
		{"stops when ctx ends", p, []error{down}, 1, down, false, "1ms", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			var waits []string
			err := Retry(ctx, tc.p, func() error {
				r := tc.results[min(calls, len(tc.results)-1)]
				calls++
				return r
			}, func(w time.Duration, err error) {
				waits = append(waits, w.String())
				if tc.canceled {
					cancel()
				}
			})
			if calls != tc.calls || strings.Join(waits, " ") != tc.waits {
				t.Errorf("%d calls, waits %v; want %d, %q", calls, waits, tc.calls, tc.waits)
			}
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if got := err != nil && strings.Contains(err.Error(), "gave up after"); got != tc.gaveUp {
				t.Errorf("error %v: gave up %v, want %v", err, got, tc.gaveUp)
			}
			var perm permanent
			if errors.As(err, &perm) {
				t.Error("a permanent error came back still marked")
			}
		})
	}
}
