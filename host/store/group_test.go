package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ruled-dev/ruled/host/store"
)

// TestBoltGroupCommit: writers that write at once share commits (issue 39:
// one commit and fsync a write held ingest into a durable rule to 1,500
// events/s), every write returned is on the disk when the file is opened
// again, and a write refused in a group (over its scope's quota) is
// refused alone: the others in its group land.
func TestBoltGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.db")
	b := openBolt(t, path, store.BoltOptions{KVQuota: store.Quota{Keys: 1}})
	const writers, each = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				field := fmt.Sprintf("w%d-%d", w, i)
				if err := b.HSet(pending, field, field); err != nil {
					errs <- err
				}
				if i%10 == 0 { // a kv scope of one key: the second key of each writer is refused
					err := b.Set(ctx, fmt.Sprintf("p%d", w), field, []byte("v"))
					if (i == 0) != (err == nil) || err != nil && !errors.Is(err, store.ErrQuota) {
						errs <- fmt.Errorf("writer %d, kv set %d: %v", w, i, err)
					}
				}
				if i%2 == 1 { // and removes every other record it wrote
					if err := b.HDel(pending, fmt.Sprintf("w%d-%d", w, i-1)); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	commits, writes := b.Commits()
	t.Logf("%d writes in %d commits (%.1f a commit)", writes, commits, float64(writes)/float64(max(commits, 1)))
	// Each writer: its records, its one kv key (the rest refused), the
	// removals.
	if want := uint64(writers * (each + 1 + each/2)); writes != want || commits >= writes {
		t.Errorf("%d writes in %d commits; want %d writes, in fewer commits", writes, commits, want)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBolt(t, path, store.BoltOptions{})
	got, err := b.HGetAll(pending)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != writers*each/2 {
		t.Errorf("%d records after reopening; want %d", len(got), writers*each/2)
	}
	for w := range writers {
		for i := 1; i < each; i += 2 {
			if f := fmt.Sprintf("w%d-%d", w, i); got[f] != f {
				t.Fatalf("record %s is %q after reopening", f, got[f])
			}
		}
		if _, found, err := b.Get(ctx, fmt.Sprintf("p%d", w), fmt.Sprintf("w%d-0", w)); !found || err != nil {
			t.Errorf("writer %d's kv key is gone (%v)", w, err)
		}
	}
}
