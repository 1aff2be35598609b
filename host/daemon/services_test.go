package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/wasm"
)

// TestQuotaKVTellsTheGuestTooLarge: a kv write over the scope's quota is
// the store's ErrQuota, which the wasm host knows nothing of; through the
// daemon's quotaKV it is also wasm.ErrTooLarge (the guest's StatusTooLarge),
// its text still the store's. Other writes pass through unchanged.
func TestQuotaKVTellsTheGuestTooLarge(t *testing.T) {
	b, err := store.OpenBolt(filepath.Join(t.TempDir(), "s.db"), store.BoltOptions{KVQuota: store.Quota{Keys: 1, Bytes: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	kv := quotaKV{b}
	ctx := context.Background()
	if err := kv.Set(ctx, "p", "a", []byte("1")); err != nil {
		t.Fatalf("first key: %v", err)
	}
	err = kv.Set(ctx, "p", "b", []byte("2"))
	if !errors.Is(err, wasm.ErrTooLarge) || !errors.Is(err, store.ErrQuota) {
		t.Fatalf("second key: %v; want both wasm.ErrTooLarge and store.ErrQuota", err)
	}
	if !strings.Contains(err.Error(), `kv "p": quota of 1 keys reached`) {
		t.Errorf("text %q; want the store's", err)
	}
	if err := kv.Delete(ctx, "p", "a"); err != nil {
		t.Fatal(err)
	}
	if _, found, err := kv.Get(ctx, "p", "a"); err != nil || found {
		t.Errorf("get after delete: found=%v err=%v", found, err)
	}
	if err := kv.Set(ctx, "p", "b", []byte("2")); err != nil {
		t.Errorf("after a delete freed the quota: %v", err)
	}
}
