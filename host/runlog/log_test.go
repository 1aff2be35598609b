package runlog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/testkit"
)

var jsonUnmarshal = json.Unmarshal

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func exec(id, rule, outcome string) Run {
	return Run{ID: id, Rule: rule, Topic: "t", Started: t0, Outcome: outcome}
}

// TestWriterCommitsByKey: a run's entries reach the store once each, the
// later of a key replacing the earlier within a batch, staged and
// committed by key — or, to an Appender, handed over with their run, node
// number and the run entry's index fields.
func TestWriterCommitsByKey(t *testing.T) {
	bothStores(t, func(t *testing.T, m *memStore, app *memAppender, s Store, appends bool) {
		l := New(s, Options{}, &testkit.Log{})
		defer l.Close()
		l.Run(exec("r1", "lamp", Running))
		l.Node(Node{Run: "r1", Seq: 1, Kind: KindTrigger, Started: t0, Ended: t0, Outcome: OK})
		l.Node(Node{Run: "r1", Seq: 2, Kind: KindStep, Name: "on", Started: t0, Outcome: Open})
		l.Node(Node{Run: "r1", Seq: 2, Kind: KindStep, Name: "on", Started: t0, Ended: t0.Add(time.Millisecond), Outcome: OK})
		l.Run(Run{ID: "r1", Rule: "lamp", Topic: "t", Started: t0, Ended: t0.Add(time.Millisecond), Outcome: OK})
		l.Flush()
		rows, err := Tree(m, "r1")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		Render(&b, rows, true)
		want := "run #1 lamp  ok\n  1 trigger  ok\n  2 step on  ok\n"
		if got := b.String(); got != want {
			t.Errorf("tree\n%q\nwant\n%q", got, want)
		}
		// The open and the close of node 2 were in one batch: staged once.
		if st := l.Stats(); st.Written != 3 || st.DroppedTotal() != 0 {
			t.Errorf("stats %+v; want 3 written (exec, node 1, node 2), none dropped", st)
		}
		if idx, _ := m.Index(); len(idx) != 1 || idx[0].Outcome != OK || idx[0].At != t0.UnixMilli() {
			t.Errorf("index %+v", idx)
		}
		if !appends {
			return
		}
		if len(app.batches) != 1 || len(m.staged) != 0 {
			t.Fatalf("%d batches appended, %d keys staged; want one batch, nothing staged", len(app.batches), len(m.staged))
		}
		var got []string
		for _, r := range app.batches[0] {
			got = append(got, fmt.Sprintf("%s/%d %s %s %d", r.Run, r.Seq, r.Rule, r.Outcome, r.At))
		}
		if want := fmt.Sprintf("r1/0 lamp ok %d, r1/1   0, r1/2   0", t0.UnixMilli()); strings.Join(got, ", ") != want {
			t.Errorf("records %q; want %q", strings.Join(got, ", "), want)
		}
	})
}

// TestBackpressureDrops: with the writer stuck, a run's entries beyond the
// queue are dropped and counted, and logging never blocks the caller.
func TestBackpressureDrops(t *testing.T) {
	m := newMem()
	m.block = make(chan struct{})
	l := New(m, Options{Queue: 8, Batch: 1}, &testkit.Log{})
	done := make(chan struct{})
	go func() {
		for i := 1; i <= 100; i++ {
			l.Node(Node{Run: "r", Seq: i, Kind: KindStep, Outcome: OK})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("logging blocked behind a stuck store")
	}
	close(m.block)
	l.Close()
	st := l.Stats()
	if st.Dropped[DropQueueFull] == 0 || st.Written+st.Dropped[DropQueueFull] != 100 {
		t.Errorf("stats %+v; want every entry written or dropped as queue full", st)
	}
}

// TestStoreOutage: entries during an outage are dropped and counted, and
// logging resumes when the store answers.
func TestStoreOutage(t *testing.T) {
	m := newMem()
	l := New(m, Options{}, &testkit.Log{})
	defer l.Close()
	m.mu.Lock()
	m.fail = errDown
	m.mu.Unlock()
	l.Run(exec("lost", "lamp", Running))
	l.Flush()
	m.mu.Lock()
	m.fail = nil
	m.mu.Unlock()
	l.Run(exec("kept", "lamp", Running))
	l.Flush()
	if st := l.Stats(); st.Dropped[DropStore] != 1 || st.Written != 2 {
		t.Errorf("stats %+v; want 1 dropped to the store, 2 written", st)
	}
	if _, err := Tree(m, "kept"); err != nil {
		t.Errorf("after the outage: %v", err)
	}
	// The run entry of a failed batch is written with the next one (issue
	// 37: runs that ended in a Redis outage stayed running in the log).
	if _, err := Tree(m, "lost"); err != nil {
		t.Errorf("the run entry written in the outage: %v", err)
	}
}

// TestRunEndSurvivesAnOutage: a run that ends while the store is away is
// ended in the log once the store answers — by the writer itself, with
// nothing else to write — with its last entry, not an earlier one; its
// nodes of the outage are lost (counted).
func TestRunEndSurvivesAnOutage(t *testing.T) {
	m := newMem()
	l := New(m, Options{}, &testkit.Log{})
	defer l.Close()
	l.Run(exec("r1", "lamp", Running))
	l.Flush()
	m.mu.Lock()
	m.fail = errDown
	m.mu.Unlock()
	l.Node(Node{Run: "r1", Seq: 1, Kind: KindStep, Outcome: OK})
	l.Run(exec("r1", "lamp", OK))
	l.Flush()
	m.mu.Lock()
	m.fail = nil
	m.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		x, _, err := ReadRun(m, "r1")
		if err == nil && x != nil && x.Outcome == OK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run's end never reached the log: %+v %v", x, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := l.Stats(); st.Dropped[DropStore] < 2 { // and each retry that met the outage
		t.Errorf("stats %+v; want the outage's two entries counted", st)
	}
}

func TestNodeLimitAndClose(t *testing.T) {
	m := newMem()
	l := New(m, Options{}, &testkit.Log{})
	l.Node(Node{Run: "r", Seq: MaxSeq + 1})
	l.Node(Node{Run: "r", Seq: MaxSeq, Kind: KindStep, Outcome: OK})
	l.Close()
	l.Node(Node{Run: "r", Seq: 1})
	l.Close() // twice is fine
	st := l.Stats()
	if st.Dropped[DropNodeLimit] != 1 || st.Dropped[DropStopped] != 1 || st.Written != 1 {
		t.Errorf("stats %+v", st)
	}
	if n, _ := m.LastSeq("r"); n != MaxSeq {
		t.Errorf("last seq %d", n)
	}
}

// TestLeftoversCommittedAtStart: what a dead process staged is committed
// by the next writer.
func TestLeftoversCommittedAtStart(t *testing.T) {
	m := newMem()
	b, _ := json.Marshal(exec("r", "lamp", Running))
	m.Stage([]Entry{{Key: ExecKey("r"), Value: b}})
	l := New(m, Options{}, &testkit.Log{})
	defer l.Close()
	if _, err := Tree(m, "r"); err != nil {
		t.Errorf("leftover not committed: %v", err)
	}
}

// TestRetentionEveryNthOpen: retention runs after every Every-th run opened,
// by count — over the writer's copy of the index, or, for an Appender, by
// the store's Retain.
func TestRetentionEveryNthOpen(t *testing.T) {
	bothStores(t, func(t *testing.T, m *memStore, app *memAppender, s Store, appends bool) {
		l := New(s, Options{Retention: Retention{Runs: 3, Keep: 1, Every: 5}}, &testkit.Log{})
		defer l.Close()
		for i := range 4 {
			e := exec(fmt.Sprintf("r%d", i), "lamp", Running)
			e.Started = t0.Add(time.Duration(i) * time.Second)
			l.Run(e)
			e.Outcome = OK
			l.Run(e)
		}
		l.Flush()
		if idx, _ := m.Index(); len(idx) != 4 {
			t.Fatalf("retention ran before the 5th open: %d runs", len(idx))
		}
		e := exec("r4", "lamp", Running)
		e.Started = t0.Add(4 * time.Second)
		l.Run(e)
		l.Flush()
		// r4 is running (kept), r3 is the newest ok (Keep 1); the count (3)
		// takes the oldest two.
		if got := fmt.Sprint(m.deleted); got != "[r0 r1]" {
			t.Errorf("deleted %s; want [r0 r1]", got)
		}
		if want := map[bool]int{false: 0, true: 1}[appends]; app.retained() != want {
			t.Errorf("the store's Retain ran %d times; want %d", app.retained(), want)
		}
	})
}

// bothStores runs f over a memStore the writer stages and commits to by
// key, and over the same store taking batches as an Appender (app).
func bothStores(t *testing.T, f func(t *testing.T, m *memStore, app *memAppender, s Store, appends bool)) {
	for _, appends := range []bool{false, true} {
		t.Run(map[bool]string{false: "stage-commit", true: "append"}[appends], func(t *testing.T) {
			m := newMem()
			app := &memAppender{memStore: m}
			var s Store = m
			if appends {
				s = app
			}
			f(t, m, app, s, appends)
		})
	}
}

// TestTreeInterrupted: an open node is interrupted when its run ended or
// went on past it — but not when all that came after it is a replay: a
// run restarted while it waits still waits in the delay it reopened.
func TestTreeInterrupted(t *testing.T) {
	tests := []struct {
		name    string
		outcome string
		after   []string // the kinds of the nodes after the open delay
		want    bool
	}{
		{"waiting", Running, nil, false},
		{"waiting again after a restart", Running, []string{KindReplay}, false},
		{"went on past it", Running, []string{KindReplay, KindStep}, true},
		{"ended", OK, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMem()
			l := New(m, Options{}, &testkit.Log{})
			defer l.Close()
			l.Run(exec("r", "lamp", tc.outcome))
			l.Node(Node{Run: "r", Seq: 1, Kind: KindDelay, Name: "later", Started: t0, Outcome: Open})
			for i, k := range tc.after {
				l.Node(Node{Run: "r", Seq: 2 + i, Kind: k, Started: t0, Ended: t0, Outcome: OK})
			}
			l.Flush()
			rows, err := Tree(m, "r")
			if err != nil {
				t.Fatal(err)
			}
			if got := rows[1].Interrupted; got != tc.want {
				t.Errorf("delay interrupted %v; want %v", got, tc.want)
			}
		})
	}
}
