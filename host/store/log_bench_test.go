package store_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/store"
)

// BenchmarkLogWriter is the writer's cost per run (seven entries: a run's
// exec twice, a trigger, a condition and three steps opened and closed) on
// each store, committed: wall time, and the process's CPU time
// (cpu-ns/op), both with the runs' side of the log (queueing entries)
// included. It waits for the writer every 512 runs, so that the queue
// stays the size a daemon's does.
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
	// A trigger's detail is its event, JSON: quotes to escape.
	detail := `{"topic":"bench.in","vehicle":"s-17","battery":12,"charging":false,"speed":14.5,"pos":{"lat":52.52,"lon":13.405},"tags":["city","rental"],"seq":123456}`
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if i%512 == 511 {
			l.Flush()
		}
		id, now := seq.NewRunID(), time.Now() // runs start in time order, as they do
		e := runlog.Run{ID: id, Rule: "bench", Topic: "bench.in", EventID: "e", Started: now, Outcome: runlog.Running}
		l.Run(e)
		l.Node(runlog.Node{Run: id, Seq: 1, Kind: runlog.KindTrigger, Name: "bench.in", Started: now, Ended: now, Outcome: runlog.OK, Detail: detail})
		l.Node(runlog.Node{Run: id, Seq: 2, Kind: runlog.KindCondition, Do: "expr.expr", Digest: "708571bb52511234", Started: now, Ended: now, Outcome: runlog.OK})
		for s := 3; s <= 5; s++ {
			n := runlog.Node{Run: id, Seq: s, Kind: runlog.KindStep, Name: "one", Do: "log.log", Digest: "fd137ee05d581234", Started: now, Outcome: runlog.Open}
			l.Node(n)
			n.Ended, n.Outcome = now, runlog.OK
			l.Node(n)
		}
		e.Ended, e.Outcome = now, runlog.OK
		l.Run(e)
	}
	l.Flush()
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	if st := l.Stats(); st.DroppedTotal() != 0 {
		b.Fatalf("dropped %+v", st)
	}
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
