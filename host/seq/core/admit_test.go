package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// TestAdmit: every mode against an idle key, a busy one and one at its
// max, and a cooldown before any mode.
func TestAdmit(t *testing.T) {
	single := &rules.Rule{Mode: rules.ModeSingle, Max: 10}
	restart := &rules.Rule{Mode: rules.ModeRestart, Max: 10}
	queue := &rules.Rule{Mode: rules.ModeQueue, Max: 3}
	parallel := &rules.Rule{Mode: rules.ModeParallel, Max: 2}
	cooled := &rules.Rule{Mode: rules.ModeParallel, Max: 2, Cooldown: time.Minute}
	for _, tc := range []struct {
		name string
		r    *rules.Rule
		k    Key
		want Decision
	}{
		{"single, idle", single, Key{}, Decision{Verdict: Start}},
		{"single, live", single, Key{Live: 1}, Decision{Suppress, WhySingle}},
		{"single, closing", single, Key{Closing: 1}, Decision{Suppress, WhySingle}},
		{"restart, idle", restart, Key{}, Decision{Verdict: Start}},
		{"restart, live", restart, Key{Live: 1, Queued: 1}, Decision{Verdict: Restart}},
		{"restart, closing", restart, Key{Closing: 1}, Decision{Verdict: Restart}},
		{"queue, idle", queue, Key{}, Decision{Verdict: Start}},
		{"queue, live", queue, Key{Live: 1, Queued: 1}, Decision{Verdict: Enqueue}},
		{"queue, full", queue, Key{Live: 1, Closing: 1, Queued: 1}, Decision{Refuse, WhyQueueFull}},
		{"parallel, under max", parallel, Key{Live: 1, Closing: 5}, Decision{Verdict: Start}},
		{"parallel, at max", parallel, Key{Live: 2}, Decision{Refuse, WhyParallel}},
		{"cooldown, cooling", cooled, Key{Cooling: true}, Decision{Suppress, WhyCooldown}},
		{"cooldown, cooled", cooled, Key{}, Decision{Verdict: Start}},
		{"no cooldown set", parallel, Key{Cooling: true}, Decision{Verdict: Start}},
	} {
		if got := Admit(tc.r, tc.k); got != tc.want {
			t.Errorf("%s: %+v; want %+v", tc.name, got, tc.want)
		}
	}
}

// FuzzAdmit drives a key through random triggers and run endings, with
// Admit deciding each trigger and a model carrying out its verdict as the
// driver does, and checks the modes' promises: parallel never has more
// than max live; queue never more than max live, closing and queued
// together; single and restart never two live; every trigger ends
// started, queued, or turned away with a reason.
func FuzzAdmit(f *testing.F) {
	f.Add(byte(0), byte(3), []byte{0, 0, 1, 0, 2, 0})
	f.Add(byte(2), byte(2), []byte{0, 0, 0, 0, 1, 1, 0})
	f.Add(byte(1), byte(1), []byte{0, 3, 0, 2, 0})
	f.Fuzz(func(t *testing.T, mode, max byte, ops []byte) {
		r := &rules.Rule{Mode: rules.Mode(mode % 4), Max: int(max%8) + 1}
		var k Key
		for i, op := range ops {
			switch op % 4 {
			case 0, 1: // a trigger
				d := Admit(r, k)
				switch d.Verdict {
				case Start:
					k.Live++
				case Enqueue:
					k.Queued++
				case Restart:
					k.Closing += k.Live // each ends; say each has finally steps
					k.Live = 0
					if k.Closing > 0 {
						k.Queued = 1 // the newest replaces the queue
					} else {
						k.Live = 1
					}
				case Suppress, Refuse:
					if d.Why == "" {
						t.Fatalf("op %d: turned away without a reason", i)
					}
				default:
					t.Fatalf("op %d: verdict %d", i, d.Verdict)
				}
			case 2: // a live run ends, or a closing one is done
				if k.Live > 0 {
					k.Live--
				} else if k.Closing > 0 {
					k.Closing--
				}
				if k.Live+k.Closing == 0 && k.Queued > 0 { // the queue's oldest starts
					k.Queued--
					k.Live++
				}
			case 3: // a live run closes (it has finally steps)
				if k.Live > 0 {
					k.Live--
					k.Closing++
				}
			}
			switch r.Mode {
			case rules.ModeParallel:
				if k.Live > r.Max {
					t.Fatalf("op %d: %d live, max %d", i, k.Live, r.Max)
				}
			case rules.ModeQueue:
				if k.Live+k.Closing+k.Queued > r.Max && k.Queued > 0 {
					t.Fatalf("op %d: %+v past max %d", i, k, r.Max)
				}
			case rules.ModeSingle, rules.ModeRestart:
				if k.Live > 1 {
					t.Fatalf("op %d: %d live in mode %v", i, k.Live, r.Mode)
				}
			}
		}
	})
}

func ExampleAdmit() {
	r := &rules.Rule{Mode: rules.ModeQueue, Max: 2}
	fmt.Println(Admit(r, Key{}).Verdict == Start)
	fmt.Println(Admit(r, Key{Live: 1}).Verdict == Enqueue)
	fmt.Println(Admit(r, Key{Live: 1, Queued: 1}).Why)
	// Output:
	// true
	// true
	// its key has max runs live and queued (mode queue)
}

// TestCell: Limit starts a Per, Burst at once after quiet; a key at its
// limit waits exactly its turn, and is at its limit until then.
func TestCell(t *testing.T) {
	th := rules.Throttle{Limit: 2, Per: time.Minute, Burst: 2}
	var c Cell
	now := int64(0)
	for i := range 2 {
		if !c.Take(now, th) {
			t.Fatalf("start %d of the burst refused", i+1)
		}
	}
	if c.Take(now, th) {
		t.Fatal("a third start at once")
	}
	if !c.AtLimit(now, th) {
		t.Error("not at its limit after its burst")
	}
	if w := c.Wait(now, th); w != 30*time.Second {
		t.Errorf("waits %v; want 30s (a minute over two)", w)
	}
	now += int64(30 * time.Second)
	if !c.Take(now, th) || c.Take(now, th) {
		t.Error("at its turn: want exactly one start")
	}
	now += int64(10 * time.Minute)
	if c.AtLimit(now, th) || c.Wait(now, th) > 0 {
		t.Error("after a quiet time: still at its limit")
	}
}

// TestDebounceDue: the quiet period after the latest trigger, cut at
// max-wait after the burst's first.
func TestDebounceDue(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		first, now time.Duration
		db         rules.Debounce
		want       time.Duration
	}{
		{"quiet after the first", 0, 0, rules.Debounce{For: time.Minute}, time.Minute},
		{"quiet after the latest", 0, 50 * time.Second, rules.Debounce{For: time.Minute}, 110 * time.Second},
		{"max-wait cuts it", 0, 150 * time.Second, rules.Debounce{For: time.Minute, MaxWait: 3 * time.Minute}, 3 * time.Minute},
		{"max-wait not reached", 0, 60 * time.Second, rules.Debounce{For: time.Minute, MaxWait: 3 * time.Minute}, 2 * time.Minute},
	} {
		if got := DebounceDue(t0.Add(tc.first), t0.Add(tc.now), tc.db).Sub(t0); got != tc.want {
			t.Errorf("%s: due at +%v; want +%v", tc.name, got, tc.want)
		}
	}
}
