package sched

import (
	"container/heap"
	"sync"
)

// queue is a clock's parked callbacks and the lock that guards them,
// which each of its Timers points to for Stop.
type queue struct {
	mu   sync.Mutex
	ents entries
}

// entries is a min-heap by when, then by seq, so callbacks due at the same
// instant fire in the order they were scheduled.
type entries []*Timer

func (h entries) Len() int { return len(h) }
func (h entries) Less(i, j int) bool {
	if h[i].when != h[j].when {
		return h[i].when < h[j].when
	}
	return h[i].seq < h[j].seq
}
func (h entries) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *entries) Push(x any) {
	e := x.(*Timer)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *entries) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}

func (h *entries) remove(e *Timer) bool {
	if e.index < 0 {
		return false
	}
	heap.Remove(h, e.index)
	return true
}
