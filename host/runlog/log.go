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
// writer encoded (seed 003). host/store implements it on bbolt and Redis.
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

// Reader reads committed runs.
type Reader interface {
	// Index lists every run kept.
	Index() ([]Meta, error)
	// Entries returns a run's entries in key order: its Exec entry (if
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
}

// Reasons an entry is dropped (Stats.Dropped).
const (
	DropQueueFull = "queue full"    // the writer is behind: backpressure
	DropStore     = "store failed"  // the batch's stage or commit failed
	DropNodeLimit = "past node max" // a run's node past MaxSeq
	DropStopped   = "log stopped"   // an entry after Close
)

// Log is the execution log's writer. A run hands it entries (Exec, Node)
// and goes on: an entry costs the run a copy and an append under a mutex,
// and when the queue is full the entry is dropped and counted, never waited
// for. The writer is woken twice a batch at most — when its first entry
// arrives (to start the Flush timer) and when it is full — not once an
// entry: a channel send that wakes a sleeping goroutine cost the run more
// than everything else the log asks of it (BenchmarkExecLog, issue 6). One goroutine, started by New and stopped by Close, encodes the
// entries, stages and commits them in batches, and enforces retention
// every Retention.Every runs opened.
//
// The log is best effort by design (seed 003): an entry can be lost to
// backpressure or a store outage, and after a crash a batch can be
// committed twice — keys derive from the run and the node's number, so the
// second commit overwrites instead of duplicating.
type Log struct {
	store Store
	opts  Options
	log   Logger
	mu    sync.Mutex
	q     []item        // entries waiting for the writer, at most opts.Queue
	spare []item        // the writer's other buffer, swapped with q
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
	failing bool   // the last batch failed (the writer goroutine's own)
	buf     []byte // the writer's encoding buffer, reused batch to batch
	// idx is the writer's copy of the store's index, for retention (nil
	// until the first pass lists the store).
	idx *index
}

// item is one entry on its way: an Exec or a Node (its key is derived by
// the writer, off the run's path), or, with neither, a marker that asks
// for retention.
type item struct {
	exec *Exec
	node *Node
}

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
		flush: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	if keys, err := store.Staged(); err != nil {
		log.Warn("execution log: cannot list what a previous process staged", "error", err)
	} else if len(keys) > 0 {
		n, _, err := store.Commit(keys)
		log.Info("execution log: committed what a previous process staged", "entries", n, "error", err)
	}
	go l.run()
	return l
}

// Exec logs a run's entry: at its start (Outcome Running) and at its end.
func (l *Log) Exec(e Exec) {
	if e.Outcome == Running {
		if n := l.opened.Add(1); n%uint64(l.opts.Retention.Every) == 0 {
			l.put(item{}) // a marker: enforce retention after this batch
		}
	}
	e.At = e.Started.UnixMilli()
	l.put(item{exec: &e})
}

// Node logs a node of run: when it opens (Outcome Open) and when it
// closes.
func (l *Log) Node(n Node) {
	if n.Seq < 1 || n.Seq > MaxSeq {
		l.drop(DropNodeLimit, 1)
		return
	}
	l.put(item{node: &n})
}

func (l *Log) put(it item) {
	if l.closed.Load() {
		l.drop(DropStopped, 1)
		return
	}
	l.mu.Lock()
	n := len(l.q)
	if n >= l.opts.Queue {
		l.mu.Unlock()
		l.drop(DropQueueFull, 1)
		return
	}
	l.q = append(l.q, it)
	l.mu.Unlock()
	if n == 0 || n+1 == l.full {
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
	s := Stats{Written: l.written.Load(), Queued: len(l.q)}
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

func (l *Log) run() {
	defer close(l.done)
	var timer *time.Timer
	var tick <-chan time.Time
	for {
		select {
		case <-l.kick:
			l.mu.Lock()
			n := len(l.q)
			l.mu.Unlock()
			if n < l.full {
				if timer == nil && n > 0 {
					timer = time.NewTimer(l.opts.Flush)
					tick = timer.C
				}
				continue
			}
		case <-tick:
		case c := <-l.flush:
			l.commitQueued()
			close(c)
		case <-l.stop:
			l.commitQueued()
			return
		}
		if timer != nil {
			timer.Stop()
			timer, tick = nil, nil
		}
		l.commitQueued()
	}
}

// commitQueued takes everything queued and commits it, Batch entries a
// commit, then runs retention if a marker asked for it.
func (l *Log) commitQueued() {
	l.mu.Lock()
	taken := l.q
	l.q, l.spare = l.spare[:0], nil
	l.mu.Unlock()
	retain := false
	batch := taken[:0] // filtered in place: markers out
	for _, it := range taken {
		if it.exec == nil && it.node == nil {
			retain = true
			continue
		}
		batch = append(batch, it)
	}
	for len(batch) > 0 {
		n := min(len(batch), l.opts.Batch)
		l.commit(batch[:n])
		batch = batch[n:]
	}
	clear(taken)
	l.spare = taken[:0]
	if retain {
		l.retain()
	}
}

// commit encodes a batch, stages it and commits its keys. A later entry
// of a key replaces an earlier one in the batch (a node opened and closed
// within one batch is encoded and staged once).
func (l *Log) commit(batch []item) {
	at := make(map[string]int, len(batch))
	latest := make([]item, 0, len(batch))
	keys := make([]string, 0, len(batch))
	for _, it := range batch {
		var key string
		if it.exec != nil {
			key = ExecKey(it.exec.ID)
		} else {
			key = NodeKey(it.node.Run, it.node.Seq)
		}
		if i, ok := at[key]; ok {
			latest[i] = it
			continue
		}
		at[key] = len(latest)
		latest = append(latest, it)
		keys = append(keys, key)
	}
	buf := l.buf[:0]
	ends := make([]int, len(latest))
	for i, it := range latest {
		if it.exec != nil {
			buf = AppendExec(buf, it.exec)
		} else {
			buf = AppendNode(buf, it.node)
		}
		ends[i] = len(buf)
	}
	l.buf = buf
	entries := make([]Entry, len(latest))
	start := 0
	for i := range latest {
		entries[i] = Entry{Key: keys[i], Value: buf[start:ends[i]:ends[i]]}
		start = ends[i]
	}
	err := l.store.Stage(entries)
	n := 0
	var touched []Meta
	if err == nil {
		n, touched, err = l.store.Commit(keys)
	}
	if err != nil {
		l.drop(DropStore, len(batch))
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
	l.written.Add(uint64(n))
	if l.idx != nil {
		for _, m := range touched {
			l.idx.put(m)
		}
	}
}

// retain enforces Retention over the writer's copy of the index: listed
// from the store once, then kept from what each commit touched and each
// deletion removed, so a pass costs no read of the store. (With several
// processes writing one log, each sees only its own runs after its start:
// one of them must own retention — fleet mode's business.)
func (l *Log) retain() {
	if l.idx == nil {
		index, err := l.store.Index()
		if err != nil {
			l.log.Warn("execution log: retention cannot list the runs", "error", err)
			return
		}
		l.idx = newIndex(index)
	}
	v := l.idx.victims(l.opts.Retention)
	if len(v) == 0 {
		return
	}
	if err := l.store.Delete(v); err != nil {
		l.log.Warn("execution log: retention failed", "error", err)
		return
	}
	l.idx.remove(v)
}
