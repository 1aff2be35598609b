package pool

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Job is one unit of work.
type Job struct {
	Band int
	// Key is the fairness key: jobs of one key run in their order, and keys
	// of a band take turns.
	Key string
	Run func()
}

// Config sizes a Pool.
type Config struct {
	// Workers is the number of goroutines running jobs. default: 2.
	Workers int
	// Capacity is how many queued jobs TrySubmit accepts before refusing.
	// default: 1024.
	Capacity int
	// Held starts the pool with its workers waiting: jobs queue, and none
	// runs until Release. A daemon starting up queues the steps its replay
	// finds due before every service a step may call is up, and releases
	// the pool once they are: a step must never meet a bus not yet open.
	Held bool
}

// Pool is a fixed set of workers over a band-ordered, key-fair queue.
// Safe for concurrent use.
type Pool struct {
	mu       sync.Mutex
	cond     *sync.Cond
	bands    map[int]*band
	order    []int // bands with queued jobs, ascending
	queued   int
	capacity int
	stopped  bool
	held     bool          // Config.Held, until Release
	room     chan struct{} // closed when the queue drops below capacity (WaitRoom)
	wg       sync.WaitGroup

	refused atomic.Uint64
	ran     atomic.Uint64
	busy    atomic.Int64
}

// band is one priority band: a queue per key and the keys' turn order.
type band struct {
	keys map[string]*[]func()
	turn []string // keys with queued jobs, in turn order
}

// New starts a pool.
func New(c Config) *Pool {
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.Capacity <= 0 {
		c.Capacity = 1024
	}
	p := &Pool{bands: map[int]*band{}, capacity: c.Capacity, held: c.Held}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(c.Workers)
	for i := 0; i < c.Workers; i++ {
		go p.work()
	}
	return p
}

// TrySubmit queues a job unless the queue is full or the pool stopped, and
// reports whether it did. Refusals are counted (Refused).
func (p *Pool) TrySubmit(j Job) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.queued >= p.capacity {
		p.refused.Add(1)
		return false
	}
	p.pushLocked(j)
	return true
}

// Release lets the workers of a pool made with Config.Held take jobs.
// Releasing again, or a pool not held, does nothing.
func (p *Pool) Release() {
	p.mu.Lock()
	p.held = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// WaitRoom waits until the queue has room for n more jobs, so that n
// TrySubmits would be taken, and reports true; or reports false once the
// pool stopped or done is closed. (n over Capacity waits for an empty
// queue.) For an input with no client to answer "busy" (a file, a pipe, a
// pub/sub subscription): it waits for room where an HTTP client would be
// told to retry. Another submitter may take the room before the caller
// does; the caller's own submits are what it bounds.
func (p *Pool) WaitRoom(n int, done <-chan struct{}) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		switch {
		case p.stopped:
			return false
		case p.fitsLocked(n):
			return true
		}
		if p.room == nil {
			p.room = make(chan struct{})
		}
		ch := p.room
		p.mu.Unlock()
		select {
		case <-ch:
		case <-done:
			p.mu.Lock()
			return false
		}
		p.mu.Lock()
	}
}

// Fits reports whether n TrySubmits would be taken now: the queue has
// room for n more jobs and the pool runs. For a caller that must refuse
// before it promises anything (the daemon's ingest answers 503 rather than
// accept an event whose triggers it cannot queue); the answer can change
// the moment it is given.
func (p *Pool) Fits(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.stopped && p.fitsLocked(n)
}

func (p *Pool) fitsLocked(n int) bool {
	return p.queued+n <= p.capacity || n > p.capacity && p.queued == 0
}

// Submit queues a job whatever the queue holds. After Stop it is dropped.
func (p *Pool) Submit(j Job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.pushLocked(j)
}

func (p *Pool) pushLocked(j Job) {
	b := p.bands[j.Band]
	if b == nil {
		b = &band{keys: map[string]*[]func(){}}
		p.bands[j.Band] = b
	}
	if len(b.turn) == 0 {
		i := sort.SearchInts(p.order, j.Band)
		p.order = append(p.order, 0)
		copy(p.order[i+1:], p.order[i:])
		p.order[i] = j.Band
	}
	q := b.keys[j.Key]
	if q == nil {
		q = new([]func())
		b.keys[j.Key] = q
	}
	if len(*q) == 0 {
		b.turn = append(b.turn, j.Key)
	}
	*q = append(*q, j.Run)
	p.queued++
	p.cond.Signal()
}

// popLocked takes the next job: the first key in turn of the lowest band.
// The key goes to the back of its band's turn order if it has more.
func (p *Pool) popLocked() func() {
	bandID := p.order[0]
	b := p.bands[bandID]
	key := b.turn[0]
	q := b.keys[key]
	fn := (*q)[0]
	(*q)[0] = nil
	*q = (*q)[1:]
	b.turn = b.turn[1:]
	if len(*q) > 0 {
		b.turn = append(b.turn, key)
	} else {
		delete(b.keys, key)
	}
	if len(b.turn) == 0 {
		p.order = p.order[1:]
		delete(p.bands, bandID)
	}
	p.queued--
	if p.room != nil {
		close(p.room)
		p.room = nil
	}
	return fn
}

func (p *Pool) work() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for (p.queued == 0 || p.held) && !p.stopped {
			p.cond.Wait()
		}
		if p.stopped {
			p.mu.Unlock()
			return
		}
		fn := p.popLocked()
		p.mu.Unlock()
		p.busy.Add(1)
		fn()
		p.busy.Add(-1)
		p.ran.Add(1)
	}
}

// Stop refuses new jobs, drops the queued ones, and waits for the workers
// to finish the jobs they are running. It returns how many it dropped.
func (p *Pool) Stop() int {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return 0
	}
	p.stopped = true
	dropped := p.queued
	p.bands, p.order, p.queued = map[int]*band{}, nil, 0
	if p.room != nil {
		close(p.room)
		p.room = nil
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
	return dropped
}

// Stats is a snapshot of the pool.
type Stats struct {
	Queued  int
	ByBand  map[int]int
	Busy    int
	Ran     uint64
	Refused uint64
}

// Stats reports the queue depth (by band), busy workers and counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Queued: p.queued, ByBand: map[int]int{}, Busy: int(p.busy.Load()),
		Ran: p.ran.Load(), Refused: p.refused.Load()}
	for id, b := range p.bands {
		for _, q := range b.keys {
			s.ByBand[id] += len(*q)
		}
	}
	return s
}

// Refused counts TrySubmit refusals since start.
func (p *Pool) Refused() uint64 { return p.refused.Load() }
