package store

import (
	"context"
	"errors"
	"fmt"
	"github.com/ruled-dev/ruled/host/keyspace"

	bolt "go.etcd.io/bbolt"
)

// KVPrefix starts the name of every plugin's kv scope: the Redis hash, and
// the bbolt bucket, of plugin p is KVPrefix+p.
const KVPrefix = keyspace.KVPrefix

// Get returns the value of key in scope; found is false when there is none.
func (b *Bolt) Get(ctx context.Context, scope, key string) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("store: kv get %q: %w", scope, err)
	}
	var v []byte
	found := false
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(KVPrefix + scope))
		if bk == nil {
			return nil
		}
		k, val := bk.Cursor().Seek([]byte(key))
		if k != nil && string(k) == key {
			found = true
			v = append([]byte{}, val...) // val lives in the mmap only as long as the transaction
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: kv get %q: %w", scope, err)
	}
	return v, found, nil
}

// Set stores value under key in scope. It fails with an error wrapping
// ErrQuota when the write would take the scope over its quota.
//
// The scope's usage is counted inside the write transaction, by a walk of
// its bucket: bbolt runs one writer at a time, so the count cannot race
// another Set, and the walk (at most Quota.Keys entries of the mmap, values
// unread) costs microseconds beside the fsync every write pays.
func (b *Bolt) Set(ctx context.Context, scope, key string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: kv set %q: %w", scope, err)
	}
	if key == "" {
		return fmt.Errorf("store: kv set %q: empty key", scope)
	}
	err := b.update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists([]byte(KVPrefix + scope))
		if err != nil {
			return err
		}
		var used usage
		var old int64 = -1 // the length of key's entry, if any
		c := bk.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			n := int64(len(k) + len(v))
			used.keys++
			used.bytes += n
			if string(k) == key {
				old = n
			}
		}
		next := usage{used.keys, used.bytes + int64(len(key)+len(value))}
		if old >= 0 {
			next.bytes -= old
		} else {
			next.keys++
		}
		if err := b.quota.check(scope, used, next); err != nil {
			return err
		}
		return bk.Put([]byte(key), value)
	})
	if err != nil {
		return wrapKV("set", scope, err)
	}
	return nil
}

// Delete removes key from scope. A key that is not there is not an error
// and writes nothing. A scope left empty is removed.
func (b *Bolt) Delete(ctx context.Context, scope, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: kv delete %q: %w", scope, err)
	}
	name := []byte(KVPrefix + scope)
	err := b.update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(name)
		if bk == nil || !has(bk, []byte(key)) {
			return errNoChange
		}
		if err := bk.Delete([]byte(key)); err != nil {
			return err
		}
		if k, _ := bk.Cursor().First(); k == nil {
			return tx.DeleteBucket(name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: kv delete %q: %w", scope, err)
	}
	return nil
}

// wrapKV prefixes err, unless it is a quota error, which already says it all.
func wrapKV(op, scope string, err error) error {
	if errors.Is(err, ErrQuota) {
		return err
	}
	return fmt.Errorf("store: kv %s %q: %w", op, scope, err)
}
