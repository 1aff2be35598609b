package store

import (
	"errors"
	"fmt"
)

// Quota bounds one plugin's kv scope. A zero field takes its default; -1
// removes that bound.
type Quota struct {
	// Keys is the number of keys a scope may hold. default: 1000.
	Keys int
	// Bytes is the total length of a scope's keys and values. default: 1 MiB.
	Bytes int64
}

// The default kv quota per plugin.
const (
	DefaultKVKeys  = 1000
	DefaultKVBytes = 1 << 20
)

func (q Quota) withDefaults() Quota {
	if q.Keys == 0 {
		q.Keys = DefaultKVKeys
	}
	if q.Bytes == 0 {
		q.Bytes = DefaultKVBytes
	}
	return q
}

// usage is what a scope holds: its keys, and its keys' and values' bytes.
type usage struct {
	keys  int
	bytes int64
}

// ErrQuota is wrapped by a kv write refused for the scope's quota. The wasm
// host tells the guest StatusTooLarge for it: the daemon, which wires the
// two, maps one onto the other, so this package knows nothing of plugins.
var ErrQuota = errors.New("too large")

// check refuses a write that would take a scope from used to next when next
// is over the quota in a dimension the write grows. A write that shrinks or
// keeps a dimension is allowed even over the quota: an operator who lowers a
// quota must not leave plugins unable to overwrite a value with a smaller
// one, and Delete is never refused.
func (q Quota) check(scope string, used, next usage) error {
	if q.Keys >= 0 && next.keys > q.Keys && next.keys > used.keys {
		return fmt.Errorf("store: kv %q: quota of %d keys reached: %w", scope, q.Keys, ErrQuota)
	}
	if q.Bytes >= 0 && next.bytes > q.Bytes && next.bytes > used.bytes {
		return fmt.Errorf("store: kv %q: quota of %d bytes exceeded (%d used, %d after this write): %w",
			scope, q.Bytes, used.bytes, next.bytes, ErrQuota)
	}
	return nil
}
