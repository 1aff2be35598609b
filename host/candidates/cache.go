package candidates

import "sync"

// Candidate is one backlog item a cycle chose: the shard and band it was
// planned in, its fairness key and its id in the shard's backlog.
type Candidate struct {
	Shard int
	Band  int
	Key   string
	ID    string
}

// Cache holds each shard's current candidates.
type Cache struct {
	mu      sync.Mutex
	byShard map[int][]Candidate
	ready   chan struct{} // holds a token while any candidate waits
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{byShard: map[int][]Candidate{}, ready: make(chan struct{}, 1)}
}

// Replace makes cs, in the order given, shard's candidates, and reports how
// many of its earlier candidates, never popped, that discarded.
func (c *Cache) Replace(shard int, cs []Candidate) (discarded int) {
	c.mu.Lock()
	discarded = len(c.byShard[shard])
	if len(cs) == 0 {
		delete(c.byShard, shard)
	} else {
		c.byShard[shard] = append([]Candidate(nil), cs...)
	}
	waiting := len(c.byShard) > 0
	c.mu.Unlock()
	if waiting {
		c.signal()
	}
	return discarded
}

// Drop discards a shard's candidates (its lease lost or released) and
// reports how many.
func (c *Cache) Drop(shard int) int { return c.Replace(shard, nil) }

// Pop takes the next candidate: from the shard holding the best band (the
// lower shard number on a tie), the first that shard's cycle ordered.
func (c *Cache) Pop() (Candidate, bool) {
	c.mu.Lock()
	best, found := 0, false
	for shard, cs := range c.byShard {
		if !found || cs[0].Band < c.byShard[best][0].Band ||
			cs[0].Band == c.byShard[best][0].Band && shard < best {
			best, found = shard, true
		}
	}
	if !found {
		c.mu.Unlock()
		return Candidate{}, false
	}
	cs := c.byShard[best]
	next := cs[0]
	if len(cs) == 1 {
		delete(c.byShard, best)
	} else {
		c.byShard[best] = cs[1:]
	}
	more := len(c.byShard) > 0
	c.mu.Unlock()
	if more {
		c.signal()
	}
	return next, true
}

// Ready receives when candidates may be waiting: a worker with nothing to
// do waits on it, then Pops (which may still find none, if another worker
// was quicker).
func (c *Cache) Ready() <-chan struct{} { return c.ready }

// Len is how many candidates wait, over every shard.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cs := range c.byShard {
		n += len(cs)
	}
	return n
}

func (c *Cache) signal() {
	select {
	case c.ready <- struct{}{}:
	default:
	}
}
