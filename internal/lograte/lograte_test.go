package lograte

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// clock is a hand-moved clock for the limiter.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestAllow(t *testing.T) {
	type step struct {
		advance time.Duration
		cause   string
		ok      bool
		folded  uint64
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"the first line is logged at once", []step{{0, "a", true, 0}}},
		{"a repeat within the period is folded", []step{
			{0, "a", true, 0}, {100 * time.Millisecond, "a", false, 0}, {100 * time.Millisecond, "a", false, 0},
		}},
		{"the next line after the period counts what it folded", []step{
			{0, "a", true, 0}, {0, "a", false, 0}, {0, "a", false, 0}, {time.Second, "a", true, 2},
		}},
		{"causes are apart", []step{
			{0, "a", true, 0}, {0, "b", true, 0}, {0, "a", false, 0}, {0, "b", false, 0},
		}},
		{"a quiet cause logs at once with nothing folded", []step{
			{0, "a", true, 0}, {time.Hour, "a", true, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Unix(1e9, 0)}
			l := &Limiter{Now: c.now}
			for i, s := range tc.steps {
				c.t = c.t.Add(s.advance)
				folded, ok := l.Allow(s.cause)
				if ok != s.ok || folded != s.folded {
					t.Fatalf("step %d (%s): Allow = %d, %v; want %d, %v", i, s.cause, folded, ok, s.folded, s.ok)
				}
			}
		})
	}
}

// TestCausesAreBounded: causes an input names cannot grow the limiter
// past MaxCauses; past it the rest share one cause, and causes quiet for
// a period make room again.
func TestCausesAreBounded(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	l := &Limiter{Now: c.now}
	for i := range MaxCauses {
		if _, ok := l.Allow(strconv.Itoa(i)); !ok {
			t.Fatalf("cause %d folded on its first line", i)
		}
	}
	if _, ok := l.Allow("one more"); !ok {
		t.Fatal("the first overflowing cause folded")
	}
	if _, ok := l.Allow("and another"); ok {
		t.Fatal("a second overflowing cause within the period logged: the overflow is not shared")
	}
	if n := len(l.causes); n > MaxCauses+1 {
		t.Fatalf("%d causes tracked; want at most %d", n, MaxCauses+1)
	}
	c.t = c.t.Add(time.Second)
	if _, ok := l.Allow("later"); !ok {
		t.Fatal("a new cause after the period folded")
	}
	if n := len(l.causes); n > 2 {
		t.Fatalf("%d causes tracked after the quiet ones were forgotten", n)
	}
}

func ExampleLimiter() {
	c := &clock{t: time.Unix(1e9, 0)}
	l := &Limiter{Now: c.now}
	for range 500 { // a plugin drops 500 lines in one period
		if folded, ok := l.Allow("plugin lamp"); ok {
			fmt.Println("logged, folded", folded)
		}
	}
	c.t = c.t.Add(time.Second)
	if folded, ok := l.Allow("plugin lamp"); ok {
		fmt.Println("logged, folded", folded)
	}
	// Output:
	// logged, folded 0
	// logged, folded 499
}
