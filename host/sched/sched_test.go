package sched

import (
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestVirtualOrderAndNesting(t *testing.T) {
	v := NewVirtual(time.Unix(1000, 0))
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+v.Now().Format("05.000")) }
	}
	v.AfterFunc(3*time.Second, at("c"))
	v.AfterFunc(time.Second, at("a"))
	v.AfterFunc(time.Second, at("a2")) // same instant: scheduling order
	stopped := v.AfterFunc(2*time.Second, at("never"))
	v.AfterFunc(2*time.Second, func() {
		got = append(got, "b")
		v.AfterFunc(500*time.Millisecond, at("nested")) // due within the advance: fires
		v.AfterFunc(time.Hour, at("later"))
	})
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop: want true once, then false")
	}
	v.Advance(3 * time.Second)
	want := []string{"a@41.000", "a2@41.000", "b", "nested@42.500", "c@43.000"}
	if len(got) != len(want) {
		t.Fatalf("got %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v; want %v", got, want)
		}
	}
	if v.Len() != 1 || v.Now() != time.Unix(1003, 0) {
		t.Errorf("after: %d parked, now %v", v.Len(), v.Now())
	}
	if d, ok := v.Next(); !ok || d != time.Hour-time.Second {
		t.Errorf("Next = %v, %v", d, ok)
	}
}

func TestVirtualWallJumpDoesNotFire(t *testing.T) {
	v := NewVirtual(time.Unix(1000, 0))
	fired := false
	v.AfterFunc(time.Minute, func() { fired = true })
	v.SetWall(time.Unix(1000, 0).Add(24 * time.Hour))
	v.Advance(59 * time.Second)
	if fired {
		t.Fatal("a wall clock jump fired a delay early")
	}
	v.SetWall(time.Unix(0, 0))
	v.Advance(time.Second)
	if !fired {
		t.Fatal("the delay did not fire when due")
	}
}

func TestSchedulerFiresInOrder(t *testing.T) {
	s := New()
	defer s.Stop()
	var mu sync.Mutex
	var got []int
	done := make(chan struct{})
	for i := 5; i >= 1; i-- {
		i := i
		s.AfterFunc(time.Duration(i)*5*time.Millisecond, func() {
			mu.Lock()
			got = append(got, i)
			n := len(got)
			mu.Unlock()
			if n == 5 {
				close(done)
			}
		})
	}
	s.AfterFunc(time.Millisecond, func() {}).Stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("timers did not fire")
	}
	for i, v := range got {
		if v != i+1 {
			t.Fatalf("fired in order %v", got)
		}
	}
	if s.Len() != 0 {
		t.Errorf("%d entries left", s.Len())
	}
}

// TestScheduler_hammer parks and stops timers from many goroutines while
// they fire: every callback either fires once or is stopped, never both.
func TestScheduler_hammer(t *testing.T) {
	s := New()
	defer s.Stop()
	const n = 2000
	var fired, stopped atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			for i := 0; i < n/8; i++ {
				tm := s.AfterFunc(time.Duration(r.Intn(3000))*time.Microsecond, func() { fired.Add(1) })
				if r.Intn(2) == 0 && tm.Stop() {
					stopped.Add(1)
				}
			}
		}(int64(g))
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for fired.Load()+stopped.Load() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if f, st := fired.Load(), stopped.Load(); f+st != n {
		t.Fatalf("fired %d + stopped %d != %d", f, st, n)
	}
}

func TestSchedulerStopDropsEverything(t *testing.T) {
	s := New()
	var fired atomic.Bool
	s.AfterFunc(5*time.Millisecond, func() { fired.Store(true) })
	s.Stop()
	time.Sleep(20 * time.Millisecond)
	if fired.Load() || s.Len() != 0 {
		t.Fatal("a stopped scheduler fired or kept entries")
	}
}
