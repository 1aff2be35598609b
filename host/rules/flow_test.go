package rules

import (
	"strings"
	"testing"
	"time"
)

func TestDebounceAndThrottle(t *testing.T) {
	tests := []struct {
		name, line string
		debounce   Debounce
		throttle   Throttle
		err        string
	}{
		{"debounce period", "debounce: 30s", Debounce{For: 30 * time.Second}, Throttle{}, ""},
		{"debounce whole", "debounce: {for: 30s, max-wait: 5m}", Debounce{For: 30 * time.Second, MaxWait: 5 * time.Minute}, Throttle{}, ""},
		{"throttle", "throttle: {limit: 10, per: 1m}", Debounce{}, Throttle{Limit: 10, Per: time.Minute, Burst: 10}, ""},
		{"throttle whole", "throttle: {limit: 10, per: 1m, burst: 20, excess: drop}", Debounce{}, Throttle{Limit: 10, Per: time.Minute, Burst: 20, Drop: true}, ""},
		{"debounce without for", "debounce: {max-wait: 5m}", Debounce{}, Throttle{}, "f.yaml:3:13: debounce has no for (hint: debounce: 30s, or"},
		{"max-wait below for", "debounce: {for: 1m, max-wait: 10s}", Debounce{}, Throttle{}, "f.yaml:3:33: max-wait: 10s is shorter than for: 1m0s"},
		{"debounce without a unit", "debounce: 30", Debounce{}, Throttle{}, "f.yaml:3:13: debounce: 30 has no unit"},
		{"throttle without per", "throttle: {limit: 10}", Debounce{}, Throttle{}, "f.yaml:3:13: throttle needs limit and per (hint: throttle: {limit: 10, per: 1m"},
		{"throttle limit 0", "throttle: {limit: 0, per: 1m}", Debounce{}, Throttle{}, "f.yaml:3:21: limit: want at least 1, got 0"},
		{"excess misspelt", "throttle: {limit: 1, per: 1m, excess: dorp}", Debounce{}, Throttle{}, `f.yaml:3:41: excess: "dorp" is not one of queue, drop (hint: did you mean drop?)`},
		{"a throttle scalar", "throttle: 10", Debounce{}, Throttle{}, "f.yaml:3:13: throttle: want {limit, per, burst, excess}, got an integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, errs := ParseFile("f.yaml", []byte("- id: r\n  on: t\n  "+tc.line+"\n  steps: [{do: p.a}]\n"), nil)
			joined := errText(errs)
			if tc.err != "" {
				if !strings.Contains(joined, tc.err) {
					t.Errorf("errors %q; want %q", joined, tc.err)
				}
				return
			}
			if len(errs) != 0 || len(rs) != 1 {
				t.Fatalf("errs %v", joined)
			}
			if rs[0].Debounce != tc.debounce || rs[0].Throttle != tc.throttle {
				t.Errorf("debounce %+v, throttle %+v; want %+v, %+v", rs[0].Debounce, rs[0].Throttle, tc.debounce, tc.throttle)
			}
		})
	}
}
