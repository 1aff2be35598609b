package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// BoltOptions configure OpenBolt. The zero value is the default.
type BoltOptions struct {
	// LockTimeout is how long OpenBolt waits for another process to let go
	// of the file before failing with ErrLocked. default: 1s.
	LockTimeout time.Duration
	// KVQuota bounds each plugin's kv scope.
	KVQuota Quota
}

// DefaultLockTimeout is BoltOptions.LockTimeout's default: long enough for a
// restarting daemon's predecessor to finish closing, short enough that a
// second daemon started by mistake says so at once.
const DefaultLockTimeout = time.Second

// ErrLocked is returned, wrapped with the path and the holder's pid, by an
// OpenBolt that could not take the file's lock: another process (normally
// another ruled on the same data directory) has it open. Stop that one or
// give this one another data directory.
var ErrLocked = errors.New("database is locked by another ruled")

// Bolt is the embedded store: one bbolt file. It is safe for concurrent
// use; writes are serialized by bbolt, reads run in parallel with them.
//
// It implements the sequencer's Hasher (a hash is a bucket, a field a key)
// and the wasm host's KV (a scope is the bucket "ruled:kv:<scope>").
type Bolt struct {
	db    *bolt.DB
	quota Quota
	group group
}

// OpenBolt opens or creates the store's file at path (its directory must
// exist). Buckets are created when first written, so a new file holds
// nothing until something is stored.
//
// Every write is fsynced before it returns (see the package doc): a write
// acknowledged is on the disk. Opening takes an exclusive lock on the file;
// when another process holds it, OpenBolt gives up after
// opts.LockTimeout with an error wrapping ErrLocked and naming the holder.
func OpenBolt(path string, opts BoltOptions) (*Bolt, error) {
	db, err := openDB(path, opts)
	if err != nil {
		return nil, err
	}
	return &Bolt{db: db, quota: opts.KVQuota.withDefaults()}, nil
}

// openDB opens a bbolt file with the store's options and locking.
func openDB(path string, opts BoltOptions) (*bolt.DB, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: opts.LockTimeout,
		// The freelist is rebuilt by a scan at open instead of being written
		// with every commit: one page less per write, and the file is small.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("store: open %s: %w (%s; waited %s)", path, ErrLocked, lockHolder(path), opts.LockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return db, nil
}

// Path is the file's path.
func (b *Bolt) Path() string { return b.db.Path() }

// DropPages hands back the pages of the store's file that reads have
// brought in: out of the process's resident set and, where clean, out of
// the kernel's cache. A start reads every pending record once, and the
// ~90 MB of file 100,000 of them fill stayed resident beside the heap
// (issue 38), though a parked run reads its record again only when it
// wakes. A later read faults its page in again: one disk read, once.
//
// Under a read transaction: bbolt maps the file again as it grows, under
// a lock every transaction holds a share of, so the map cannot move or
// go while this runs.
func (b *Bolt) DropPages() error {
	return b.db.View(func(tx *bolt.Tx) error {
		return dropPages(b.db.Info().Data, tx.Size(), b.db.Path())
	})
}

// Close closes the file and releases its lock. It waits for running
// transactions to finish.
func (b *Bolt) Close() error {
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", b.db.Path(), err)
	}
	return nil
}

// errNoChange rolls back a write transaction that found nothing to do:
// bbolt writes and fsyncs a meta page on every commit, even an empty one,
// and a delete of something missing must not touch the disk.
var errNoChange = errors.New("no change")

// update runs fn in a write transaction, treating errNoChange as success
// without a commit. Writes that arrive together share one transaction and
// its fsync (group).
func (b *Bolt) update(fn func(*bolt.Tx) error) error {
	return b.group.do(b.db, fn)
}

// HSet sets field of the hash key to value, a string or a []byte, stored as
// given.
func (b *Bolt) HSet(key, field string, value any) error {
	v, err := bytesOf(value)
	if err == nil {
		err = b.update(func(tx *bolt.Tx) error {
			bk, err := hashBucket(tx, key, []byte(field))
			if err != nil {
				return err
			}
			return bk.Put([]byte(field), v)
		})
	}
	if err != nil {
		return fmt.Errorf("store: hset %s %s: %w", key, field, err)
	}
	return nil
}

// hashBucket is the bucket of the hash key, made if missing, to be
// written with fields no lower than first. When they all go past its
// last field — the pending records' run ids are in time order
// (seq.NewRunID), so they grow at its end — its pages split full, not
// half full (bbolt's default), as a half-full page at the end stays half
// full for good: 100,000 parked runs' records took 145 MB at the default,
// 1.45 KB a record of 600 bytes, and a start reads every page of them
// (issue 38); 80 MB full. Fields written among the others (the journal's
// random ids) keep the default, which leaves room for the next.
func hashBucket(tx *bolt.Tx, key string, first []byte) (*bolt.Bucket, error) {
	bk, err := tx.CreateBucketIfNotExists([]byte(key))
	if err != nil {
		return nil, err
	}
	if last, _ := bk.Cursor().Last(); last == nil || bytes.Compare(first, last) > 0 {
		bk.FillPercent = 0.9
	}
	return bk, nil
}

// HSetMany sets fields[i] of the hash key to values[i], all in one
// transaction: together or not at all.
func (b *Bolt) HSetMany(key string, fields []string, values [][]byte) error {
	return b.HSetDel(key, fields, values, nil)
}

// HSetDel sets fields[i] of the hash key to values[i] and removes the
// fields del, in one transaction: the MQTT outbox writes what steps
// published and removes what the broker took in one commit (one fsync)
// rather than two. A hash left empty is removed, as HDel does.
func (b *Bolt) HSetDel(key string, fields []string, values [][]byte, del []string) error {
	if len(fields) != len(values) {
		return fmt.Errorf("store: hset %s: %d fields, %d values", key, len(fields), len(values))
	}
	if len(fields) == 0 && len(del) == 0 {
		return nil
	}
	var first []byte
	if len(fields) > 0 {
		first = []byte(slices.Min(fields))
	}
	err := b.update(func(tx *bolt.Tx) error {
		bk, err := hashBucket(tx, key, first)
		if err != nil {
			return err
		}
		for i, f := range fields {
			if err := bk.Put([]byte(f), values[i]); err != nil {
				return err
			}
		}
		for _, f := range del {
			if err := bk.Delete([]byte(f)); err != nil {
				return err
			}
		}
		if k, _ := bk.Cursor().First(); k == nil {
			return tx.DeleteBucket([]byte(key))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: hset %s (%d fields, %d removed): %w", key, len(fields), len(del), err)
	}
	return nil
}

// HGetAll returns every field of the hash key; a missing hash is an empty
// map, as in Redis.
func (b *Bolt) HGetAll(key string) (map[string]string, error) {
	m := map[string]string{}
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(key))
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error {
			if v != nil { // nil is a nested bucket, which a hash never has
				m[string(k)] = string(v)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: hgetall %s: %w", key, err)
	}
	return m, nil
}

// HGet returns the value of field in the hash key, a copy the caller
// keeps, and whether it is there. A missing hash is a missing field, as
// in Redis. A parked run keeps its trigger here, not in memory, and reads
// it back when it wakes (issue 38): one read of a file the process has
// open, with no network in between.
func (b *Bolt) HGet(key, field string) ([]byte, bool, error) {
	var out []byte
	err := b.db.View(func(tx *bolt.Tx) error {
		if bk := tx.Bucket([]byte(key)); bk != nil {
			if v := bk.Get([]byte(field)); v != nil {
				out = append(make([]byte, 0, len(v)), v...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: hget %s %s: %w", key, field, err)
	}
	return out, out != nil, nil
}

// HScan calls fn with every field of the hash key and its value, in the
// fields' order, until fn returns an error, which HScan returns. Both
// slices are the database's own and valid only during the call: a caller
// that keeps one copies it. A start reads 100,000 pending records this
// way without HGetAll's map of all of them beside what it decodes from
// them (issue 38). fn must not write to the store: the read holds a
// transaction open.
func (b *Bolt) HScan(key string, fn func(field, value []byte) error) error {
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(key))
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error {
			if v == nil { // a nested bucket, which a hash never has
				return nil
			}
			return fn(k, v)
		})
	})
	if err != nil {
		return fmt.Errorf("store: hscan %s: %w", key, err)
	}
	return nil
}

// HDel removes fields from the hash key. A field or a hash that is not
// there is not an error, and removing nothing writes nothing: a step that
// fires and a cancel that arrives at the same moment both remove the same
// record. A hash left empty is removed, as Redis does.
func (b *Bolt) HDel(key string, fields ...string) error {
	err := b.update(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(key))
		if bk == nil {
			return errNoChange
		}
		changed := false
		for _, f := range fields {
			if !has(bk, []byte(f)) {
				continue
			}
			if err := bk.Delete([]byte(f)); err != nil {
				return err
			}
			changed = true
		}
		if !changed {
			return errNoChange
		}
		if k, _ := bk.Cursor().First(); k == nil {
			return tx.DeleteBucket([]byte(key))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: hdel %s: %w", key, err)
	}
	return nil
}

// has reports whether key is in bk. bbolt's Get cannot tell a missing key
// from some empty values, a cursor can.
func has(bk *bolt.Bucket, key []byte) bool {
	k, _ := bk.Cursor().Seek(key)
	return k != nil && string(k) == string(key)
}

func bytesOf(value any) ([]byte, error) {
	switch v := value.(type) {
	case []byte:
		return v, nil
	case string:
		return []byte(v), nil
	}
	return nil, fmt.Errorf("value of type %T: want string or []byte", value)
}

// pidOf names a process for an error message: its pid and, where /proc
// says, its command name.
func pidOf(pid int) string {
	if pid <= 0 {
		return "holder unknown"
	}
	s := fmt.Sprintf("pid %d", pid)
	if pid == os.Getpid() {
		return s + ", this process"
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && len(comm) > 1 {
		s += ", " + string(comm[:len(comm)-1])
	}
	return s
}
