package sched

import (
	"container/heap"
	"time"
)

// Virtual parks callbacks on a clock that moves only when told to. Advance
// and Set fire what comes due, synchronously, in order, on the caller's
// goroutine; nothing waits in real time.
//
// The wall clock Now reports can also be set back or forward (Set) without
// firing, to test what a device does when its clock jumps. Delays are
// measured on a separate monotonic count that only Advance moves, as on the
// real Scheduler.
type Virtual struct {
	queue
	seq   uint64
	mono  int64     // nanoseconds advanced so far
	wall  time.Time // what Now reports
	fires int
}

// NewVirtual returns a Virtual clock reading start.
func NewVirtual(start time.Time) *Virtual { return &Virtual{wall: start} }

// Now is the virtual wall clock.
func (v *Virtual) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.wall
}

// AfterFunc parks f for d of virtual time.
func (v *Virtual) AfterFunc(d time.Duration, f func()) *Timer {
	if d < 0 {
		d = 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seq++
	t := &Timer{when: v.mono + int64(d), seq: v.seq, fn: f, q: &v.queue}
	heap.Push(&v.ents, t)
	return t
}

// Advance moves both clocks forward by d, firing every callback that comes
// due, each with the clock set to its due time. A callback may park more
// callbacks; those due within d fire too.
func (v *Virtual) Advance(d time.Duration) {
	v.mu.Lock()
	end := v.mono + int64(d)
	for len(v.ents) > 0 && v.ents[0].when <= end {
		e := heap.Pop(&v.ents).(*Timer)
		v.wall = v.wall.Add(time.Duration(e.when - v.mono))
		v.mono = e.when
		v.fires++
		v.mu.Unlock()
		e.fn()
		v.mu.Lock()
	}
	v.wall = v.wall.Add(time.Duration(end - v.mono))
	v.mono = end
	v.mu.Unlock()
}

// SetWall sets the wall clock without moving the monotonic one or firing
// anything: a clock jump.
func (v *Virtual) SetWall(t time.Time) {
	v.mu.Lock()
	v.wall = t
	v.mu.Unlock()
}

// Len is the number of parked callbacks.
func (v *Virtual) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.ents)
}

// Next is how long until the next callback is due, and false if none is.
func (v *Virtual) Next() (time.Duration, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.ents) == 0 {
		return 0, false
	}
	return time.Duration(v.ents[0].when - v.mono), true
}

// Fired counts the callbacks fired so far.
func (v *Virtual) Fired() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.fires
}
