package runlog

import (
	"cmp"
	"slices"
)

// Index is the runs a log keeps as retention sees them: in start order,
// with a count per rule and outcome and their bytes in total. A pass
// (Take) then walks from the oldest run and stops as soon as the log is
// within its limits, instead of copying and sorting every run it keeps
// (which was a third of the writer's time at 5,000 runs:
// BenchmarkExecLog's profile). Runs are named and opened in time order,
// so a new run goes at the end; one that arrives out of order is inserted
// in its place.
//
// It holds each run's Meta by pointer and does not own it: a store that
// keeps a Meta per run already (the segment log) gives the Index its own
// and changes them only through it (Set, Grow), so a run is looked up
// once a batch, by the store, not a second time in a copy kept by the
// writer (two indexes of the same runs, each a cold map lookup a run a
// batch, had been a seventh of the writer's time: BenchmarkLogWriter).
// The writer keeps one over what a Store reports, for a store that keeps
// none (Log.retain).
//
// It chooses what Retention.Victims chooses (TestIndexMatchesVictims). It
// is not safe for concurrent use: its owner's lock covers it. NewIndex
// makes one.
type Index struct {
	order  []*Meta // by At, then ID; nil where a run was removed
	gone   int     // nils in order
	groups map[[2]string]*group
	recent [2]*group // the groups counted last, newest first
	bytes  int64
}

// group is the runs of one rule and outcome.
type group struct {
	rule, outcome string
	n             int // runs indexed
	seen          int // runs a pass of Take has walked
}

// NewIndex indexes ms, in any order.
func NewIndex(ms []*Meta) *Index {
	x := &Index{order: slices.Clone(ms), groups: map[[2]string]*group{}}
	slices.SortFunc(x.order, less)
	for _, m := range ms {
		x.group(m.Rule, m.Outcome).n++
		x.bytes += m.Bytes
	}
	return x
}

// group is the count of rule's runs with outcome. Each run counted is
// counted again when it ends (Set) and once more when it is removed, and
// nearly all are of the few groups counted last: comparing those first
// (a rule's id and an outcome are mostly the same strings, equal at their
// pointer) leaves the map, keyed by two strings to hash, to the rest.
func (x *Index) group(rule, outcome string) *group {
	if g := x.recent[0]; g != nil && g.rule == rule && g.outcome == outcome {
		return g
	}
	g := x.recent[1]
	if g == nil || g.rule != rule || g.outcome != outcome {
		k := [2]string{rule, outcome}
		if g = x.groups[k]; g == nil {
			g = &group{rule: rule, outcome: outcome}
			x.groups[k] = g
		}
	}
	x.recent[0], x.recent[1] = g, x.recent[0]
	return g
}

func less(a, b *Meta) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.ID, b.ID)) }

// Len is how many runs are indexed.
func (x *Index) Len() int { return len(x.order) - x.gone }

// Bytes is the indexed runs' bytes.
func (x *Index) Bytes() int64 { return x.bytes }

// Add indexes a run not indexed yet. m is the caller's; change it only
// through Set and Grow from now on.
func (x *Index) Add(m *Meta) {
	x.group(m.Rule, m.Outcome).n++
	x.bytes += m.Bytes
	x.place(m)
}

// Set changes an indexed run's rule, outcome and start.
func (x *Index) Set(m *Meta, rule, outcome string, at int64) {
	if m.Rule != rule || m.Outcome != outcome {
		x.group(m.Rule, m.Outcome).n--
		x.group(rule, outcome).n++
		m.Rule, m.Outcome = rule, outcome
	}
	if m.At != at { // its place moves: take it out, insert anew
		x.unplace(m)
		m.At = at
		x.place(m)
	}
}

// Grow adds n (negative: takes) to an indexed run's bytes.
func (x *Index) Grow(m *Meta, n int64) {
	m.Bytes += n
	x.bytes += n
}

// place puts m in order. A run out of order is mostly a few places from
// the end: run ids increase within a process (seq.NewRunID), but runs
// opened on other workers or processes in the same millisecond, or
// reported by a later batch, arrive behind newer ones. Its place is found
// walking back (removed runs' nils are passed over: order ignores them);
// only one far back costs a compaction and a search.
func (x *Index) place(m *Meta) {
	i := len(x.order)
	for back := 0; i > 0; i-- {
		if q := x.order[i-1]; q != nil && less(q, m) < 0 {
			break
		}
		if back++; back > 64 {
			x.compact()
			i, _ = slices.BinarySearchFunc(x.order, m, less)
			break
		}
	}
	x.order = slices.Insert(x.order, i, m)
}

// unplace takes m out of order (not out of the counts).
func (x *Index) unplace(m *Meta) {
	for i := len(x.order) - 1; i >= 0; i-- { // recent runs are the ones updated
		if x.order[i] == m {
			x.order[i] = nil
			x.gone++
			return
		}
	}
}

// Remove unindexes runs: one walk of order for them all (runs are deleted
// oldest first mostly, so a search per run from the newest end would walk
// nearly all of it each time). A run not indexed is passed over.
func (x *Index) Remove(ms []*Meta) {
	doomed := make(map[*Meta]bool, len(ms))
	for _, m := range ms {
		doomed[m] = true
	}
	for i, m := range x.order {
		if len(doomed) == 0 {
			break
		}
		if m != nil && doomed[m] {
			delete(doomed, m)
			x.forget(i)
		}
	}
	x.tidy()
}

// forget takes the run at order[i] out of the index.
func (x *Index) forget(i int) {
	m := x.order[i]
	x.group(m.Rule, m.Outcome).n--
	x.bytes -= m.Bytes
	x.order[i] = nil
	x.gone++
}

// tidy compacts order once a quarter of it is removed runs.
func (x *Index) tidy() {
	if x.gone > len(x.order)/4 {
		x.compact()
	}
}

func (x *Index) compact() {
	if x.gone == 0 {
		return
	}
	x.order = slices.DeleteFunc(x.order, func(m *Meta) bool { return m == nil })
	x.gone = 0
}

// Take unindexes and returns the runs p says to delete, what
// Retention.Victims chooses, in its order: the oldest runs past Runs or
// Bytes that are not among the newest Keep of their rule and outcome, not
// running, and (for Runs) not within their rule's share; then, if the bytes are still over, protected runs too, the
// finished before the running, oldest first. The caller deletes them from
// its store (and, if that fails, Adds them back).
func (x *Index) Take(p Retention) []*Meta {
	p = p.withDefaults()
	count, total := x.Len(), x.bytes
	if count <= p.Runs && total <= p.Bytes {
		return nil
	}
	// The runs this pass may take are those of each finished group past
	// its newest Keep: once it has them all, the rest of order is
	// protected and the walk stops (a backlog of runs opened and not yet
	// ended — thousands, when a burst is queued — would otherwise be
	// walked at every pass).
	perRule, free := map[string]int{}, map[string]int{}
	for _, g := range x.groups {
		g.seen = 0
		if g.outcome != Running {
			free[g.rule] += max(0, g.n-p.Keep)
		}
		if g.n > 0 {
			perRule[g.rule] += g.n
		}
	}
	share := p.share(len(perRule))
	// What the walk can take at most: of each rule, its runs past Keep,
	// and (while the bytes are within bounds) only down to its share.
	deletable := 0
	for rule, n := range free {
		if total <= p.Bytes {
			n = min(n, max(0, perRule[rule]-share))
		}
		deletable += n
	}
	var out []*Meta
	var at []int // where each of out is in order
	for i, m := range x.order {
		if count <= p.Runs && total <= p.Bytes || len(out) == deletable {
			break
		}
		if m == nil {
			continue
		}
		g := x.group(m.Rule, m.Outcome)
		rank := g.seen // older runs of its group before it
		g.seen++
		if m.Outcome == Running || g.n-rank <= p.Keep {
			continue // protected
		}
		if total <= p.Bytes && perRule[m.Rule] <= share {
			continue // within its rule's share of the count
		}
		out, at = append(out, m), append(at, i)
		count--
		total -= m.Bytes
		perRule[m.Rule]--
	}
	// Counted out only now: the walk ranks each run within its group as
	// the pass found it.
	for _, i := range at {
		x.forget(i)
	}
	for _, lastRunning := range []bool{false, true} {
		for i, m := range x.order {
			if x.bytes <= p.Bytes {
				break
			}
			if m != nil && (m.Outcome == Running) == lastRunning {
				out = append(out, m)
				x.forget(i)
			}
		}
	}
	x.tidy()
	return out
}

// keyedIndex is an Index over the runs a Store reports, by id: the
// writer's own, for a store that keeps none (an Appender keeps its own).
type keyedIndex struct {
	*Index
	byID map[string]*Meta
}

func newKeyedIndex(ms []Meta) *keyedIndex {
	k := &keyedIndex{byID: make(map[string]*Meta, len(ms))}
	ps := make([]*Meta, len(ms))
	for i := range ms {
		p := new(Meta)
		*p = ms[i]
		if old := k.byID[p.ID]; old != nil { // listed twice: the later stands
			*old = *p
			continue
		}
		k.byID[p.ID], ps[i] = p, p
	}
	k.Index = NewIndex(slices.DeleteFunc(ps, func(p *Meta) bool { return p == nil }))
	return k
}

// put indexes a run as a store reports it now.
func (k *keyedIndex) put(m Meta) {
	if old := k.byID[m.ID]; old != nil {
		k.Grow(old, m.Bytes-old.Bytes)
		k.Set(old, m.Rule, m.Outcome, m.At)
		return
	}
	p := new(Meta)
	*p = m
	k.byID[m.ID] = p
	k.Add(p)
}
