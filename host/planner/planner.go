package planner

import (
	"math"
	"slices"
	"sync"
)

// NoBand is the band when nothing is due.
const NoBand = math.MaxInt

// Tally is how much one fairness key has due at a band. Count is expected to
// be capped at the planning capacity: more than that cannot be served in
// one cycle anyway.
type Tally struct {
	Key   string
	Count int
}

// Grant is how many items of one key a cycle may take.
type Grant struct {
	Key string
	N   int
}

// Plan is one planning decision.
type Plan struct {
	// Band is the band served; GlobalBand the best band any shard reported.
	// When Band > GlobalBand this shard is outranked and Grants is empty.
	Band, GlobalBand int
	// Grants are the keys to take from, in the order to serve them, with
	// how many of each; their sum is at most the capacity.
	Grants []Grant
}

// Total is the sum of the grants.
func (p Plan) Total() int {
	n := 0
	for _, g := range p.Grants {
		n += g.N
	}
	return n
}

// Board holds every shard's last reported band: the fleet-wide half of
// strict priority.
type Board interface {
	// Report records shard's minimum due band (NoBand for none).
	Report(shard, band int)
	// Best is the best (lowest) band any shard reported.
	Best() int
}

// Capacity reports how many items the workers can take now.
type Capacity func() int

// Planner plans cycles. It is safe for concurrent use.
type Planner struct {
	board    Board
	capacity Capacity

	mu   sync.Mutex
	turn map[int]int // shard → where the next cycle's leftover slots start
}

// New returns a Planner over board that plans up to capacity() items a
// cycle. Both are required.
func New(board Board, capacity Capacity) *Planner {
	if board == nil || capacity == nil {
		panic("planner: New needs a board and a capacity")
	}
	return &Planner{board: board, capacity: capacity, turn: map[int]int{}}
}

// Capacity is how many items a cycle may plan now (at least 0).
func (p *Planner) Capacity() int { return max(p.capacity(), 0) }

// Plan reports shard's band to the board and decides what it may serve.
func (p *Planner) Plan(shard, band int, tallies []Tally) Plan {
	p.board.Report(shard, band)
	pl := Plan{Band: band, GlobalBand: p.board.Best()}
	if band == NoBand || band > pl.GlobalBand {
		return pl // nothing due here, or outranked: serve nothing
	}
	p.mu.Lock()
	start := p.turn[shard]
	p.turn[shard] = start + 1
	p.mu.Unlock()
	ts := slices.Clone(tallies)
	sortTallies(ts)
	pl.Grants = Share(p.Capacity(), ts, start)
	return pl
}

// Share divides capacity among tallies by max-min fairness: equal shares,
// what a key does not need goes to the others, and the slots the equal
// division leaves over go one each to the keys in turn, from the key at
// index start (modulo their number). Keys keep their tallies' order, rotated
// to begin at start; keys granted nothing are left out.
func Share(capacity int, tallies []Tally, start int) []Grant {
	var keys []Tally
	for _, t := range tallies {
		if t.Count > 0 {
			keys = append(keys, t)
		}
	}
	if capacity <= 0 || len(keys) == 0 {
		return nil
	}
	start %= len(keys)
	keys = append(keys[start:], keys[:start]...)
	grant := make([]int, len(keys))
	left := capacity
	open := len(keys) // keys that still want more
	for left > 0 && open > 0 {
		share := left / open
		if share == 0 { // fewer slots than keys wanting: one each, in turn
			for i := range keys {
				if left == 0 {
					break
				}
				if grant[i] < keys[i].Count {
					grant[i]++
					left--
				}
			}
			break
		}
		for i := range keys {
			if want := keys[i].Count - grant[i]; want > 0 {
				g := min(share, want)
				grant[i] += g
				left -= g
				if grant[i] == keys[i].Count {
					open--
				}
			}
		}
	}
	out := make([]Grant, 0, len(keys))
	for i, t := range keys {
		if grant[i] > 0 {
			out = append(out, Grant{Key: t.Key, N: grant[i]})
		}
	}
	return out
}

// MemBoard is a Board for the shards of one process.
type MemBoard struct {
	mu    sync.Mutex
	bands map[int]int
}

// NewBoard returns an empty in-memory Board.
func NewBoard() *MemBoard { return &MemBoard{bands: map[int]int{}} }

// Report records shard's band.
func (b *MemBoard) Report(shard, band int) {
	b.mu.Lock()
	b.bands[shard] = band
	b.mu.Unlock()
}

// Forget removes a shard (released, or taken over elsewhere): its last
// band must not hold the others back.
func (b *MemBoard) Forget(shard int) {
	b.mu.Lock()
	delete(b.bands, shard)
	b.mu.Unlock()
}

// Best is the lowest band reported.
func (b *MemBoard) Best() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	best := NoBand
	for _, band := range b.bands {
		best = min(best, band)
	}
	return best
}

var _ Board = (*MemBoard)(nil)

// sortTallies orders tallies by key: a Source's rows in a stable order, so
// the rotation, not the datastore's whim, decides who goes first.
func sortTallies(ts []Tally) {
	slices.SortFunc(ts, func(a, b Tally) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
}
