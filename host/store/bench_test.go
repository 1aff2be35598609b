package store_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// A pending record about the size the sequencer writes: ids, a fingerprint
// and the triggering event.
var record = `{"id":"01J9Z8K3W6Q4V2","rule":"low-battery","source":"rules/scooter.yaml","step":2,"iter":0,` +
	`"fire-at":1767225600000,"fingerprint":"sha256:` + strings.Repeat("ab", 32) + `",` +
	`"event":{"topic":"scooter.battery","data":{"vehicle":"sc-1042","battery":17,"charging":false}}}`

type benchStore struct {
	name string
	open func(b *testing.B) (Hasher, KV)
}

func benchStores() []benchStore {
	bolt := func(noSync bool) func(b *testing.B) (Hasher, KV) {
		return func(b *testing.B) (Hasher, KV) {
			s := openBolt(b, filepath.Join(b.TempDir(), "ruled.db"), store.BoltOptions{})
			store.SetNoSync(s, noSync)
			return s, s
		}
	}
	redis := func(cfg redistest.Config) func(b *testing.B) (Hasher, KV) {
		return func(b *testing.B) (Hasher, KV) {
			r := openRedis(b, redistest.StartWith(b, cfg).URL(), store.RedisOptions{})
			return clientHasher{r}, r
		}
	}
	return []benchStore{
		{"bolt", bolt(false)},
		{"bolt-nosync", bolt(true)},
		{"redis", redis(redistest.Config{})},
		{"redis-aof-always", redis(redistest.Config{Persistent: true})},
	}
}

// BenchmarkPendingRecord is one durable step's cost to the store: its record
// written when it parks, removed when it fires, with 100 other steps waiting.
// "bolt" is what ruled runs (fsync on every commit); "bolt-nosync" shows
// what the fsync costs.
func BenchmarkPendingRecord(b *testing.B) {
	for _, bs := range benchStores() {
		b.Run(bs.name, func(b *testing.B) {
			h, _ := bs.open(b)
			for i := range 100 {
				if err := h.HSet(pending, fmt.Sprintf("waiting-%d", i), record); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("run-%d", i)
				if err := h.HSet(pending, id, record); err != nil {
					b.Fatal(err)
				}
				if err := h.HDel(pending, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKVSet overwrites a key in a scope holding 999 others, the worst
// case of bbolt's usage count (a walk of the scope per Set).
func BenchmarkKVSet(b *testing.B) {
	value := []byte(strings.Repeat("v", 64))
	for _, bs := range benchStores() {
		b.Run(bs.name, func(b *testing.B) {
			_, kv := bs.open(b)
			noSync(kv) // filling is not what is measured
			for i := range 999 {
				if err := kv.Set(ctx, "p", fmt.Sprintf("key-%d", i), value); err != nil {
					b.Fatal(err)
				}
			}
			if s, ok := kv.(*store.Bolt); ok {
				store.SetNoSync(s, bs.name == "bolt-nosync")
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := kv.Set(ctx, "p", fmt.Sprintf("key-%d", i%999), value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkKVGet(b *testing.B) {
	for _, bs := range benchStores() {
		if strings.HasSuffix(bs.name, "nosync") || strings.HasSuffix(bs.name, "always") {
			continue // reads do not sync
		}
		b.Run(bs.name, func(b *testing.B) {
			_, kv := bs.open(b)
			if err := kv.Set(ctx, "p", "k", []byte(record)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, found, err := kv.Get(ctx, "p", "k"); err != nil || !found {
					b.Fatal(err, found)
				}
			}
		})
	}
}
