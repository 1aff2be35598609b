package pool

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Job is one unit of work.
type Job struct {
	Band int
	// Group shares the workers with the other groups of its band by the
	// time their jobs take: the group whose jobs have used the least
	// worker time goes next, so a group of slow jobs queues behind itself
	// rather than in front of the others. The daemon's group is the rule.
	// "": one group for every such job.
	Group string
	// Key is the fairness key within a group: jobs of one key run in their
	// order, and the keys of a group take turns.
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
	stats   map[string]*GroupStats // by group, across bands
}

// GroupStats is what one group's jobs had of the workers: how many ran,
// the worker time they used, and the longest any waited in the queue — a
// group starved by the others shows there.
type GroupStats struct {
	Ran         uint64
	Used        time.Duration
	LongestWait time.Duration
	Queued      int
}

func (p *Pool) groupStat(name string) *GroupStats {
	if p.stats == nil {
		p.stats = map[string]*GroupStats{}
	}
	gs := p.stats[name]
	if gs == nil {
		gs = &GroupStats{}
		p.stats[name] = gs
	}
	return gs
}

// Groups reports each group's GroupStats, with the jobs it has queued now.
func (p *Pool) Groups() map[string]GroupStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]GroupStats, len(p.stats))
	for name, gs := range p.stats {
		out[name] = *gs
	}
	for _, b := range p.bands {
		for name, g := range b.groups {
			gs := out[name]
			for _, q := range g.keys {
				gs.Queued += len(*q)
			}
			out[name] = gs
		}
	}
	return out
}

// band is one priority band: its groups with queued jobs, and the worker
// time every group of it has used.
type band struct {
	groups map[string]*group // with queued jobs
	used   map[string]time.Duration
}

// group is one group's queue: a queue per key and the keys' turn order.
type group struct {
	name string
	keys map[string]*[]queued
	turn []string // keys with queued jobs, in turn order
}

// queued is a job waiting, and since when.
type queued struct {
	run func()
	at  time.Time
}

// slack bounds the worker time a group that had no work is behind the
// others by when it comes back: without it, a group idle for an hour would
// then own the workers until it caught up.
const slack = 100 * time.Millisecond

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

// Free is how many more jobs the queue takes now: 0 once stopped. Like
// Fits, the answer can change the moment it is given.
func (p *Pool) Free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return 0
	}
	return max(p.capacity-p.queued, 0)
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
		b = &band{groups: map[string]*group{}, used: map[string]time.Duration{}}
		p.bands[j.Band] = b
	}
	if len(b.groups) == 0 {
		i := sort.SearchInts(p.order, j.Band)
		p.order = append(p.order, 0)
		copy(p.order[i+1:], p.order[i:])
		p.order[i] = j.Band
	}
	g := b.groups[j.Group]
	if g == nil {
		g = &group{name: j.Group, keys: map[string]*[]queued{}}
		// A group coming back with work starts no further behind than
		// slack: idle time is not credit.
		if floor, ok := b.least(); ok {
			b.used[j.Group] = max(b.used[j.Group], floor-slack)
		}
		b.groups[j.Group] = g
	}
	q := g.keys[j.Key]
	if q == nil {
		q = new([]queued)
		g.keys[j.Key] = q
	}
	if len(*q) == 0 {
		g.turn = append(g.turn, j.Key)
	}
	*q = append(*q, queued{j.Run, time.Now()})
	p.queued++
	p.cond.Signal()
}

// least is the least worker time a group with queued jobs has used.
func (b *band) least() (time.Duration, bool) {
	first := true
	var min time.Duration
	for name := range b.groups {
		if u := b.used[name]; first || u < min {
			min, first = u, false
		}
	}
	return min, !first
}

// popLocked takes the next job: of the lowest band, the group that has
// used the least worker time (ties by name, so the order is the same from
// run to run), and in it the first key in turn. The key goes to the back
// of its group's turn order if it has more. It returns the job, its band
// and group, and how long it waited.
func (p *Pool) popLocked() (func(), int, string, time.Duration) {
	bandID := p.order[0]
	b := p.bands[bandID]
	var g *group
	for _, c := range b.groups {
		if g == nil || b.used[c.name] < b.used[g.name] || b.used[c.name] == b.used[g.name] && c.name < g.name {
			g = c
		}
	}
	key := g.turn[0]
	q := g.keys[key]
	job := (*q)[0]
	(*q)[0] = queued{}
	*q = (*q)[1:]
	g.turn = g.turn[1:]
	if len(*q) > 0 {
		g.turn = append(g.turn, key)
	} else {
		delete(g.keys, key)
	}
	if len(g.turn) == 0 {
		delete(b.groups, g.name)
	}
	if len(b.groups) == 0 {
		p.order = p.order[1:]
	}
	p.queued--
	if p.room != nil {
		close(p.room)
		p.room = nil
	}
	return job.run, bandID, g.name, time.Since(job.at)
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
		fn, bandID, groupName, waited := p.popLocked()
		p.mu.Unlock()
		p.busy.Add(1)
		start := time.Now()
		fn()
		took := time.Since(start)
		p.busy.Add(-1)
		p.ran.Add(1)
		p.mu.Lock()
		if b := p.bands[bandID]; b != nil { // nil after Stop
			b.used[groupName] += took
		}
		gs := p.groupStat(groupName)
		gs.Used += took
		gs.Ran++
		gs.LongestWait = max(gs.LongestWait, waited)
		p.mu.Unlock()
	}
}

// Stop refuses new jobs, drops the queued ones, and waits for the workers
// to finish the jobs they are running. It returns how many it dropped.
func (p *Pool) Stop() int { return p.StopWithin(-1) }

// StopWithin is Stop that waits at most d for the running jobs (d < 0:
// as long as they take). A job still running then is left to finish on
// its own: a stop must not hang on one job that does not end (a plugin
// call past its deadline, a store that does not answer).
func (p *Pool) StopWithin(d time.Duration) int {
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
	if d < 0 {
		p.wg.Wait()
		return dropped
	}
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }() // ends with the last job
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
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
		for _, g := range b.groups {
			for _, q := range g.keys {
				s.ByBand[id] += len(*q)
			}
		}
		if s.ByBand[id] == 0 {
			delete(s.ByBand, id)
		}
	}
	return s
}

// Refused counts TrySubmit refusals since start.
func (p *Pool) Refused() uint64 { return p.refused.Load() }
