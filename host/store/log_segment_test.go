package store_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/store"
)

// logState is everything a log's reader sees, for comparing two opens.
func logState(t *testing.T, s runlog.Store) string {
	t.Helper()
	index, err := s.Index()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(index, func(a, b runlog.Meta) int { return int(a.At - b.At) })
	out := ""
	for _, m := range index {
		raw, err := s.Entries(m.ID)
		if err != nil {
			t.Fatal(err)
		}
		last, _ := s.LastSeq(m.ID)
		out += fmt.Sprintf("%+v last %d: %q\n", m, last, raw)
	}
	return out
}

// reopen closes l, opens the log in dir again and fails t unless it reads
// as l did; it returns the log opened.
func reopen(t *testing.T, l *store.SegmentLog, dir string) *store.SegmentLog {
	t.Helper()
	want := logState(t, l)
	l.Close()
	l2 := openSegments(t, dir)
	if got := logState(t, l2); got != want {
		t.Fatalf("reopened:\n%s\nwant:\n%s", got, want)
	}
	return l2
}

func openSegments(t *testing.T, dir string) *store.SegmentLog {
	t.Helper()
	l, err := store.OpenSegmentLog(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestSegmentLogReopen: what a log holds — runs written, nodes written
// again, runs deleted, space reclaimed from old segments — is what the
// next open reads back from the files; a torn record at the end (a crash
// mid-append) is cut off and the log goes on.
func TestSegmentLogReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openSegments(t, dir)
	store.SetSegmentSize(l, 2048)
	for i := range 60 {
		run := fmt.Sprintf("r%03d", i)
		stageCommit(t, l, execEntry(run, "lamp", "running", int64(1000+i)), nodeEntry(run, 1, "open"))
		stageCommit(t, l, nodeEntry(run, 1, "ok"), execEntry(run, "lamp", "ok", int64(1000+i)))
		if i >= 10 && i%3 != 0 { // retention: old runs go, a few are kept (pinned)
			if err := l.Delete([]string{fmt.Sprintf("r%03d", i-10)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, size := store.SegmentFiles(l)
	want := logState(t, l)
	if files > 6 {
		t.Errorf("%d segment files (%d bytes) for %d live runs: space not reclaimed", files, size, len(want))
	}
	l.Close()
	l2 := openSegments(t, dir)
	if got := logState(t, l2); got != want {
		t.Fatalf("reopened:\n%s\nwant:\n%s", got, want)
	}
	// A torn record at the end of the newest segment.
	names, _ := filepath.Glob(filepath.Join(dir, "seg-*.log"))
	newest := names[len(names)-1]
	fi, _ := os.Stat(newest)
	f, _ := os.OpenFile(newest, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{40, 'E', 3, 'r', '9'}) // a length of 40, 4 bytes of body
	f.Close()
	l2.Close()
	ro, err := store.OpenSegmentLog(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := logState(t, ro); got != want {
		t.Errorf("read-only open with a torn tail:\n%s", got)
	}
	ro.Close()
	if fi2, _ := os.Stat(newest); fi2.Size() != fi.Size()+5 {
		t.Errorf("a read-only open changed the file: %d → %d bytes", fi.Size()+5, fi2.Size())
	}
	l3 := openSegments(t, dir)
	if got := logState(t, l3); got != want {
		t.Fatalf("after a torn tail:\n%s", got)
	}
	if fi2, _ := os.Stat(newest); fi2.Size() != fi.Size() {
		t.Errorf("the torn record was not cut: %d bytes, want %d", fi2.Size(), fi.Size())
	}
	stageCommit(t, l3, execEntry("after", "lamp", "ok", 9999))
	want = logState(t, l3)
	l3.Close()
	if got := logState(t, openSegments(t, dir)); got != want {
		t.Errorf("a commit after the cut did not read back:\n%s", got)
	}
}

// TestSegmentLogCompactsWhatRetentionKeeps: retention deletes the oldest
// runs a pass at a time, and one run is kept throughout (a rule's last
// failure, say). Compaction copies that run forward as often as the
// segment it sits in becomes the oldest and nothing else of it is left —
// and never a run a later pass was about to delete; the files stay few,
// and the next open reads back what the log holds.
func TestSegmentLogCompactsWhatRetentionKeeps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openSegments(t, dir)
	store.SetSegmentSize(l, 32<<10) // ~60 runs a segment: a sixteenth is a few runs
	const keep, pinned = 100, "r005"
	for i := range 800 {
		run := fmt.Sprintf("r%03d", i)
		stageCommit(t, l, execEntry(run, "lamp", "running", int64(1000+i)), nodeEntry(run, 1, "open"))
		stageCommit(t, l, nodeEntry(run, 1, "ok"), execEntry(run, "lamp", "ok", int64(1000+i)))
		if i%5 == 4 && i >= keep { // a pass every fifth run: the oldest past keep
			var doomed []string
			for j := i - keep - 4; j <= i-keep; j++ {
				if r := fmt.Sprintf("r%03d", j); j >= 0 && r != pinned {
					doomed = append(doomed, r)
				}
			}
			if err := l.Delete(doomed); err != nil {
				t.Fatal(err)
			}
		}
	}
	copied, newest := store.Compacted(l)
	if copied%2 != 0 || copied/2 > newest {
		t.Errorf("compaction copied %d entries over %d segments; want only %s's two, at most once a segment", copied, newest, pinned)
	}
	if copied == 0 {
		t.Errorf("the kept run was never copied forward over %d segments", newest)
	}
	if files, size := store.SegmentFiles(l); files > 6 {
		t.Errorf("%d segment files (%d bytes) for %d live runs: space not reclaimed", files, size, keep+1)
	}
	if want := logState(t, l); !strings.Contains(want, pinned) {
		t.Fatalf("the kept run is gone:\n%s", want)
	}
	reopen(t, l, dir)
}

// TestSegmentLogAppend: the writer's device path. A batch goes to disk
// with its run entry indexed from the record's fields; a later record of a run
// and number replaces the earlier, in a batch and across batches; a batch
// with a record that is not the log's is refused whole, nothing written;
// and the next open reads back what the appends left.
func TestSegmentLogAppend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openSegments(t, dir)
	rec := func(e runlog.Entry, rule, outcome string, at int64) runlog.Record {
		run, seq, err := runlog.ParseKey(e.Key)
		if err != nil {
			t.Fatal(err)
		}
		return runlog.Record{Run: run, Seq: seq, Value: e.Value, Rule: rule, Outcome: outcome, At: at}
	}
	appendOK := func(recs ...runlog.Record) {
		t.Helper()
		if err := l.Append(recs); err != nil {
			t.Fatal(err)
		}
	}
	appendOK(
		rec(execEntry("a1", "lamp", "running", 1000), "lamp", "running", 1000),
		rec(nodeEntry("a1", 1, "open"), "", "", 0),
		rec(nodeEntry("a1", 1, "ok"), "", "", 0),
		rec(nodeEntry("a2", 3, "ok"), "", "", 0),
	)
	appendOK(rec(execEntry("a1", "lamp", "ok", 1000), "lamp", "ok", 1000), rec(nodeEntry("a1", 2, "ok"), "", "", 0))
	if got := outcomes(t, l, "a1"); got != "exec:ok 1:ok 2:ok" {
		t.Errorf("a1 reads %q", got)
	}
	if last, _ := l.LastSeq("a2"); last != 3 {
		t.Errorf("a2's last node %d, want 3", last)
	}
	index, _ := l.Index()
	slices.SortFunc(index, func(a, b runlog.Meta) int { return strings.Compare(a.ID, b.ID) })
	if len(index) != 2 || index[0].Rule != "lamp" || index[0].Outcome != "ok" || index[0].At != 1000 {
		t.Errorf("index %+v", index)
	}
	want := logState(t, l)
	_, size := store.SegmentFiles(l)
	for _, bad := range []runlog.Record{{Run: "a:b"}, {Run: ""}, {Run: "a1", Seq: runlog.MaxSeq + 1}, {Run: "a1", Seq: -1}} {
		if err := l.Append([]runlog.Record{rec(nodeEntry("a1", 3, "ok"), "", "", 0), bad}); err == nil {
			t.Errorf("a batch with %+v was appended", bad)
		}
		if err := l.Append([]runlog.Record{bad, bad}); err == nil {
			t.Errorf("a batch of %+v alone was appended", bad)
		}
	}
	if got := logState(t, l); got != want {
		t.Errorf("a refused batch changed the log:\n%s", got)
	}
	if _, size2 := store.SegmentFiles(l); size2 != size {
		t.Errorf("a refused batch wrote %d bytes", size2-size)
	}
	reopen(t, l, dir)
}

// TestConvertBoltLog: a device's bbolt log becomes segments, whole, and
// the file goes.
func TestConvertBoltLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log.db")
	b, err := store.OpenBoltLog(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var es []runlog.Entry
	for i := range 1500 { // more than one commit of the conversion
		run := fmt.Sprintf("c%04d", i)
		es = append(es, execEntry(run, "siren", "failed", int64(i)), nodeEntry(run, 1, "ok"), nodeEntry(run, 2, "failed"))
	}
	stageCommit(t, b, es...)
	want := logState(t, b)
	b.Close()
	l := openSegments(t, filepath.Join(dir, "log"))
	n, err := store.ConvertBoltLog(path, l)
	if err != nil || n != 1500 {
		t.Fatalf("converted %d, %v", n, err)
	}
	if got := logState(t, l); got != want {
		t.Errorf("converted log differs")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("log.db still there: %v", err)
	}
}

// FuzzSegmentOpen: whatever bytes a segment file holds (a torn write, a
// bad sector, a file put there by hand), opening the log does not panic,
// keeps only whole records, and a log opened on it goes on: a commit
// after it reads back after the next open.
func FuzzSegmentOpen(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "seed")
	l, err := store.OpenSegmentLog(dir, false)
	if err != nil {
		f.Fatal(err)
	}
	l.Stage([]runlog.Entry{execEntry("s1", "lamp", "ok", 5), nodeEntry("s1", 1, "ok")})
	l.Commit([]string{runlog.ExecKey("s1"), runlog.NodeKey("s1", 1)})
	l.Delete([]string{"s1"})
	l.Close()
	seed, _ := os.ReadFile(filepath.Join(dir, "seg-000001.log"))
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add([]byte{})
	f.Add([]byte{3, 'E', 1, 'r', 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := filepath.Join(t.TempDir(), "log")
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "seg-000001.log"), data, 0o600)
		ro, err := store.OpenSegmentLog(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		before := logState(t, ro)
		ro.Close()
		l, err := store.OpenSegmentLog(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := logState(t, l); got != before {
			t.Fatalf("read-only and read-write opens differ:\n%s\n%s", before, got)
		}
		stageCommit(t, l, execEntry("after", "x", "ok", 1))
		want := logState(t, l)
		l.Close()
		l2, err := store.OpenSegmentLog(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Close()
		if got := logState(t, l2); got != want {
			t.Fatalf("after a commit and a reopen:\n%s\nwant\n%s", got, want)
		}
	})
}

// TestSegmentLogRetainMatchesVictims: the segment log's own retention
// (Retain, over the Metas of its index) deletes exactly what
// Retention.Victims chooses from what Index lists, and Index lists each
// run as it was written last, its bytes its entries' — over random
// histories of runs opened in and out of
// order, nodes written again (open, then closed), runs ended, runs
// deleted outright, small segments compacted, and the log reopened from
// its files now and then (the index rebuilt from the segments).
func TestSegmentLogRetainMatchesVictims(t *testing.T) {
	policies := []runlog.Retention{
		{Runs: 15, Keep: 2, Bytes: 1 << 30},
		{Runs: 100, Keep: 3, Bytes: 6000},
		{Runs: 8, Keep: 20, Bytes: 1 << 30},
	}
	rules, outcomes := []string{"a", "b"}, []string{runlog.OK, runlog.Failed, runlog.Cancelled}
	for seed := range 12 {
		p := policies[seed%len(policies)]
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		dir := filepath.Join(t.TempDir(), "log")
		l := openSegments(t, dir)
		store.SetSegmentSize(l, 2048)
		var live []string // runs written, maybe deleted since
		next := map[string]int{}
		want := map[string]runlog.Meta{} // each run's index fields as written
		for step := range 300 {
			var recs []runlog.Record
			switch r := rng.IntN(20); {
			case r < 8 || len(live) == 0: // a run opens
				id := fmt.Sprintf("r%04d", step)
				at := int64(1000 + step)
				if rng.IntN(6) == 0 {
					at -= int64(rng.IntN(40))
				}
				rule := rules[rng.IntN(len(rules))]
				e := execEntry(id, rule, runlog.Running, at)
				recs = append(recs, runlog.Record{Run: id, Value: e.Value, Rule: rule, Outcome: runlog.Running, At: at})
				want[id] = runlog.Meta{ID: id, Rule: rule, Outcome: runlog.Running, At: at}
				live = append(live, id)
				next[id] = 1
			case r < 15: // a node of a run opens, or closes
				id := live[rng.IntN(len(live))]
				seq, outcome := next[id], "open"
				if rng.IntN(2) == 0 {
					outcome = "ok"
					next[id]++
				}
				e := nodeEntry(id, seq, outcome+strings.Repeat("x", rng.IntN(200)))
				recs = append(recs, runlog.Record{Run: id, Seq: seq, Value: e.Value})
				if _, ok := want[id]; !ok { // deleted: a node makes it again, without its exec
					want[id] = runlog.Meta{ID: id}
				}
			case r < 18: // a run ends (its start unchanged)
				m, ok := want[live[rng.IntN(len(live))]]
				if !ok {
					continue // deleted already
				}
				m.Outcome = outcomes[rng.IntN(len(outcomes))]
				e := execEntry(m.ID, m.Rule, m.Outcome, m.At)
				recs = append(recs, runlog.Record{Run: m.ID, Value: e.Value, Rule: m.Rule, Outcome: m.Outcome, At: m.At})
				want[m.ID] = m
			case r < 19: // a retention pass
				before, _ := l.Index()
				victims := p.Victims(before)
				if err := l.Retain(p); err != nil {
					t.Fatal(err)
				}
				after, _ := l.Index()
				kept := map[string]bool{}
				for _, m := range after {
					kept[m.ID] = true
				}
				var got []string
				for _, m := range before {
					if !kept[m.ID] {
						got = append(got, m.ID)
					}
				}
				slices.Sort(got)
				slices.Sort(victims)
				if !slices.Equal(got, victims) {
					t.Fatalf("seed %d step %d %+v: Retain deleted %v; Victims chose %v", seed, step, p, got, victims)
				}
				for _, id := range got {
					delete(want, id)
				}
			default: // runs deleted outright, or the log reopened
				if rng.IntN(2) == 0 {
					doomed := []string{live[rng.IntN(len(live))], live[rng.IntN(len(live))]}
					if err := l.Delete(doomed); err != nil {
						t.Fatal(err)
					}
					for _, id := range doomed {
						delete(want, id)
					}
				} else {
					l.Close()
					l = openSegments(t, dir)
					store.SetSegmentSize(l, 2048)
				}
			}
			if len(recs) > 0 {
				if err := l.Append(recs); err != nil {
					t.Fatal(err)
				}
			}
			index, _ := l.Index()
			if len(index) != len(want) {
				t.Fatalf("seed %d step %d: the index lists %d runs; %d are kept", seed, step, len(index), len(want))
			}
			for _, m := range index {
				if w := want[m.ID]; m.Rule != w.Rule || m.Outcome != w.Outcome || m.At != w.At {
					t.Fatalf("seed %d step %d: the index lists %+v; written %+v", seed, step, m, w)
				}
				raw, _ := l.Entries(m.ID)
				var n int64
				for _, v := range raw {
					n += int64(len(v))
				}
				if m.Bytes != n {
					t.Fatalf("seed %d step %d: run %s counts %d bytes; its entries are %d", seed, step, m.ID, m.Bytes, n)
				}
			}
			if err := store.LiveAgrees(l); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
	}
}

// TestSegmentLogSyncsAside: an append is synced by the log's syncer
// within about SyncEvery, not by the append; Close stops the syncer (a
// second Close is harmless) and what was written reads back.
func TestSegmentLogSyncsAside(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openSegments(t, dir)
	e := execEntry("s1", "lamp", "ok", 1000)
	if err := l.Append([]runlog.Record{{Run: "s1", Value: e.Value, Rule: "lamp", Outcome: "ok", At: 1000}}); err != nil {
		t.Fatal(err)
	}
	if n := store.Unsynced(l); n == 0 {
		t.Fatal("the append synced (or wrote nothing)")
	}
	deadline := time.Now().Add(5 * store.SyncEvery)
	for store.Unsynced(l) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d files still unsynced after %v", store.Unsynced(l), 5*store.SyncEvery)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := l.Append([]runlog.Record{{Run: "s2", Value: e.Value, Rule: "lamp", Outcome: "ok", At: 1001}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if got := outcomes(t, openSegments(t, dir), "s2"); got != "exec:ok" {
		t.Errorf("s2 reads %q after Close", got)
	}
}

// logFiles is the files of the log in dir: its segments and its spare.
func logFiles(t *testing.T, dir string) (segs, spares []string) {
	t.Helper()
	segs, _ = filepath.Glob(filepath.Join(dir, "seg-*.log"))
	spares, _ = filepath.Glob(filepath.Join(dir, "spare-*.log"))
	return segs, spares
}

// TestSegmentLogReusesFiles: a reclaimed segment's file is kept as the
// spare (one at most) and the next segment is written in it; what the
// file held before is never read as the new segment's — the log reads
// back as written after each reopen, a reopen mid-way included.
func TestSegmentLogReusesFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openSegments(t, dir)
	store.SetSegmentSize(l, 2048)
	var seen []os.FileInfo // every file that has been a segment
	reused := 0
	look := func() {
		segs, spares := logFiles(t, dir)
		if len(spares) > 1 {
			t.Fatalf("%d spares: %v", len(spares), spares)
		}
		for _, name := range append(segs, spares...) {
			fi, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(seen, func(s os.FileInfo) bool { return os.SameFile(s, fi) }) {
				seen = append(seen, fi)
			}
		}
	}
	for i := range 300 {
		run := fmt.Sprintf("r%03d", i)
		stageCommit(t, l, execEntry(run, "lamp", "running", int64(1000+i)), nodeEntry(run, 1, "open"))
		stageCommit(t, l, nodeEntry(run, 1, "ok"), execEntry(run, "lamp", "ok", int64(1000+i)))
		if i >= 10 && i%5 != 0 {
			if err := l.Delete([]string{fmt.Sprintf("r%03d", i-10)}); err != nil {
				t.Fatal(err)
			}
		}
		look()
		if i == 150 { // a reopen mid-way: the spare is found again
			l = reopen(t, l, dir)
			store.SetSegmentSize(l, 2048)
		}
	}
	_, newest := store.Compacted(l)
	reused = newest - len(seen)
	if reused < newest/2 {
		t.Errorf("%d segments in %d files: reclaimed files are not written again", newest, len(seen))
	}
	reopen(t, l, dir)
}

// TestSegmentLogReadsUnseeded: a segment written before segments carried
// their number in their CRCs (no segMagic) reads as it did, takes appends
// in its own format while it is the newest, and is removed when reclaimed,
// never kept as a spare (its records would read as any segment's).
func TestSegmentLogReadsUnseeded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	os.MkdirAll(dir, 0o700)
	var b []byte
	for i := range 4 {
		run := fmt.Sprintf("old%d", i)
		e, n := execEntry(run, "lamp", "ok", int64(100+i)), nodeEntry(run, 1, "ok")
		b = store.AppendRecordV1(b, 'E', run, 0, e.Value)
		b = store.AppendRecordV1(b, 'E', run, 1, n.Value)
	}
	b = store.AppendRecordV1(b, 'D', "old3", 0, nil)
	if err := os.WriteFile(filepath.Join(dir, "seg-000001.log"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	l := openSegments(t, dir)
	if idx, _ := l.Index(); len(idx) != 3 {
		t.Fatalf("the old segment reads as %d runs, want 3: %+v", len(idx), idx)
	}
	stageCommit(t, l, execEntry("new0", "lamp", "ok", 200), nodeEntry("new0", 1, "ok"))
	l = reopen(t, l, dir) // appended to the old segment
	store.SetSegmentSize(l, 1024)
	if err := l.Delete([]string{"old0", "old1", "old2", "new0"}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		run := fmt.Sprintf("r%03d", i)
		stageCommit(t, l, execEntry(run, "lamp", "ok", int64(1000+i)), nodeEntry(run, 1, "ok"))
		if i >= 4 {
			if err := l.Delete([]string{fmt.Sprintf("r%03d", i-4)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	segs, spares := logFiles(t, dir)
	if slices.Contains(segs, filepath.Join(dir, "seg-000001.log")) || slices.Contains(spares, filepath.Join(dir, "spare-000001.log")) {
		t.Fatalf("the old segment is still there: %v %v", segs, spares)
	}
	reopen(t, l, dir)
}

// TestSegmentLogSpareOfSameNumber: a spare is never given its own number
// again — its records would read as the new segment's. Here every
// segment but the spare is gone (removed by hand), so the log starts at
// segment 1 again beside a spare that was segment 1.
func TestSegmentLogSpareOfSameNumber(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openSegments(t, dir)
	stageCommit(t, l, execEntry("s1", "lamp", "ok", 100), nodeEntry("s1", 1, "ok"))
	l.Close()
	if err := os.Rename(filepath.Join(dir, "seg-000001.log"), filepath.Join(dir, "spare-000001.log")); err != nil {
		t.Fatal(err)
	}
	l = openSegments(t, dir)
	if idx, _ := l.Index(); len(idx) != 0 {
		t.Fatalf("a new log reads %+v", idx)
	}
	l.Close()
	if idx, _ := openSegments(t, dir).Index(); len(idx) != 0 {
		t.Fatalf("reopened, the new log reads %+v", idx)
	}
}

// TestSegmentLogShareIDs: an id the log holds a run of comes back as the
// index's own string (one copy between the log and whoever keeps it); any
// other is left as it is.
func TestSegmentLogShareIDs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := openSegments(t, dir)
	stageCommit(t, l, execEntry("r001", "lamp", "running", 1000), nodeEntry("r001", 1, "open"))
	l.Close()
	l = openSegments(t, dir) // the index's strings are the ones read at open
	mine := string([]byte("r001"))
	ids := []string{mine, "r404"}
	l.ShareIDs(ids)
	if ids[0] != "r001" || ids[1] != "r404" {
		t.Fatalf("ShareIDs changed the ids' values: %q", ids)
	}
	if unsafe.StringData(ids[0]) == unsafe.StringData(mine) {
		t.Error("a run the log holds kept the caller's copy of its id")
	}
	again := []string{string([]byte("r001"))}
	l.ShareIDs(again)
	if unsafe.StringData(again[0]) != unsafe.StringData(ids[0]) {
		t.Error("two calls handed out two copies of one run's id")
	}
}
