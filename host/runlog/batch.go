package runlog

// batch finds, for the writer, each key's latest entry in a batch and
// groups the keys by run: a run's exec, then its nodes in the order they
// were first seen.
//
// Why not a map by key: a run puts about ten entries in a batch (its exec
// twice, each step's node opened then closed), and a lookup in a map of a
// few thousand keys, cold in a cache the runs' plugins keep evicting, was
// the largest part of the writer's own work beside encoding in the
// daemon's profile. Here a run is hashed once a batch: its entries mostly
// follow one another (a run's worker writes them in order), so the two
// runs looked up last are compared first — ids compare at their pointer
// when they are the same string, as a run's entries' are — and a node is
// new without any search when its number is past every number its run
// has in the batch, which is how the runner numbers them. Only a node
// written again (its close after its open) is searched for, among its
// run's nodes from the newest back, where it nearly always is.
//
// Grouping by run also hands a store each run's records together, so its
// own lookup of the run (store.SegmentLog's index) is made once a run,
// not once a record.
type batch struct {
	runAt  map[string]int32
	runs   []batchRun
	slots  []batchSlot
	recent [2]int32 // the runs looked up last, newest first; -1: none
}

type batchRun struct {
	id         string
	exec       int32 // its latest exec entry (an index into the batch's execs), or -1
	head, tail int32 // its nodes' slots, first seen first; -1: none
	maxSeq     int   // the highest node number it has in the batch
}

// batchSlot is one node key of a run.
type batchSlot struct {
	seq        int
	src        int32 // its latest entry: an index into the batch's nodes
	prev, next int32 // its run's other slots; -1: none
}

func newBatch() *batch {
	return &batch{runAt: map[string]int32{}, recent: [2]int32{-1, -1}}
}

// reset empties b for the next batch, keeping its buffers.
func (b *batch) reset() {
	clear(b.runAt)
	clear(b.runs) // no run id kept alive by the buffer
	b.runs, b.slots = b.runs[:0], b.slots[:0]
	b.recent = [2]int32{-1, -1}
}

// run is the index of id's run in b.runs, added if new.
func (b *batch) run(id string) int32 {
	if i := b.recent[0]; i >= 0 && b.runs[i].id == id {
		return i
	}
	i := b.recent[1]
	if i < 0 || b.runs[i].id != id {
		var ok bool
		if i, ok = b.runAt[id]; !ok {
			i = int32(len(b.runs))
			b.runs = append(b.runs, batchRun{id: id, exec: -1, head: -1, tail: -1})
			b.runAt[id] = i
		}
	}
	b.recent[0], b.recent[1] = i, b.recent[0]
	return i
}

// exec records execs[i], an exec entry of run id, as its run's latest.
func (b *batch) exec(id string, i int) {
	b.runs[b.run(id)].exec = int32(i)
}

// node records nodes[i], node seq of run id, as its key's latest.
func (b *batch) node(id string, seq, i int) {
	r := &b.runs[b.run(id)]
	if seq <= r.maxSeq {
		for s := r.tail; s >= 0; s = b.slots[s].prev {
			if b.slots[s].seq == seq {
				b.slots[s].src = int32(i)
				return
			}
		}
	}
	r.maxSeq = max(r.maxSeq, seq)
	s := int32(len(b.slots))
	b.slots = append(b.slots, batchSlot{seq: seq, src: int32(i), prev: r.tail, next: -1})
	if r.tail >= 0 {
		b.slots[r.tail].next = s
	} else {
		r.head = s
	}
	r.tail = s
}

// records appends to recs a record for each key of the batch, grouped by
// run, and to src the index of the key's latest entry (into execs for an
// exec record, Seq 0; into nodes for a node's).
func (b *batch) records(recs []Record, src []int, execs []Run) ([]Record, []int) {
	for _, r := range b.runs {
		if r.exec >= 0 {
			e := &execs[r.exec]
			recs = append(recs, Record{Run: e.ID, Rule: e.Rule, Outcome: e.Outcome, At: e.At})
			src = append(src, int(r.exec))
		}
		for s := r.head; s >= 0; s = b.slots[s].next {
			recs = append(recs, Record{Run: r.id, Seq: b.slots[s].seq})
			src = append(src, int(b.slots[s].src))
		}
	}
	return recs, src
}
