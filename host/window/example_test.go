package window_test

import (
	"fmt"
	"time"

	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/window"
)

// A 15-minute average of an outdoor sensor, as a rule reads it.
func Example() {
	clk := sched.NewVirtual(time.Date(2026, 1, 5, 6, 0, 0, 0, time.UTC))
	t, _ := window.New(window.Config{Clock: clk})
	t.Define(map[string]window.Spec{"outdoor": {Kind: window.Sliding, Last: 15 * time.Minute, Numeric: true}})
	t.Start()
	defer t.Close()
	for i, temp := range []float64{6, 4, 2} {
		if i > 0 {
			clk.Advance(5 * time.Minute)
		}
		t.Observe("outdoor", "", temp, clk.Now())
	}
	b, _ := t.Read("outdoor", "")
	fmt.Println(string(b))
	// Output: {"count":3,"sum":12,"avg":4,"min":2,"max":6,"first":6,"last":2,"per_second":0.003389830508474576,"per_minute":0.20338983050847456,"start":"2026-01-05T05:55:15Z","end":"2026-01-05T06:10:00Z"}
}
