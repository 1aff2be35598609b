package store

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestGroupPanicHandsTheLeadOn: a write whose function panics, recovered
// by its caller (net/http recovers a handler's), leaves the store
// writable: the lead goes on, later writes commit.
func TestGroupPanicHandsTheLeadOn(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "ruled.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the write's panic did not reach its caller")
			}
		}()
		b.update(func(*bolt.Tx) error { panic("a write's function panics") })
	}()
	done := make(chan error, 1)
	go func() { done <- b.HSet("ruled:pending", "r1", "x") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write after a recovered panic never returned: the lead was not handed on")
	}
}
