package bus

import (
	"sync"
	"sync/atomic"
)

// Counters counts what ingest accepted and, by reason, what it refused, for
// `ruled status` and /metrics. One Counters is usually shared by every way in
// (HTTP, NDJSON, the Redis bus) so the daemon shows one set of figures.
//
// The zero Counters is ready to use; it is safe for concurrent use. Accepting
// is one atomic add: it is on every event's path, refusals are rare.
type Counters struct {
	accepted atomic.Uint64

	mu       sync.Mutex
	rejected map[Reason]uint64
}

// CountersSnapshot is Counters at one moment.
type CountersSnapshot struct {
	Accepted uint64 `json:"accepted"`
	// Rejected counts refusals by reason; never nil.
	Rejected map[Reason]uint64 `json:"rejected"`
}

// Accept counts one accepted event.
func (c *Counters) Accept() { c.accepted.Add(1) }

// Reject counts one refused event. An empty reason is counted as "other", so
// that a refusal is never lost from the figures.
func (c *Counters) Reject(r Reason) {
	if r == "" {
		r = "other"
	}
	c.mu.Lock()
	if c.rejected == nil {
		c.rejected = make(map[Reason]uint64)
	}
	c.rejected[r]++
	c.mu.Unlock()
}

// Snapshot returns a copy of the counts. Accepted and Rejected are read one
// after the other, not atomically together: a figure for a dashboard, not a
// ledger.
func (c *Counters) Snapshot() CountersSnapshot {
	s := CountersSnapshot{Accepted: c.accepted.Load()}
	c.mu.Lock()
	s.Rejected = make(map[Reason]uint64, len(c.rejected))
	for r, n := range c.rejected {
		s.Rejected[r] = n
	}
	c.mu.Unlock()
	return s
}

// TotalRejected is the sum of Rejected over every reason.
func (s CountersSnapshot) TotalRejected() uint64 {
	var n uint64
	for _, k := range s.Rejected {
		n += k
	}
	return n
}
