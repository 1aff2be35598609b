package seq

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/ruled-dev/ruled/host/pool"
)

// quiet counts the runner's work in flight — its jobs given to the pool
// and not yet finished, its writes aside — and wakes whoever waits for
// that count to come down (Runner.Quiet). A job that hands work on (a
// step that submits the next, a write that goes aside) counts the new
// work before its own ends, so the count never reads low in the middle of
// a chain: a caller that sees it low knows that what it set off is done,
// or waits on a timer. Polling the pool could not tell: a job's callback
// lands a moment after the worker reads idle.
type quiet struct {
	n       atomic.Int64
	waiters atomic.Int32
	mu      sync.Mutex
	ch      chan struct{} // closed at a decrement while someone waits
}

func (q *quiet) add() { q.n.Add(1) }

func (q *quiet) done() {
	q.n.Add(-1)
	if q.waiters.Load() == 0 {
		return // the common case: one atomic load
	}
	q.mu.Lock()
	if q.ch != nil {
		close(q.ch)
		q.ch = nil
	}
	q.mu.Unlock()
}

// wait returns once at most n are in flight, or ctx's error.
func (q *quiet) wait(ctx context.Context, n int) error {
	q.waiters.Add(1)
	defer q.waiters.Add(-1)
	for {
		q.mu.Lock()
		if q.n.Load() <= int64(n) {
			q.mu.Unlock()
			return nil
		}
		if q.ch == nil {
			q.ch = make(chan struct{})
		}
		ch := q.ch
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// submit gives j to the pool, counted until it has run.
func (rn *Runner) submit(j pool.Job) {
	rn.m.quiet.add()
	f := j.Run
	j.Run = func() {
		defer rn.m.quiet.done()
		f()
	}
	rn.pool.Submit(j)
}

// trySubmit is submit for a job the pool may refuse (an admission).
func (rn *Runner) trySubmit(j pool.Job) bool {
	rn.m.quiet.add()
	f := j.Run
	j.Run = func() {
		defer rn.m.quiet.done()
		f()
	}
	if !rn.pool.TrySubmit(j) {
		rn.m.quiet.done()
		return false
	}
	return true
}

// Quiet returns once at most n of the runner's jobs and writes are in
// flight (Counts.InFlight), or with ctx's error. Quiet(ctx, 0) is "everything
// set off has run": what is left waits on a timer, or for an event. A
// harness on a virtual clock calls it after each move of the clock, whose
// callbacks run inline and submit their work before Advance returns; a
// test holding n steps on workers waits for the rest with n.
//
// Jobs a stopped pool drops stay counted: Quiet is for a runner whose
// pool runs.
func (rn *Runner) Quiet(ctx context.Context, n int) error { return rn.m.quiet.wait(ctx, n) }
