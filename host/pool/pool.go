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
	p := &Pool{bands: map[int]*band{}, capacity: c.Capacity}
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

// Full reports whether TrySubmit would refuse now: the queue is at its
// capacity or the pool stopped. For a caller that must refuse before it
// promises anything (the daemon's ingest answers 503 rather than accept an
// event it cannot queue); the answer can change the moment it is given.
func (p *Pool) Full() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped || p.queued >= p.capacity
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
	return fn
}

func (p *Pool) work() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for p.queued == 0 && !p.stopped {
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
