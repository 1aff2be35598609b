package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// Local copies of the consumers' interfaces (host/seq declares Hasher and
// Commander, host/wasm KV; store must not import them), asserted below.
type Hasher interface {
	HSet(key, field string, value any) error
	HGetAll(key string) (map[string]string, error)
	HDel(key string, fields ...string) error
}

type KV interface {
	Get(ctx context.Context, scope, key string) (value []byte, found bool, err error)
	Set(ctx context.Context, scope, key string, value []byte) error
	Delete(ctx context.Context, scope, key string) error
}

type Commander interface {
	HSet(key, field string, value any) error
	HGetAll(key string) (map[string]string, error)
	Do(cmd string, args ...any) (any, error)
}

var (
	_ Hasher    = (*store.Bolt)(nil)
	_ Commander = (*store.Redis)(nil)
	_ KV        = (*store.Bolt)(nil)
	_ KV        = (*store.Redis)(nil)
	_ Hasher    = clientHasher{}
)

// clientHasher is what the sequencer's NewClientHasher does with a
// Commander: HSet and HGetAll as they are, HDel through Do.
type clientHasher struct{ Commander }

func (c clientHasher) HDel(key string, fields ...string) error {
	args := make([]any, 0, 1+len(fields))
	args = append(args, key)
	for _, f := range fields {
		args = append(args, f)
	}
	_, err := c.Do("HDEL", args...)
	return err
}

// backend opens a fresh, empty store of one kind with a kv quota.
type backend struct {
	name string
	open func(t testing.TB, q store.Quota) (Hasher, KV)
}

// backends are bbolt in t.TempDir() and a real redis-server, started for
// each open (a few tens of milliseconds) so no two cases share state.
var backends = []backend{
	{"bolt", func(t testing.TB, q store.Quota) (Hasher, KV) {
		b := openBolt(t, filepath.Join(t.TempDir(), "ruled.db"), store.BoltOptions{KVQuota: q})
		return b, b
	}},
	{"redis", func(t testing.TB, q store.Quota) (Hasher, KV) {
		r := openRedis(t, redistest.Start(t).URL(), store.RedisOptions{KVQuota: q})
		return clientHasher{r}, r
	}},
}

func openBolt(t testing.TB, path string, opts store.BoltOptions) *store.Bolt {
	t.Helper()
	b, err := store.OpenBolt(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func openRedis(t testing.TB, url string, opts store.RedisOptions) *store.Redis {
	t.Helper()
	r, err := store.OpenRedis(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

var ctx = context.Background()
