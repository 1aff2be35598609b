package store

import (
	"bytes"
	"encoding/json"
	"fmt"
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
//	bucket "log":  "<run>/exec", "<run>/n:000001" … → the entries as the writer encoded them
//	bucket "runs": "<run>" → runlog.Meta as JSON (rule, outcome, start, bytes)
type BoltLog struct {
	db     *bolt.DB
	mu     sync.Mutex
	staged map[string][]byte
}

var (
	logBucket  = []byte("log")
	runsBucket = []byte("runs")
)

// OpenBoltLog opens or creates the log's file at path, with OpenBolt's
// locking.
func OpenBoltLog(path string, opts BoltOptions) (*BoltLog, error) {
	db, err := openDB(path, opts)
	if err != nil {
		return nil, err
	}
	return &BoltLog{db: db, staged: map[string][]byte{}}, nil
}

// Close closes the file.
func (b *BoltLog) Close() error { return b.db.Close() }

// Stage keeps entries in memory until Commit.
func (b *BoltLog) Stage(entries []runlog.Entry) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range entries {
		b.staged[e.Key] = e.Value
	}
	return nil
}

// Staged is always empty: what was staged in memory died with its process.
func (b *BoltLog) Staged() ([]string, error) { return nil, nil }

// Commit writes the staged entries of keys in one transaction.
func (b *BoltLog) Commit(keys []string) (int, error) {
	type move struct {
		run   string
		field string
		seq   int
		v     []byte
	}
	moves := make([]move, 0, len(keys))
	b.mu.Lock()
	for _, k := range keys {
		run, seq, err := runlog.ParseKey(k)
		if err != nil {
			b.mu.Unlock()
			return 0, fmt.Errorf("store: log commit: %w", err)
		}
		if v, ok := b.staged[k]; ok {
			moves = append(moves, move{run, runlog.Field(seq), seq, v})
		}
	}
	b.mu.Unlock()
	if len(moves) == 0 {
		return 0, nil
	}
	err := b.db.Update(func(tx *bolt.Tx) error {
		lb, err := tx.CreateBucketIfNotExists(logBucket)
		if err != nil {
			return err
		}
		rb, err := tx.CreateBucketIfNotExists(runsBucket)
		if err != nil {
			return err
		}
		metas := map[string]*runlog.Meta{}
		meta := func(run string) *runlog.Meta {
			if m := metas[run]; m != nil {
				return m
			}
			m := &runlog.Meta{ID: run}
			if v := rb.Get([]byte(run)); v != nil {
				_ = json.Unmarshal(v, m)
			}
			metas[run] = m
			return m
		}
		for _, mv := range moves {
			key := []byte(mv.run + "/" + mv.field)
			old := len(lb.Get(key))
			if err := lb.Put(key, mv.v); err != nil {
				return err
			}
			m := meta(mv.run)
			m.Bytes += int64(len(mv.v) - old)
			if mv.seq == 0 {
				var e runlog.Exec
				if json.Unmarshal(mv.v, &e) == nil {
					m.Rule, m.Outcome, m.At = e.Rule, e.Outcome, e.At
				}
			}
		}
		for run, m := range metas {
			v, _ := json.Marshal(m)
			if err := rb.Put([]byte(run), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: log commit: %w", err)
	}
	b.mu.Lock()
	for _, k := range keys {
		delete(b.staged, k)
	}
	b.mu.Unlock()
	return len(moves), nil
}

// Delete removes runs and their entries.
func (b *BoltLog) Delete(runs []string) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		lb, rb := tx.Bucket(logBucket), tx.Bucket(runsBucket)
		if lb == nil || rb == nil {
			return nil
		}
		for _, run := range runs {
			prefix := []byte(run + "/")
			c := lb.Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
				if err := c.Delete(); err != nil {
					return err
				}
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
		return rb.ForEach(func(_, v []byte) error {
			var m runlog.Meta
			if json.Unmarshal(v, &m) == nil {
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
		prefix := []byte(run + "/")
		c := lb.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			out = append(out, bytes.Clone(v))
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
		c := lb.Cursor()
		// "n;" sorts right after every "n:NNNNNN".
		k, _ := c.Seek([]byte(run + "/n;"))
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		if rest, ok := strings.CutPrefix(string(k), run+"/n:"); ok {
			seq, _ = strconv.Atoi(rest)
		}
		return nil
	})
	return seq, err
}
