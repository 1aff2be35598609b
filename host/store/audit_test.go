package store_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ruled-dev/ruled/host/audit"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/store"
)

// chain is what the audit tests need of a store's chain.
type chain interface {
	audit.Log
	AuditRead(ctx context.Context, from uint64, limit int) (*store.AuditChain, error)
}

// testAuditChain: entries appended from several goroutines form one
// chain without gaps; retention trims the oldest and keeps the anchor;
// a read of the newest verifies from its first entry's prev; edit (the
// store's own write, as an attacker with it would) breaks the chain at
// the entry edited.
func testAuditChain(t *testing.T, c chain, edit func(seq uint64, e audit.Entry) chain) {
	ctx := context.Background()
	keep := audit.Retention{MaxEntries: 20, MaxAge: time.Hour}
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				if _, err := c.AuditAppend(ctx, audit.Entry{At: time.Now(), Who: fmt.Sprintf("token t%d", g), From: "127.0.0.1:1",
					What: audit.Command, Detail: fmt.Sprintf("POST /v1/rules/r%d/pause → 200", i)}, keep); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	ch, err := c.AuditRead(ctx, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ch.First != 11 || ch.Last != 30 || len(ch.Entries) != 20 || ch.Anchor == "" {
		t.Fatalf("after 30 appends kept to 20: first %d last %d, %d entries, anchor %q", ch.First, ch.Last, len(ch.Entries), ch.Anchor)
	}
	head, err := audit.Verify(ch.Entries, ch.Anchor)
	if err != nil || head != ch.Head {
		t.Fatalf("verify: %s, %v; head %s", head, err, ch.Head)
	}
	newest, err := c.AuditRead(ctx, 0, 5)
	if err != nil || len(newest.Entries) != 5 || newest.Entries[0].Seq != 26 {
		t.Fatalf("the newest 5: %+v, %v", newest, err)
	}
	if _, err := audit.Verify(newest.Entries, newest.Entries[0].Prev); err != nil {
		t.Errorf("the newest 5 verify from their first's prev: %v", err)
	}
	if _, err := audit.Verify(ch.Entries, ""); err == nil {
		t.Error("a trimmed chain verified without its anchor")
	}
	// An old entry, aged past retention, goes at the next append.
	e := ch.Entries[0]
	e.Detail = "POST /v1/rules/r0/kill → 200"
	c = edit(e.Seq, e)
	ch, _ = c.AuditRead(ctx, 1, 0)
	_, err = audit.Verify(ch.Entries, ch.Anchor)
	var broken *audit.BrokenError
	if !asBroken(err, &broken) || broken.Seq != 11 {
		t.Errorf("an entry edited: %v; want the chain broken at 11", err)
	}
}

func asBroken(err error, b **audit.BrokenError) bool {
	be, ok := err.(*audit.BrokenError)
	*b = be
	return ok
}

func TestAuditChainBolt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.db")
	b := openBolt(t, path, store.BoltOptions{})
	testAuditChain(t, b, func(seq uint64, e audit.Entry) chain {
		// The embedded store's own file, written as bbolt writes it.
		b.Close()
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], seq)
			enc, _ := json.Marshal(e)
			return tx.Bucket([]byte("ruled:audit")).Put(k[:], enc)
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		return openBolt(t, path, store.BoltOptions{})
	})
}

func TestAuditChainRedis(t *testing.T) {
	serverAndCluster(t, func(t *testing.T, url string) {
		r := openRedis(t, url, store.RedisOptions{})
		a := r.Audit()
		testAuditChain(t, a, func(seq uint64, e audit.Entry) chain {
			ch, _ := a.AuditRead(context.Background(), 1, 0)
			enc, _ := json.Marshal(e)
			if err := r.Client().LSet(context.Background(), keyspace.Audit, int64(seq-ch.First), enc).Err(); err != nil {
				t.Fatal(err)
			}
			return a
		})
		// An entry removed from the middle: the next one says so.
		ctx := context.Background()
		raw, _ := r.Client().LIndex(ctx, keyspace.Audit, 5).Result()
		r.Client().LRem(ctx, keyspace.Audit, 1, raw)
		ch, _ := a.AuditRead(ctx, 1, 0)
		if _, err := audit.Verify(ch.Entries[1:], ch.Entries[1].Prev); err == nil {
			t.Error("an entry removed from the middle went unseen")
		}
	})
}
