package store_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// logStores runs a test on the execution log's store on bbolt and on a
// real redis-server.
func logStores(t *testing.T, test func(t *testing.T, s runlog.Store)) {
	t.Run("bbolt", func(t *testing.T) {
		b, err := store.OpenBoltLog(filepath.Join(t.TempDir(), "log.db"), store.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		test(t, b)
	})
	t.Run("segments", func(t *testing.T) {
		l, err := store.OpenSegmentLog(filepath.Join(t.TempDir(), "log"), false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		test(t, l)
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		test(t, openRedis(t, srv.URL(), store.RedisOptions{}).Log())
	})
	// On a cluster every key of the log carries one hash tag: a commit
	// moving entries of many runs and updating the index is one slot's.
	t.Run("redis-cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a 3-master cluster")
		}
		c := redistest.StartCluster(t, 3)
		test(t, openRedis(t, c.URL(), store.RedisOptions{}).Log())
	})
}

func execEntry(run, rule, outcome string, at int64) runlog.Entry {
	b, _ := json.Marshal(runlog.Run{ID: run, Rule: rule, Outcome: outcome, At: at, Started: time.UnixMilli(at)})
	return runlog.Entry{Key: runlog.ExecKey(run), Value: b}
}

func nodeEntry(run string, seq int, outcome string) runlog.Entry {
	b, _ := json.Marshal(runlog.Node{Run: run, Seq: seq, Kind: runlog.KindStep, Outcome: outcome})
	return runlog.Entry{Key: runlog.NodeKey(run, seq), Value: b}
}

func stageCommit(t *testing.T, s runlog.Store, es ...runlog.Entry) int {
	t.Helper()
	if err := s.Stage(es); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, len(es))
	for i, e := range es {
		keys[i] = e.Key
	}
	n, touched, err := s.Commit(keys)
	if err != nil {
		t.Fatal(err)
	}
	// What Commit says of the runs it touched is what the index holds.
	index, _ := s.Index()
	for _, m := range touched {
		found := false
		for _, x := range index {
			found = found || x == m
		}
		if !found {
			t.Errorf("commit reported %+v; the index has %+v", m, index)
		}
	}
	return n
}

// outcomes is a run's entries as "exec:<outcome> 1:<outcome> …".
func outcomes(t *testing.T, s runlog.Store, run string) string {
	t.Helper()
	raw, err := s.Entries(run)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, b := range raw {
		var v struct {
			Seq     int    `json:"seq"`
			Outcome string `json:"outcome"`
		}
		json.Unmarshal(b, &v)
		label := "exec"
		if v.Seq > 0 {
			label = fmt.Sprint(v.Seq)
		}
		parts = append(parts, label+":"+v.Outcome)
	}
	return strings.Join(parts, " ")
}

func TestLogStore(t *testing.T) {
	logStores(t, func(t *testing.T, s runlog.Store) {
		// Nodes committed out of order come back in order, after the exec.
		if n := stageCommit(t, s, nodeEntry("r1", 10, "open"), nodeEntry("r1", 2, "ok"), execEntry("r1", "lamp", "running", 1000)); n != 3 {
			t.Errorf("committed %d; want 3", n)
		}
		stageCommit(t, s, nodeEntry("r1", 1, "ok"))
		if got := outcomes(t, s, "r1"); got != "exec:running 1:ok 2:ok 10:open" {
			t.Errorf("entries %s", got)
		}
		if n, err := s.LastSeq("r1"); err != nil || n != 10 {
			t.Errorf("LastSeq %d, %v; want 10", n, err)
		}
		if n, err := s.LastSeq("nope"); err != nil || n != 0 {
			t.Errorf("LastSeq of nothing %d, %v", n, err)
		}
		// A node written again (closed) replaces its open entry; a batch
		// committed twice overwrites, it does not duplicate.
		closed := nodeEntry("r1", 10, "failed")
		stageCommit(t, s, closed, execEntry("r1", "lamp", "failed", 1000))
		if n, _, err := s.Commit([]string{closed.Key}); err != nil || n != 0 {
			t.Errorf("second commit of a committed key: %d, %v; want 0 moved", n, err)
		}
		stageCommit(t, s, closed)
		if got := outcomes(t, s, "r1"); got != "exec:failed 1:ok 2:ok 10:failed" {
			t.Errorf("entries after overwrite %s", got)
		}
		index, err := s.Index()
		if err != nil || len(index) != 1 {
			t.Fatalf("index %+v, %v", index, err)
		}
		raw, _ := s.Entries("r1")
		var size int64
		for _, b := range raw {
			size += int64(len(b))
		}
		if m := index[0]; m.ID != "r1" || m.Rule != "lamp" || m.Outcome != "failed" || m.At != 1000 || m.Bytes != size {
			t.Errorf("meta %+v; want r1 lamp failed at 1000, %d bytes", m, size)
		}
		// A key outside the log fails the commit, and nothing moves.
		ok := nodeEntry("r2", 1, "ok")
		if err := s.Stage([]runlog.Entry{ok}); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"ruled:pending", "ruled:log:r2:x", "ruled:log:r:2:n:000001", "ruled:log:r2:n:1"} {
			if _, _, err := s.Commit([]string{ok.Key, bad}); err == nil {
				t.Errorf("commit of %q succeeded", bad)
			}
		}
		if got := outcomes(t, s, "r2"); got != "" {
			t.Errorf("a refused commit moved %s", got)
		}
		stageCommit(t, s, execEntry("r2", "siren", "ok", 2000))
		if err := s.Delete([]string{"r1"}); err != nil {
			t.Fatal(err)
		}
		if got := outcomes(t, s, "r1"); got != "" {
			t.Errorf("deleted run has %s", got)
		}
		index, _ = s.Index()
		if len(index) != 1 || index[0].ID != "r2" {
			t.Errorf("index after delete %+v", index)
		}
	})
}

// TestRedisLogLeftovers: entries a dead process staged are listed for the
// next writer to commit, and expire if nobody does.
func TestRedisLogLeftovers(t *testing.T) { serverAndCluster(t, testLogLeftovers) }

func testLogLeftovers(t *testing.T, url string) {
	r := openRedis(t, url, store.RedisOptions{})
	l := r.Log()
	if err := l.Stage([]runlog.Entry{nodeEntry("r9", 1, "open"), execEntry("r9", "x", "running", 5)}); err != nil {
		t.Fatal(err)
	}
	keys, err := l.Staged()
	if err != nil || len(keys) != 2 {
		t.Fatalf("staged %v, %v", keys, err)
	}
	ttl, err := r.Client().TTL(ctx, store.StagedKey(l, runlog.NodeKey("r9", 1))).Result()
	if err != nil || ttl <= 0 || ttl > store.StageTTL {
		t.Errorf("staged key TTL %v, %v; want (0, %v]", ttl, err, store.StageTTL)
	}
	if n, _, err := l.Commit(keys); err != nil || n != 2 {
		t.Fatalf("commit %d, %v", n, err)
	}
	if keys, _ := l.Staged(); len(keys) != 0 {
		t.Errorf("committed keys still staged: %v", keys)
	}
}

type quiet struct{}

func (quiet) Warn(string, ...any) {}
func (quiet) Info(string, ...any) {}

// TestLogRetention: the writer over each store keeps the log within its
// bounds — by count, by outcome (a busy rule keeps its failure), by bytes.
func TestLogRetention(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	// write logs n finished runs of rule with outcome, each with one node
	// padded to about size bytes, and returns their ids, oldest first.
	write := func(l *runlog.Log, prefix, rule, outcome string, n, size int, at *time.Time) []string {
		var ids []string
		for i := range n {
			id := fmt.Sprintf("%s%03d", prefix, i)
			*at = at.Add(time.Second)
			e := runlog.Run{ID: id, Rule: rule, Topic: "t", Started: *at, Outcome: runlog.Running}
			l.Run(e)
			l.Node(runlog.Node{Run: id, Seq: 1, Kind: runlog.KindStep, Started: *at, Ended: *at, Outcome: runlog.OK,
				Detail: strings.Repeat("x", size)})
			e.Ended, e.Outcome = *at, outcome
			l.Run(e)
			ids = append(ids, id)
		}
		l.Flush()
		return ids
	}
	kept := func(t *testing.T, s runlog.Store) map[string]bool {
		index, err := s.Index()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, x := range index {
			m[x.ID] = true
		}
		return m
	}
	t.Run("count", func(t *testing.T) {
		logStores(t, func(t *testing.T, s runlog.Store) {
			l := runlog.New(s, runlog.Options{Retention: runlog.Retention{Runs: 20, Keep: 1, Every: 10}}, quiet{})
			defer l.Close()
			at := t0
			ids := write(l, "r", "lamp", runlog.OK, 50, 10, &at)
			k := kept(t, s)
			// Enforced at the 50th open: the newest 20 remain.
			if len(k) != 20 || !k[ids[49]] || !k[ids[30]] || k[ids[29]] {
				t.Errorf("kept %d runs: %v", len(k), k)
			}
			if raw, _ := s.Entries(ids[0]); len(raw) != 0 {
				t.Errorf("a deleted run still has %d entries", len(raw))
			}
		})
	})
	t.Run("outcome", func(t *testing.T) {
		logStores(t, func(t *testing.T, s runlog.Store) {
			l := runlog.New(s, runlog.Options{Retention: runlog.Retention{Runs: 10, Keep: 2, Every: 10}}, quiet{})
			defer l.Close()
			at := t0
			failures := write(l, "f", "lamp", runlog.Failed, 3, 10, &at)
			ok := write(l, "o", "lamp", runlog.OK, 97, 10, &at)
			k := kept(t, s)
			// The busy rule's successes did not evict its newest 2 failures.
			if !k[failures[1]] || !k[failures[2]] || k[failures[0]] {
				t.Errorf("failures kept: %v %v %v; want the newest two", k[failures[0]], k[failures[1]], k[failures[2]])
			}
			if !k[ok[96]] || len(k) != 10 {
				t.Errorf("kept %d runs; want 10, the newest success among them", len(k))
			}
		})
	})
	t.Run("bytes", func(t *testing.T) {
		logStores(t, func(t *testing.T, s runlog.Store) {
			const capBytes = 20 << 10
			l := runlog.New(s, runlog.Options{Retention: runlog.Retention{Runs: 1000, Keep: 1000, Bytes: capBytes, Every: 5}}, quiet{})
			defer l.Close()
			at := t0
			ids := write(l, "b", "lamp", runlog.OK, 60, 1000, &at)
			index, _ := s.Index()
			var total int64
			for _, m := range index {
				total += m.Bytes
			}
			// Keep protects every run, but the cap is hard.
			if total > capBytes || len(index) == 0 || !kept(t, s)[ids[59]] {
				t.Errorf("%d bytes in %d runs; want at most %d, the newest kept", total, len(index), capBytes)
			}
		})
	})
}

// TestLogCommitLargeBatch: a commit of more entries than the Redis
// script handles in one command (it works in chunks of 1,000) moves them
// all and counts every run's bytes; a run written twice in one batch
// counts once.
func TestLogCommitLargeBatch(t *testing.T) {
	logStores(t, func(t *testing.T, s runlog.Store) {
		var es []runlog.Entry
		for r := range 3 {
			run := fmt.Sprintf("big%d", r)
			es = append(es, execEntry(run, "bulk", "ok", int64(1000+r)))
			for n := 1; n <= 900; n++ {
				es = append(es, nodeEntry(run, n, "ok"))
			}
		}
		es = append(es, es[1]) // a key twice: counted once or twice, stored once
		if n := stageCommit(t, s, es...); n != len(es)-1 && n != len(es) {
			t.Errorf("moved %d of %d", n, len(es)-1)
		}
		index, err := s.Index()
		if err != nil || len(index) != 3 {
			t.Fatalf("index %v, %v", index, err)
		}
		for _, m := range index {
			raw, _ := s.Entries(m.ID)
			var size int64
			for _, b := range raw {
				size += int64(len(b))
			}
			if len(raw) != 901 || m.Bytes != size || m.Rule != "bulk" {
				t.Errorf("run %s: %d entries, meta %+v; want 901 entries of %d bytes", m.ID, len(raw), m, size)
			}
		}
	})
}
