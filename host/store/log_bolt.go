package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/ruled-dev/ruled/host/runlog"
)

// BoltLog is the execution log on bbolt (runlog.Store). Its staging tier
// is the writer's side of this value, in memory: staging into the file
// first would fsync every entry twice on a device's flash, for entries the
// log may lose anyway (it is best effort); a crash loses at most the batch
// being staged. Its final store is its own file, apart from the store's
// (OpenBolt) so that a log batch never queues behind a pending record's
// write and the log can be read, or deleted, on its own:
//
//	bucket "log":   "<run>" → its entries as the writer encoded them, packed by field ("exec", "n:000001" …)
//	bucket "runs":  "<run>" → its runlog.Meta: start (8 bytes), bytes (8), rule, 0, outcome
type BoltLog struct {
	db *bolt.DB
	memStaging
}

// memStaging is the staging tier of the logs that keep it in memory
// (BoltLog, SegmentLog): entries by key until their commit.
type memStaging struct {
	mu     sync.Mutex
	staged map[string][]byte
}

// stagedEntry is a staged entry a commit moves.
type stagedEntry struct {
	run string
	seq int
	v   []byte
}

// Stage keeps entries in memory until Commit.
func (m *memStaging) Stage(entries []runlog.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.staged == nil {
		m.staged = map[string][]byte{}
	}
	for _, e := range entries {
		m.staged[e.Key] = e.Value
	}
	return nil
}

// Staged is always empty: what was staged in memory died with its process.
func (m *memStaging) Staged() ([]string, error) { return nil, nil }

// take returns the staged entries of keys, parsed; a key outside the log
// fails them all, a key not staged is skipped.
func (m *memStaging) take(keys []string) ([]stagedEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]stagedEntry, 0, len(keys))
	for _, k := range keys {
		run, seq, err := runlog.ParseKey(k)
		if err != nil {
			return nil, fmt.Errorf("store: log commit: %w", err)
		}
		if v, ok := m.staged[k]; ok {
			out = append(out, stagedEntry{run, seq, v})
		}
	}
	return out, nil
}

// unstage drops committed keys from staging.
func (m *memStaging) unstage(keys []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.staged, k)
	}
}

var (
	logBucket  = []byte("log")
	runsBucket = []byte("runs")
)

// encodeMeta and decodeMeta are a run's index entry: read for every run at
// each retention pass, so kept small and quick to decode.
func encodeMeta(m *runlog.Meta) []byte {
	b := make([]byte, 16, 16+len(m.Rule)+1+len(m.Outcome))
	binary.BigEndian.PutUint64(b, uint64(m.At))
	binary.BigEndian.PutUint64(b[8:], uint64(m.Bytes))
	b = append(append(append(b, m.Rule...), 0), m.Outcome...)
	return b
}

func decodeMeta(id string, b []byte) (runlog.Meta, bool) {
	if len(b) < 17 {
		return runlog.Meta{}, false
	}
	rule, outcome, ok := bytes.Cut(b[16:], []byte{0})
	if !ok {
		return runlog.Meta{}, false
	}
	return runlog.Meta{ID: id, At: int64(binary.BigEndian.Uint64(b)), Bytes: int64(binary.BigEndian.Uint64(b[8:])),
		Rule: string(rule), Outcome: string(outcome)}, true
}

// OpenBoltLog opens or creates the log's file at path, with OpenBolt's
// locking.
func OpenBoltLog(path string, opts BoltOptions) (*BoltLog, error) {
	db, err := openDB(path, opts)
	if err != nil {
		return nil, err
	}
	return &BoltLog{db: db}, nil
}

// Close closes the file.
func (b *BoltLog) Close() error { return b.db.Close() }

// Commit writes the staged entries of keys in one transaction.
func (b *BoltLog) Commit(keys []string) (int, []runlog.Meta, error) {
	moves, err := b.take(keys)
	if err != nil {
		return 0, nil, err
	}
	if len(moves) == 0 {
		return 0, nil, nil
	}
	var touched []runlog.Meta
	err = b.db.Update(func(tx *bolt.Tx) error {
		lb, err := tx.CreateBucketIfNotExists(logBucket)
		if err != nil {
			return err
		}
		rb, err := tx.CreateBucketIfNotExists(runsBucket)
		if err != nil {
			return err
		}
		// Runs are named in time order (seq.NewRunID): the buckets grow at
		// their end, where full pages waste nothing.
		lb.FillPercent, rb.FillPercent = 0.9, 0.9
		byRun := map[string][]stagedEntry{}
		var order []string
		for _, mv := range moves {
			if _, ok := byRun[mv.run]; !ok {
				order = append(order, mv.run)
			}
			byRun[mv.run] = append(byRun[mv.run], mv)
		}
		for _, run := range order {
			m, ok := decodeMeta(run, rb.Get([]byte(run)))
			if !ok {
				m = runlog.Meta{ID: run}
			}
			fields := unpack(lb.Get([]byte(run)))
			for _, mv := range byRun[run] {
				field := runlog.Field(mv.seq)
				old := fields[field]
				fields[field] = mv.v
				m.Bytes += int64(len(mv.v) - len(old))
				if mv.seq == 0 {
					var e struct {
						Rule, Outcome string
						At            int64
					}
					if json.Unmarshal(mv.v, &e) == nil {
						m.Rule, m.Outcome, m.At = e.Rule, e.Outcome, e.At
					}
				}
			}
			if err := lb.Put([]byte(run), pack(fields)); err != nil {
				return err
			}
			if err := rb.Put([]byte(run), encodeMeta(&m)); err != nil {
				return err
			}
			touched = append(touched, m)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("store: log commit: %w", err)
	}
	b.unstage(keys)
	return len(moves), touched, nil
}

// Delete removes runs and their entries.
func (b *BoltLog) Delete(runs []string) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		lb, rb := tx.Bucket(logBucket), tx.Bucket(runsBucket)
		if lb == nil || rb == nil {
			return nil
		}
		for _, run := range runs {
			if err := lb.Delete([]byte(run)); err != nil {
				return err
			}
			if err := rb.Delete([]byte(run)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Index lists every run kept.
func (b *BoltLog) Index() ([]runlog.Meta, error) {
	var out []runlog.Meta
	err := b.db.View(func(tx *bolt.Tx) error {
		rb := tx.Bucket(runsBucket)
		if rb == nil {
			return nil
		}
		return rb.ForEach(func(k, v []byte) error {
			if m, ok := decodeMeta(string(k), v); ok {
				out = append(out, m)
			}
			return nil
		})
	})
	return out, err
}

// Entries returns a run's entries in key order.
func (b *BoltLog) Entries(run string) ([][]byte, error) {
	var out [][]byte
	err := b.db.View(func(tx *bolt.Tx) error {
		lb := tx.Bucket(logBucket)
		if lb == nil {
			return nil
		}
		fields := unpack(lb.Get([]byte(run)))
		for _, f := range sortedFields(fields) {
			out = append(out, bytes.Clone(fields[f]))
		}
		return nil
	})
	return out, err
}

// LastSeq is the highest node number kept for run.
func (b *BoltLog) LastSeq(run string) (int, error) {
	seq := 0
	err := b.db.View(func(tx *bolt.Tx) error {
		lb := tx.Bucket(logBucket)
		if lb == nil {
			return nil
		}
		for f := range unpack(lb.Get([]byte(run))) {
			if rest, ok := strings.CutPrefix(f, "n:"); ok {
				if n, err := strconv.Atoi(rest); err == nil && n > seq {
					seq = n
				}
			}
		}
		return nil
	})
	return seq, err
}

// A run's entries are one value, its fields ("exec", "n:000001" …) packed
// in order as uvarint-prefixed field and entry: one Put per run a commit
// touches instead of one per entry, which is most of what a bbolt commit
// costs.
func pack(fields map[string][]byte) []byte {
	n := 0
	for f, v := range fields {
		n += len(f) + len(v) + 2*binary.MaxVarintLen32
	}
	out := make([]byte, 0, n)
	for _, f := range sortedFields(fields) {
		v := fields[f]
		out = binary.AppendUvarint(out, uint64(len(f)))
		out = append(out, f...)
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	}
	return out
}

// unpack reads a packed run; what does not parse is left out. The values
// point into b.
func unpack(b []byte) map[string][]byte {
	fields := map[string][]byte{}
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			break
		}
		f := string(b[k : k+int(n)])
		b = b[k+int(n):]
		n, k = binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			break
		}
		fields[f] = b[k : k+int(n) : k+int(n)]
		b = b[k+int(n):]
	}
	return fields
}

func sortedFields(fields map[string][]byte) []string {
	out := make([]string, 0, len(fields))
	for f := range fields {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}
