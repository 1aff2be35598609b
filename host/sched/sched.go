package sched

import (
	"container/heap"
	"time"
)

// Timer is a parked callback: its heap entry itself, one allocation
// of 48 bytes (it was an entry and a handle to it, 80 bytes in two:
// 100,000 runs parked on a device hold one each, issue 38).
type Timer struct {
	when  int64 // unix nanoseconds (Virtual) or monotonic offset (Scheduler)
	seq   uint64
	fn    func()
	index int    // in the heap; -1 once fired or stopped
	q     *queue // its clock's
}

// Stop unparks the callback. It reports whether it stopped it: false means
// it already fired (or was already stopped) — the fire and the stop raced,
// and the fire won.
func (t *Timer) Stop() bool {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	return t.q.ents.remove(t)
}

// Clock is the time a package's timers run on: the wall clock
// (Scheduler) or a test's (Virtual). It is declared once, here, rather
// than by each consumer as small interfaces usually are: every one of
// them (seq, task, schedule, engine, config) asked for these two methods,
// and AfterFunc answers this package's *Timer, so none was free of it
// (issue 40: five copies).
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) *Timer
}

var (
	_ Clock = (*Scheduler)(nil)
	_ Clock = (*Virtual)(nil)
)

// Scheduler parks callbacks on the real clock. Its zero value is not usable;
// call New. Safe for concurrent use.
type Scheduler struct {
	queue
	seq     uint64
	start   time.Time // the monotonic origin of entries' when
	rt      *time.Timer
	armedAt int64 // when rt is set to fire, -1 when idle
	stopped bool
}

// New returns a Scheduler on the real clock.
func New() *Scheduler {
	s := &Scheduler{start: time.Now(), armedAt: -1}
	s.rt = time.AfterFunc(time.Hour, s.fire)
	s.rt.Stop()
	return s
}

// Now is the wall clock.
func (s *Scheduler) Now() time.Time { return time.Now() }

// since is monotonic time since start, immune to wall clock jumps: a delay
// parked for five minutes fires five minutes later whatever the wall clock
// does meanwhile.
func (s *Scheduler) since() int64 { return int64(time.Since(s.start)) }

// AfterFunc parks f for d and returns its Timer. f runs on the runtime
// timer's goroutine, alone: keep it short.
func (s *Scheduler) AfterFunc(d time.Duration, f func()) *Timer {
	if d < 0 {
		d = 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	t := &Timer{when: s.since() + int64(d), seq: s.seq, fn: f, q: &s.queue}
	heap.Push(&s.ents, t)
	if !s.stopped {
		s.armLocked()
	}
	return t
}

// Len is the number of parked callbacks.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ents)
}

// Stop drops every parked callback and refuses to fire any more.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	s.stopped = true
	for len(s.ents) > 0 {
		heap.Pop(&s.ents)
	}
	s.rt.Stop()
	s.mu.Unlock()
}

// armLocked points the runtime timer at the earliest entry. Called with mu.
func (s *Scheduler) armLocked() {
	if len(s.ents) == 0 {
		s.rt.Stop()
		s.armedAt = -1
		return
	}
	next := s.ents[0].when
	if s.armedAt == next {
		return
	}
	s.armedAt = next
	s.rt.Reset(time.Duration(next - s.since()))
}

// fire runs every due callback, in order, then re-arms.
func (s *Scheduler) fire() {
	for {
		s.mu.Lock()
		if s.stopped || len(s.ents) == 0 || s.ents[0].when > s.since() {
			s.armedAt = -1
			if !s.stopped {
				s.armLocked()
			}
			s.mu.Unlock()
			return
		}
		e := heap.Pop(&s.ents).(*Timer)
		s.mu.Unlock()
		e.fn()
	}
}
