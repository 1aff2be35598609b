package wasm

import (
	"context"
	"testing"
)

// TestCalibration measures what a unit of fuel costs here (the figures
// docs/measurements.md, "Fuel calibration", reports: run with -v) and
// checks what the budget rate is made of: every pattern timed, and the
// rate the slowest one's, never under the floor.
func TestCalibration(t *testing.T) {
	for _, interp := range []bool{false, true} {
		rt, err := NewRuntime(context.Background(), Config{Interpreter: interp})
		if err != nil {
			t.Fatal(err)
		}
		c := rt.Calibration()
		rt.Close(context.Background())
		slowest := 0.0
		for _, p := range calibrationPatterns {
			ns, ok := c.NsPerUnit[p]
			if !ok || ns <= 0 {
				t.Errorf("interpreter %v: pattern %s not timed: %v", interp, p, c.NsPerUnit)
			}
			slowest = max(slowest, ns)
		}
		if want := max(1e9/slowest, minUnitsPerSecond); c.UnitsPerSecond != want {
			t.Errorf("interpreter %v: rate %.3g units/s, want the slowest pattern's %.3g", interp, c.UnitsPerSecond, want)
		}
		t.Logf("interpreter %v: %.3g units/s, ns a unit %v, took %v", interp, c.UnitsPerSecond, c.NsPerUnit, c.Took)
	}
}
