package sched

import "container/heap"

// entry is one parked callback.
type entry struct {
	when  int64 // unix nanoseconds (Virtual) or monotonic offset (Scheduler)
	seq   uint64
	fn    func()
	index int // in the heap; -1 once fired or stopped
}

// entries is a min-heap by when, then by seq, so callbacks due at the same
// instant fire in the order they were scheduled.
type entries []*entry

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
	e := x.(*entry)
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

func (h *entries) remove(e *entry) bool {
	if e.index < 0 {
		return false
	}
	heap.Remove(h, e.index)
	return true
}
