package store_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/store"
)

// BenchmarkLogWriter is the writer's cost per run (seven entries: a run's
// exec twice, a trigger, a condition and three steps opened and closed) on
// each store, committed.
func BenchmarkLogWriter(b *testing.B) {
	b.Run("bbolt", func(b *testing.B) {
		bl, err := store.OpenBoltLog(filepath.Join(b.TempDir(), "log.db"), store.BoltOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer bl.Close()
		benchLogWriter(b, bl)
	})
	b.Run("segments", func(b *testing.B) {
		sl, err := store.OpenSegmentLog(filepath.Join(b.TempDir(), "log"), false)
		if err != nil {
			b.Fatal(err)
		}
		defer sl.Close()
		benchLogWriter(b, sl)
	})
}

func benchLogWriter(b *testing.B, st runlog.Store) {
	l := runlog.New(st, runlog.Options{Queue: 16 * max(b.N, 1024)}, quiet{}) // nothing dropped: the cost of writing it all
	defer l.Close()
	now := time.Now()
	detail := strings.Repeat("x", 120)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := seq.NewRunID()
		e := runlog.Exec{ID: id, Rule: "bench", Topic: "bench.in", EventID: "e", Started: now, Outcome: runlog.Running}
		l.Exec(e)
		l.Node(runlog.Node{Run: id, Seq: 1, Kind: runlog.KindTrigger, Name: "bench.in", Started: now, Ended: now, Outcome: runlog.OK, Detail: detail})
		l.Node(runlog.Node{Run: id, Seq: 2, Kind: runlog.KindCondition, Do: "expr.expr", Digest: "708571bb52511234", Started: now, Ended: now, Outcome: runlog.OK})
		for s := 3; s <= 5; s++ {
			n := runlog.Node{Run: id, Seq: s, Kind: runlog.KindStep, Name: "one", Do: "log.log", Digest: "fd137ee05d581234", Started: now, Outcome: runlog.Open}
			l.Node(n)
			n.Ended, n.Outcome = now, runlog.OK
			l.Node(n)
		}
		e.Ended, e.Outcome = now, runlog.OK
		l.Exec(e)
	}
	l.Flush()
	b.StopTimer()
	if st := l.Stats(); st.DroppedTotal() != 0 {
		b.Fatalf("dropped %+v", st)
	}
}
