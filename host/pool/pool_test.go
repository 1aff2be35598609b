package pool

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blocked returns a pool whose single worker is held by a job until the
// returned func is called, so a test can fill the queue and then watch the
// order jobs run in.
func blocked(t *testing.T, c Config) (*Pool, func()) {
	t.Helper()
	c.Workers = 1
	p := New(c)
	hold := make(chan struct{})
	started := make(chan struct{})
	p.Submit(Job{Run: func() { close(started); <-hold }})
	<-started
	t.Cleanup(func() { p.Stop() })
	return p, func() { close(hold) }
}

func TestOrderBandsThenKeysInTurn(t *testing.T) {
	p, release := blocked(t, Config{})
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	add := func(band int, key, name string) {
		p.Submit(Job{Band: band, Key: key, Run: func() {
			mu.Lock()
			got = append(got, name)
			if name == "end" {
				close(done)
			}
			mu.Unlock()
		}})
	}
	// A deep backlog on key a in band 5, one job of key b, then band 0 work.
	for i := 1; i <= 3; i++ {
		add(5, "a", fmt.Sprint("a", i))
	}
	add(5, "b", "b1")
	add(0, "x", "x1")
	add(0, "y", "y1")
	add(0, "x", "x2")
	add(9, "z", "end")
	release()
	<-done
	want := "x1 y1 x2 a1 b1 a2 a3 end"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("ran %q; want %q", g, want)
	}
}

func TestTrySubmitRefusedWhenFullSubmitNot(t *testing.T) {
	p, release := blocked(t, Config{Capacity: 2})
	var ran atomic.Int64
	job := Job{Run: func() { ran.Add(1) }}
	if !p.TrySubmit(job) || !p.TrySubmit(job) {
		t.Fatal("TrySubmit refused below capacity")
	}
	if p.TrySubmit(job) {
		t.Fatal("TrySubmit accepted past capacity")
	}
	p.Submit(job) // never refused
	if p.Refused() != 1 || p.Stats().Queued != 3 {
		t.Errorf("refused %d, queued %d", p.Refused(), p.Stats().Queued)
	}
	release()
	for i := 0; ran.Load() < 3 && i < 1000; i++ {
		time.Sleep(time.Millisecond)
	}
	if ran.Load() != 3 {
		t.Fatalf("ran %d; want 3", ran.Load())
	}
}

func TestStopDropsQueuedAndWaitsForRunning(t *testing.T) {
	p := New(Config{Workers: 1})
	started, finish := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	p.Submit(Job{Run: func() { close(started); <-finish; finished.Store(true) }})
	<-started
	for i := 0; i < 5; i++ {
		p.Submit(Job{Run: func() { t.Error("a dropped job ran") }})
	}
	go func() { time.Sleep(10 * time.Millisecond); close(finish) }()
	if n := p.Stop(); n != 5 {
		t.Errorf("Stop dropped %d; want 5", n)
	}
	if !finished.Load() {
		t.Error("Stop returned before the running job finished")
	}
	if p.TrySubmit(Job{Run: func() {}}) {
		t.Error("TrySubmit accepted after Stop")
	}
}

// TestPool_hammer submits from many goroutines to many workers: every job
// runs exactly once. (Order within a key is checked with one worker above;
// with several, two jobs of a key may run at once.)
func TestPool_hammer(t *testing.T) {
	p := New(Config{Workers: 4, Capacity: 1 << 20})
	defer p.Stop()
	const keys, per = 16, 500
	var mu sync.Mutex
	seen := map[string]int{}
	var total atomic.Int64
	var wg sync.WaitGroup
	for k := 0; k < keys; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				id := fmt.Sprint(k, "/", i)
				job := Job{Band: k % 3, Key: fmt.Sprint("k", k), Run: func() {
					mu.Lock()
					seen[id]++
					mu.Unlock()
					total.Add(1)
				}}
				if i%2 == 0 {
					p.Submit(job)
				} else if !p.TrySubmit(job) {
					t.Error("TrySubmit refused under capacity")
				}
			}
		}(k)
	}
	wg.Wait()
	for i := 0; total.Load() < keys*per && i < 10000; i++ {
		time.Sleep(time.Millisecond)
	}
	if total.Load() != keys*per || len(seen) != keys*per {
		t.Fatalf("ran %d jobs, %d distinct; want %d", total.Load(), len(seen), keys*per)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %s ran %d times", id, n)
		}
	}
}

// TestHeldRunsNothingUntilRelease: a held pool queues jobs, in their order,
// and runs none of them before Release.
func TestHeldRunsNothingUntilRelease(t *testing.T) {
	p := New(Config{Workers: 2, Held: true})
	t.Cleanup(func() { p.Stop() })
	var ran atomic.Int32
	var wg sync.WaitGroup
	wg.Add(5)
	for i := 0; i < 5; i++ {
		p.Submit(Job{Run: func() { ran.Add(1); wg.Done() }})
	}
	time.Sleep(50 * time.Millisecond)
	if n := ran.Load(); n != 0 {
		t.Fatalf("a held pool ran %d jobs", n)
	}
	if q := p.Stats().Queued; q != 5 {
		t.Fatalf("queued %d; want 5", q)
	}
	p.Release()
	wg.Wait()
	p.Release() // again: nothing
}

// TestWaitRoom: WaitRoom returns at once while the queue has room, waits
// while it is full until a worker takes a job, and gives up on done or
// Stop.
func TestWaitRoom(t *testing.T) {
	p, release := blocked(t, Config{Capacity: 1})
	if !p.WaitRoom(1, nil) || !p.Fits(1) || p.Free() != 1 {
		release()
		t.Fatalf("a queue of capacity 1 holding nothing: WaitRoom or Fits false, or Free %d", p.Free())
	}
	p.Submit(Job{Run: func() {}})
	if p.Fits(1) || p.Fits(2) || p.Free() != 0 {
		release()
		t.Fatalf("a queue of capacity 1 holding a job fits more (Free %d)", p.Free())
	}
	done := make(chan struct{})
	close(done)
	if p.WaitRoom(1, done) {
		release()
		t.Fatal("WaitRoom with done closed and no room: true")
	}
	got := make(chan bool)
	go func() { got <- p.WaitRoom(1, nil) }()
	select {
	case <-got:
		release()
		t.Fatal("WaitRoom returned while the queue was still full")
	case <-time.After(30 * time.Millisecond):
	}
	release() // the worker takes the queued job: room
	if !<-got {
		t.Fatal("WaitRoom after room was made: false")
	}
	// Room for more than the capacity is an empty queue.
	if !p.WaitRoom(5, nil) {
		t.Fatal("WaitRoom(5) on an empty queue of capacity 1: false")
	}

	q := New(Config{Workers: 1, Capacity: 1, Held: true})
	q.Submit(Job{Run: func() {}})
	go func() { got <- q.WaitRoom(1, nil) }()
	time.Sleep(10 * time.Millisecond)
	q.Stop()
	if <-got {
		t.Fatal("WaitRoom on a stopped pool: true")
	}
}

// TestGroupsShareByTime: one worker, a group of slow jobs queued ahead of
// a group of quick ones. Round robin would make each quick job wait for a
// slow one; sharing by worker time runs every quick job as soon as the
// slow group has used more, so the quick group is done after one slow job.
// Groups reports the time each used and the longest wait.
func TestGroupsShareByTime(t *testing.T) {
	p := New(Config{Workers: 1, Held: true})
	t.Cleanup(func() { p.Stop() })
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	add := func(group, name string, d time.Duration) {
		wg.Add(1)
		p.Submit(Job{Group: group, Key: name, Run: func() {
			time.Sleep(d)
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			wg.Done()
		}})
	}
	for i := range 5 {
		add("a-slow", fmt.Sprint("s", i), 30*time.Millisecond)
	}
	for i := range 5 {
		add("b-quick", fmt.Sprint("q", i), 0)
	}
	p.Release()
	wg.Wait()
	if got := strings.Join(order, " "); !strings.HasPrefix(got, "s0 q0 q1 q2 q3 q4 s1") {
		t.Errorf("ran %s; want the quick group right after the first slow job", got)
	}
	// A job's accounting follows its Run, so the last one may not be
	// counted yet when wg.Wait returns.
	g := p.Groups()
	for deadline := time.Now().Add(5 * time.Second); (g["a-slow"].Ran < 5 || g["b-quick"].Ran < 5) && time.Now().Before(deadline); g = p.Groups() {
		time.Sleep(time.Millisecond)
	}
	if g["a-slow"].Used < 150*time.Millisecond || g["a-slow"].Ran != 5 || g["b-quick"].Ran != 5 {
		t.Errorf("groups %+v", g)
	}
	if g["a-slow"].LongestWait <= g["b-quick"].LongestWait {
		t.Errorf("the slow group waited longest %v, the quick one %v: want the slow one behind itself",
			g["a-slow"].LongestWait, g["b-quick"].LongestWait)
	}
}
