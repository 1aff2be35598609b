package runlog

import (
	"cmp"
	"slices"
)

// index is the writer's copy of the store's index, kept for retention in
// start order with a count per rule and outcome. A pass then walks from
// the oldest run and stops as soon as the log is within its limits,
// instead of copying and sorting every run it keeps (which was a third of
// the writer's time at 5,000 runs: BenchmarkExecLog's profile). Runs are
// named and opened in time order, so a new run goes at the end; one that
// arrives out of order is inserted in its place.
//
// It chooses what Retention.Victims chooses (TestIndexMatchesVictims).
type index struct {
	order  []*Meta // by At, then ID; nil where a run was removed
	gone   int     // nils in order
	byID   map[string]*Meta
	groups map[[2]string]int // runs per rule and outcome
	bytes  int64
}

func newIndex(ms []Meta) *index {
	x := &index{byID: make(map[string]*Meta, len(ms)), groups: map[[2]string]int{}}
	for _, m := range ms {
		x.put(m)
	}
	return x
}

func less(a, b *Meta) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.ID, b.ID)) }

// put adds a run or updates one kept already.
func (x *index) put(m Meta) {
	if old := x.byID[m.ID]; old != nil {
		x.groups[[2]string{old.Rule, old.Outcome}]--
		x.bytes -= old.Bytes
		if old.At != m.At { // its place moves: take it out, insert anew
			x.drop(old)
		} else {
			*old = m
			x.groups[[2]string{m.Rule, m.Outcome}]++
			x.bytes += m.Bytes
			return
		}
	}
	p := &m
	x.byID[m.ID] = p
	x.groups[[2]string{m.Rule, m.Outcome}]++
	x.bytes += m.Bytes
	// A run out of order is mostly a few places from the end: run ids
	// increase within a process (seq.NewRunID), but runs opened on other
	// workers or processes in the same millisecond, or reported by a later
	// batch, arrive behind newer ones. Its place is found walking back
	// (removed runs' nils are passed over: order ignores them); only one
	// far back costs a compaction and a search.
	i := len(x.order)
	for back := 0; i > 0; i-- {
		if q := x.order[i-1]; q != nil && less(q, p) < 0 {
			break
		}
		if back++; back > 64 {
			x.compact()
			i, _ = slices.BinarySearchFunc(x.order, p, less)
			break
		}
	}
	x.order = slices.Insert(x.order, i, p)
}

// drop takes m out of order (not out of the counts).
func (x *index) drop(m *Meta) {
	delete(x.byID, m.ID)
	for i := len(x.order) - 1; i >= 0; i-- { // recent runs are the ones updated
		if x.order[i] == m {
			x.order[i] = nil
			x.gone++
			return
		}
	}
}

// remove forgets runs the store deleted: one walk of order for them all
// (they are the oldest, so a search per run from the newest end would walk
// nearly all of it each time).
func (x *index) remove(ids []string) {
	doomed := make(map[*Meta]bool, len(ids))
	for _, id := range ids {
		m := x.byID[id]
		if m == nil {
			continue
		}
		x.groups[[2]string{m.Rule, m.Outcome}]--
		x.bytes -= m.Bytes
		delete(x.byID, id)
		doomed[m] = true
	}
	for i, m := range x.order {
		if len(doomed) == 0 {
			break
		}
		if m != nil && doomed[m] {
			delete(doomed, m)
			x.order[i] = nil
			x.gone++
		}
	}
	if x.gone > len(x.order)/4 {
		x.compact()
	}
}

func (x *index) compact() {
	if x.gone == 0 {
		return
	}
	x.order = slices.DeleteFunc(x.order, func(m *Meta) bool { return m == nil })
	x.gone = 0
}

func (x *index) len() int { return len(x.byID) }

// victims is Retention.Victims over the index: the oldest runs past Runs
// or Bytes that are not among the newest Keep of their rule and outcome
// and not running; then, if the bytes are still over, protected runs too,
// the finished before the running, oldest first.
func (x *index) victims(p Retention) []string {
	p = p.withDefaults()
	count, total := x.len(), x.bytes
	if count <= p.Runs && total <= p.Bytes {
		return nil
	}
	// The runs this pass may take are those of each finished group past
	// its newest Keep: once it has them all, the rest of order is
	// protected and the walk stops (a backlog of runs opened and not yet
	// ended — thousands, when a burst is queued — would otherwise be
	// walked at every pass).
	deletable := 0
	for k, n := range x.groups {
		if k[1] != Running {
			deletable += max(0, n-p.Keep)
		}
	}
	var out []string
	var took []*Meta // what the first walk took; a map of them only if the bytes need a second
	seen := map[[2]string]int{}
	for _, m := range x.order {
		if count <= p.Runs && total <= p.Bytes || len(out) == deletable {
			break
		}
		if m == nil {
			continue
		}
		k := [2]string{m.Rule, m.Outcome}
		rank := seen[k] // older runs of its group before it
		seen[k]++
		if m.Outcome == Running || x.groups[k]-rank <= p.Keep {
			continue // protected
		}
		out = append(out, m.ID)
		took = append(took, m)
		count--
		total -= m.Bytes
	}
	if total <= p.Bytes {
		return out
	}
	taken := make(map[*Meta]bool, len(took))
	for _, m := range took {
		taken[m] = true
	}
	for _, lastRunning := range []bool{false, true} {
		for _, m := range x.order {
			if total <= p.Bytes {
				return out
			}
			if m != nil && !taken[m] && (m.Outcome == Running) == lastRunning {
				out = append(out, m.ID)
				taken[m] = true
				total -= m.Bytes
			}
		}
	}
	return out
}
