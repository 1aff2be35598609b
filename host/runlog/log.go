package runlog

import (
	"sync"
	"sync/atomic"
	"time"
)

// Entry is one encoded entry under its key, as staged.
type Entry struct {
	Key   string
	Value []byte
}

// Store is where the writer puts the log: a staging tier it writes entries
// to, and a final store that a commit moves them into, reading them
// itself, so that an entry crosses to the store once, as the bytes the
// writer encoded. host/store implements it on bbolt and Redis.
type Store interface {
	// Stage puts entries under their keys; a later entry of the same key
	// replaces the earlier.
	Stage(entries []Entry) error
	// Commit moves the staged entries of keys into the final store, each
	// to where its key says (ParseKey), replacing what is there, then
	// deletes them from staging. It returns how many it moved and the
	// index entries of the runs it touched, as they are now (the writer
	// keeps its own copy of the index from them). A key no longer staged
	// (a batch committed twice) is skipped; a key outside Prefix fails the
	// whole commit before anything moves.
	Commit(keys []string) (moved int, touched []Meta, err error)
	// Staged lists the keys staged but not committed, left by a process
	// that died between the two: the writer commits them when it starts.
	Staged() ([]string, error)
	// Delete removes runs, every entry and their index.
	Delete(runs []string) error
	Reader
}

// Appender is a Store whose commit needs no staging tier: it takes a
// batch of encoded entries with where each goes — the run and node number
// its key would carry, unparsed — and, for a run's run entry, the index
// fields the writer already holds, and makes them durable in one write.
// The segment log on a device is one: its staging tier was memory, lost
// with the process all the same, and the round trip through it (a map
// by key, each key formatted and parsed again, each run entry decoded again for
// its index fields) cost the writer more than the write
// (BenchmarkLogWriter, issue 6). A batch is all or nothing, a later
// record of a run and number replaces an earlier one, and a record whose
// run is not a valid run id (ValidRun) fails the batch before anything is
// written: what Commit promises for keys.
//
// An Appender enforces retention itself, over the index it keeps of its
// runs anyway (an Index over its own Metas): the writer keeps no copy.
type Appender interface {
	// Append writes recs.
	Append(recs []Record) error
	// Retain deletes the runs p says to (Index.Take), as Delete does.
	Retain(p Retention) error
}

// Record is one encoded entry for an Appender.
type Record struct {
	Run   string
	Seq   int    // the node's number; 0 for the run's run entry
	Value []byte // the entry, encoded
	// Rule, Outcome and At are the run entry's (Seq 0 only).
	Rule, Outcome string
	At            int64
}

// Reader reads committed runs.
type Reader interface {
	// Index lists every run kept.
	Index() ([]Meta, error)
	// Entries returns a run's entries in key order: its run entry (if
	// kept) first, then its nodes by number. A run not kept has none.
	Entries(run string) ([][]byte, error)
	// LastSeq is the highest node number kept for run, 0 for none.
	LastSeq(run string) (int, error)
}

// Logger is the writer's log: go-hclog's methods.
type Logger interface {
	Warn(msg string, args ...any)
	Info(msg string, args ...any)
}

// Options configure New. The zero value is the default.
type Options struct {
	// Queue is how many entries wait for the writer before new ones are
	// dropped. default: 8192.
	Queue int
	// Batch is how many entries one commit takes at most. default: 4096.
	Batch int
	// Flush is the longest an entry waits for its batch to fill. default:
	// 100ms.
	Flush time.Duration
	// Retention bounds what the log keeps.
	Retention Retention
	// Value is the largest value a node keeps — a trigger's event, a
	// step's input or output, a condition's values —; a larger one is
	// only measured (its node's Detail). default: MaxOutput. The writer
	// takes entries as given: the sequencer applies it (host/seq's
	// RunnerConfig.LogValue), as it makes the values.
	Value int
}

// Reasons an entry is dropped (Stats.Dropped).
const (
	DropQueueFull = "queue full"    // the writer is behind: backpressure
	DropStore     = "store failed"  // the batch's stage or commit failed
	DropNodeLimit = "past node max" // a run's node past MaxSeq
	DropStopped   = "log stopped"   // an entry after Close
)

// Log is the execution log's writer. A run hands it entries (Run, Node)
// and goes on: an entry costs the run a copy and an append under a mutex,
// and when the queue is full the entry is dropped and counted, never waited
// for. The writer is woken twice a batch at most — when its first entry
// arrives (to start the Flush timer) and when it is full — not once an
// entry: a channel send that wakes a sleeping goroutine cost the run more
// than everything else the log asks of it (BenchmarkExecLog, issue 6). One goroutine, started by New and stopped by Close, encodes the
// entries, stages and commits them in batches, and enforces retention
// every Retention.Every runs opened.
//
// The log is best effort by design: an entry can be lost to
// backpressure or a store outage, and after a crash a batch can be
// committed twice — keys derive from the run and the node's number, so the
// second commit overwrites instead of duplicating.
type Log struct {
	store Store
	opts  Options
	log   Logger
	mu    sync.Mutex
	q     queue         // entries waiting for the writer, at most opts.Queue
	spare queue         // the writer's other buffers, swapped with q
	kick  chan struct{} // wakes the writer: a first entry, or a full batch
	full  int           // entries that wake the writer to commit: min(Batch, Queue)
	flush chan chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	written atomic.Uint64
	opened  atomic.Uint64
	dropped sync.Map // reason → *atomic.Uint64
	closed  atomic.Bool
	failing bool // the last batch failed (the writer goroutine's own)
	// unsaved are the run entries of batches the store failed, the
	// latest of each run, written with the next batch (the writer's own):
	// a run that ended in a store outage was left "running" in the log
	// for good (issue 37: 72 runs after a Redis outage). Nodes are not
	// kept: a tree with a gap is readable, a run that never ends is not.
	unsaved  map[string]Run
	retryDue bool // the retry's time has come: commitQueued tries unsaved alone
	// The writer's own buffers, reused batch to batch: encodings, records,
	// and each key's latest entry in the batch.
	buf      []byte
	recs     []Record
	clock    clock
	src      []int // per record: its latest entry, then its value's start in buf
	keys     *batch
	appender Appender // store, when it is one
	// idx is the writer's copy of the store's index, for retention over a
	// store that is no Appender (nil until the first pass lists the
	// store).
	idx *keyedIndex
}

// queue is the entries on their way, by value: a run hands the writer a
// copy, not a pointer the heap must keep (an allocation per node on the
// run's worker, and garbage for the collector to trace). Their keys are
// derived by the writer, off the run's path. Execs and nodes never share
// a key, so two slices keep the order that matters: a key's later entry
// after its earlier.
type queue struct {
	execs  []Run
	nodes  []Node
	retain bool // a run opened that asks for retention after this batch
}

func (q *queue) len() int { return len(q.execs) + len(q.nodes) }

// New starts a writer over store. Entries staged and never committed by a
// process that died are committed first.
func New(store Store, opts Options, log Logger) *Log {
	if opts.Queue <= 0 {
		opts.Queue = 8192
	}
	if opts.Batch <= 0 {
		opts.Batch = 4096
	}
	if opts.Flush <= 0 {
		opts.Flush = 100 * time.Millisecond
	}
	opts.Retention = opts.Retention.withDefaults()
	l := &Log{store: store, opts: opts, log: log, kick: make(chan struct{}, 1), full: min(opts.Batch, opts.Queue),
		flush: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		keys: newBatch()}
	l.appender, _ = store.(Appender)
	if keys, err := store.Staged(); err != nil {
		log.Warn("execution log: cannot list what a previous process staged", "error", err)
	} else if len(keys) > 0 {
		n, _, err := store.Commit(keys)
		log.Info("execution log: committed what a previous process staged", "entries", n, "error", err)
	}
	go l.writer()
	return l
}

// Run logs a run's entry: at its start (Outcome Running) and at its end.
func (l *Log) Run(e Run) {
	retain := false
	if e.Outcome == Running {
		retain = l.opened.Add(1)%uint64(l.opts.Retention.Every) == 0
	}
	e.At = e.Started.UnixMilli()
	if !l.admit() {
		return
	}
	l.q.execs = append(l.q.execs, e)
	l.q.retain = l.q.retain || retain
	l.queued()
}

// Node logs a node of run: when it opens (Outcome Open) and when it
// closes.
func (l *Log) Node(n Node) {
	if n.Seq < 1 || n.Seq > MaxSeq {
		l.drop(DropNodeLimit, 1)
		return
	}
	if !l.admit() {
		return
	}
	l.q.nodes = append(l.q.nodes, n)
	l.queued()
}

// admit locks the queue for one more entry, or counts it dropped and
// returns false (unlocked).
func (l *Log) admit() bool {
	if l.closed.Load() {
		l.drop(DropStopped, 1)
		return false
	}
	l.mu.Lock()
	if l.q.len() >= l.opts.Queue {
		l.mu.Unlock()
		l.drop(DropQueueFull, 1)
		return false
	}
	return true
}

// queued unlocks the queue after an entry went in and wakes the writer
// for the first entry and for a full batch.
func (l *Log) queued() {
	n := l.q.len()
	l.mu.Unlock()
	if n == 1 || n == l.full {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

func (l *Log) drop(reason string, n int) {
	c, _ := l.dropped.LoadOrStore(reason, new(atomic.Uint64))
	c.(*atomic.Uint64).Add(uint64(n))
}

// Stats is what the writer did.
type Stats struct {
	Written uint64            `json:"written"` // entries committed
	Queued  int               `json:"queued"`  // entries waiting for the writer
	Dropped map[string]uint64 `json:"dropped,omitempty"`
}

// Stats reports the writer's counters.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	s := Stats{Written: l.written.Load(), Queued: l.q.len()}
	l.mu.Unlock()
	l.dropped.Range(func(k, v any) bool {
		if s.Dropped == nil {
			s.Dropped = map[string]uint64{}
		}
		s.Dropped[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	return s
}

// DroppedTotal is the sum of Stats().Dropped.
func (s Stats) DroppedTotal() uint64 {
	var n uint64
	for _, v := range s.Dropped {
		n += v
	}
	return n
}

// Flush waits until everything queued before it is committed (or
// dropped). For tests and for a reader that must see its own writes.
func (l *Log) Flush() {
	c := make(chan struct{})
	select {
	case l.flush <- c:
		<-c
	case <-l.done:
	}
}

// Close stops the writer after committing what is queued; entries after it
// are dropped (DropStopped). It is safe to call more than once.
func (l *Log) Close() {
	l.once.Do(func() {
		l.closed.Store(true)
		close(l.stop)
	})
	<-l.done
}

// LastSeq is the store's LastSeq: where a resumed run's nodes continue.
func (l *Log) LastSeq(run string) (int, error) { return l.store.LastSeq(run) }

// Reader is the store, to read the log.
func (l *Log) Reader() Reader { return l.store }

func (l *Log) writer() {
	defer close(l.done)
	var timer *time.Timer
	var tick <-chan time.Time
	// retry wakes the writer while run entries of a failed batch wait and
	// nothing else comes to write (unsaved).
	var retry *time.Timer
	var retryC <-chan time.Time
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	for {
		select {
		case <-l.kick:
			l.mu.Lock()
			n := l.q.len()
			l.mu.Unlock()
			if n < l.full {
				if timer == nil && n > 0 {
					timer = time.NewTimer(l.opts.Flush)
					tick = timer.C
				}
				continue
			}
		case <-tick:
		case <-retryC:
			retry, retryC = nil, nil
			l.retryDue = true
		case c := <-l.flush:
			l.commitQueued()
			close(c)
		case <-l.stop:
			l.retryDue = true // a last try for the run entries a failed batch left
			l.commitQueued()
			return
		}
		if timer != nil {
			timer.Stop()
			timer, tick = nil, nil
		}
		l.commitQueued() // after a flush: what came meanwhile (unsaved wait for the retry)
		if len(l.unsaved) > 0 && retry == nil {
			retry = time.NewTimer(unsavedRetry)
			retryC = retry.C
		}
	}
}

// maxUnsaved bounds the run entries kept through a store outage
// (unsaved); past it the oldest runs' are dropped, counted as DropStore.
const maxUnsaved = 4096

// unsavedRetry is how often the writer tries the run entries of failed
// batches again while nothing else comes to write.
const unsavedRetry = time.Second

// commitQueued takes everything queued and commits it, Batch entries a
// commit, then runs retention if a run asked for it. The run entries of
// batches the store failed go first (a later entry of a run replaces
// them).
func (l *Log) commitQueued() {
	l.mu.Lock()
	taken := l.q
	l.q, l.spare = l.spare, queue{}
	l.mu.Unlock()
	if len(taken.execs)+len(taken.nodes) == 0 && len(l.unsaved) > 0 && !l.retryDue {
		return // the run entries of a failed batch wait for the retry, or for more to write
	}
	l.retryDue = false
	if len(l.unsaved) > 0 {
		old := make([]Run, 0, len(l.unsaved)+len(taken.execs))
		for _, r := range l.unsaved {
			old = append(old, r)
		}
		clear(l.unsaved)
		taken.execs = append(old, taken.execs...)
	}
	execs, nodes := taken.execs, taken.nodes
	for len(execs) > 0 || len(nodes) > 0 {
		ne := min(len(execs), l.opts.Batch)
		nn := min(len(nodes), l.opts.Batch-ne)
		l.commit(execs[:ne], nodes[:nn])
		execs, nodes = execs[ne:], nodes[nn:]
	}
	clear(taken.execs) // no strings kept alive by a spare buffer
	clear(taken.nodes)
	l.spare = queue{execs: taken.execs[:0], nodes: taken.nodes[:0]}
	if taken.retain {
		l.retain()
	}
}

// commit encodes a batch and hands it to the store: appended, or staged
// and committed by key. A later entry of a key replaces an earlier one in
// the batch (a node opened and closed within one batch is encoded and
// written once).
func (l *Log) commit(execs []Run, nodes []Node) {
	// First the records, one per key, grouped by run, each with the
	// latest entry of its key in the batch (src: an index into execs, or
	// nodes for a node); then each latest entry is encoded, once: an entry
	// replaced within its batch — a node's open by its close, a run's
	// start by its end — costs no encoding.
	k := l.keys
	k.reset()
	for i := range execs {
		k.exec(execs[i].ID, i)
	}
	for i := range nodes {
		k.node(nodes[i].Run, nodes[i].Seq, i)
	}
	recs, src := k.records(l.recs[:0], l.src[:0], execs)
	buf := l.buf[:0]
	for i := range recs {
		at := len(buf)
		if recs[i].Seq == 0 {
			buf = l.clock.appendRun(buf, &execs[src[i]])
		} else {
			buf = l.clock.appendNode(buf, &nodes[src[i]])
		}
		src[i] = at // now where its value starts in buf
	}
	for i := range recs { // sliced once buf has stopped growing
		end := len(buf)
		if i+1 < len(recs) {
			end = src[i+1]
		}
		recs[i].Value = buf[src[i]:end:end]
	}
	l.src = src
	l.buf, l.recs = buf, recs
	entries := len(execs) + len(nodes)
	err := l.write(recs)
	clear(recs) // the next batch's buffer keeps no value alive
	if err != nil {
		l.drop(DropStore, entries)
		l.keepUnsaved(execs)
		if !l.failing {
			l.log.Warn("execution log: the store failed; entries are dropped until it answers", "error", err)
		}
		l.failing = true
		return
	}
	if l.failing {
		l.log.Info("execution log: the store answers again; logging resumed")
		l.failing = false
	}
	l.written.Add(uint64(len(recs)))
}

// keepUnsaved keeps the latest run entry of each run of a failed batch
// for the next, within maxUnsaved.
func (l *Log) keepUnsaved(execs []Run) {
	if l.unsaved == nil {
		l.unsaved = map[string]Run{}
	}
	for _, r := range execs {
		if _, ok := l.unsaved[r.ID]; ok || len(l.unsaved) < maxUnsaved {
			l.unsaved[r.ID] = r
		}
	}
}

// write hands recs to the store: Append when it is an Appender, else
// Stage under the keys the writer derives from them, then Commit, and
// keep the writer's copy of the index from what the commit touched.
func (l *Log) write(recs []Record) error {
	if l.appender != nil {
		return l.appender.Append(recs)
	}
	entries := make([]Entry, len(recs))
	keys := make([]string, len(recs))
	for i, r := range recs {
		if r.Seq == 0 {
			keys[i] = ExecKey(r.Run)
		} else {
			keys[i] = NodeKey(r.Run, r.Seq)
		}
		entries[i] = Entry{Key: keys[i], Value: r.Value}
	}
	if err := l.store.Stage(entries); err != nil {
		return err
	}
	_, touched, err := l.store.Commit(keys)
	if err != nil {
		return err
	}
	if l.idx != nil {
		for _, m := range touched {
			l.idx.put(m)
		}
	}
	return nil
}

// retain enforces Retention: an Appender over its own index; for any
// other store, over the writer's copy of the index, listed from the store
// once, then kept from what each commit touched and each deletion
// removed, so a pass costs no read of the store. (With several processes
// writing one log, each sees only its own runs after its start: one of
// them must own retention — fleet mode's business.)
func (l *Log) retain() {
	if l.appender != nil {
		if err := l.appender.Retain(l.opts.Retention); err != nil {
			l.log.Warn("execution log: retention failed", "error", err)
		}
		return
	}
	if l.idx == nil {
		index, err := l.store.Index()
		if err != nil {
			l.log.Warn("execution log: retention cannot list the runs", "error", err)
			return
		}
		l.idx = newKeyedIndex(index)
	}
	v := l.idx.Take(l.opts.Retention)
	if len(v) == 0 {
		return
	}
	ids := make([]string, len(v))
	for i, m := range v {
		ids[i] = m.ID
	}
	if err := l.store.Delete(ids); err != nil {
		l.log.Warn("execution log: retention failed", "error", err)
		for _, m := range v { // still kept: a later pass tries again
			l.idx.Add(m)
		}
		return
	}
	for _, id := range ids {
		delete(l.idx.byID, id)
	}
}
