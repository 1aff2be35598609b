package journal

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/fuzzmem"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// lostAnswer is a store whose first write applies and then fails.
func lostAnswer() *testkit.Hasher {
	h := &testkit.Hasher{}
	h.LoseNextAnswer()
	return h
}

func event(t *testing.T, js string) *bus.Event {
	t.Helper()
	e, err := (&bus.Decoder{}).Decode([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// eventually waits for cond, the deleter being asynchronous.
// reopen opens the store at path again, as the next process does, and a
// journal over it (not loaded); both close when the test ends.
func reopen(t *testing.T, path string) (*store.Bolt, *Journal) {
	t.Helper()
	b, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	j := New(b, &testkit.Log{})
	t.Cleanup(j.Close)
	return b, j
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAddLoadRebuild(t *testing.T) {
	h := &testkit.Hasher{}
	j := New(h, &testkit.Log{})
	defer j.Close()
	var ids []string
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, js := range []string{`{"topic":"a","id":"e1","n":1}`, `{"topic":"b","id":"e1","s":"x"}`, `{"topic":"c","id":"e3"}`} {
		ev := event(t, js)
		if strings.Contains(js, `"b"`) {
			ev.Trace = tp // kept: a run re-admitted goes on under its sender's trace
		}
		id, err := j.Add(ev, []string{"r1", "r2"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if ids[0] == ids[1] {
		t.Fatal("two events with the same id share an entry")
	}
	// A second journal over the same store: a new process.
	j2 := New(h, &testkit.Log{})
	defer j2.Close()
	es, err := j2.Load()
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for _, en := range es {
		topics = append(topics, en.Topic)
		if !slices.Equal(en.Rules, []string{"r1", "r2"}) {
			t.Errorf("entry %s rules %v", en.ID, en.Rules)
		}
	}
	if strings.Join(topics, ",") != "a,b,c" {
		t.Errorf("loaded in order %v; want a,b,c (the order written)", topics)
	}
	e, err := es[1].Rebuild()
	if err != nil {
		t.Fatal(err)
	}
	orig := event(t, `{"topic":"b","id":"e1","s":"x"}`)
	if e.ID != "e1" || e.Topic != "b" || string(e.Raw) != string(orig.Raw) || string(e.View) != string(orig.View) || e.Trace != tp {
		t.Errorf("rebuilt %+v", e)
	}
	if st := j2.Stats(); st.Open != 3 {
		t.Errorf("open %d after load; want 3", st.Open)
	}
}

func TestWaiterAcknowledgesOnceAfterEveryRule(t *testing.T) {
	h := &testkit.Hasher{}
	j := New(h, &testkit.Log{})
	defer j.Close()
	id, err := j.Add(event(t, `{"topic":"a"}`), []string{"r1", "r2", "r3"})
	if err != nil {
		t.Fatal(err)
	}
	done := j.Waiter(id, 3)
	done()
	done()
	time.Sleep(20 * time.Millisecond)
	if h.Len(Hash) != 1 {
		t.Fatal("deleted before every rule took it")
	}
	done()
	eventually(t, "the entry is deleted", func() bool { return h.Len(Hash) == 0 })
	done() // one too many: nothing else happens
	j.Close()
	if st := j.Stats(); st.Written != 1 || st.Acknowledged != 1 || st.Open != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestWaitersMarkWhatEachRuleTook: an entry kept for three rules, two of
// which took it before a kill: the next start re-admits it to the third
// only (it was re-admitted to all three, and under load, with the third's
// trigger queued behind hundreds, a kill before it took the entry ran the
// other two again at every start, under new run ids — issue 37). A rule
// named twice (a wait and a trigger) is marked when both took it. The
// last rule's acknowledgement deletes the entry and its marks; a start
// deletes an entry every rule of which took it, and marks of entries
// that are gone. On the real embedded store.
func TestWaitersMarkWhatEachRuleTook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.db")
	b, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j := New(b, &testkit.Log{})
	id, err := j.Add(event(t, `{"topic":"a","id":"e1"}`), []string{"r1", "r2", "r3"})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := j.Add(event(t, `{"topic":"a","id":"e2"}`), []string{"r1", "r2"})
	dones := j.Waiters(id, []string{"r1", "r2", "r2", "r3"})
	dones[0]() // r1
	dones[1]() // r2 as a wait: r2 as a trigger has not taken it yet
	dones[0]() // twice: nothing more
	ds := j.Waiters(all, []string{"r1", "r2"})
	ds[0]()
	j.Close() // the kill comes after the deleter wrote its batch
	// All but the last took e2, and the last's took it too — its
	// acknowledgement lost to the kill, the mark only written.
	b.HSet(TookHash, all+"\x00r2", "")
	b.HSet(TookHash, "gone\x00r1", "")
	b.Close()

	b, j = reopen(t, path)
	es, err := j.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].ID != id || !slices.Equal(es[0].Rules, []string{"r2", "r3"}) {
		t.Fatalf("after the restart: %+v; want e1 for r2 and r3 only", es)
	}
	// e2 goes (every rule took it), and its marks after it; the orphan
	// mark went at the load: e1's r1 is left.
	eventually(t, "e2, its marks and the orphan deleted", func() bool {
		m, _ := b.HGetAll(TookHash)
		e, _ := b.HGetAll(Hash)
		_, ok := m[id+"\x00r1"]
		return len(m) == 1 && ok && len(e) == 1
	})
	dones = j.Waiters(id, es[0].Rules)
	dones[0]()
	dones[1]()
	eventually(t, "e1 and its marks deleted", func() bool {
		m, _ := b.HGetAll(TookHash)
		e, _ := b.HGetAll(Hash)
		return len(m) == 0 && len(e) == 0
	})
}

// TestSeen: a message's key (bus.Event.Key) is known once its event is
// journaled, by this process and, from the store, by the next: a source's
// repeat of a message already accepted (MQTT's DUP after a lost
// acknowledgement) is not taken again (issue 37, 5).
func TestSeen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.db")
	b, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j := New(b, &testkit.Log{})
	e := event(t, `{"topic":"a"}`)
	e.Key = "mqtt:1"
	if _, err := j.Add(e, []string{"r"}); err != nil {
		t.Fatal(err)
	}
	j.Add(event(t, `{"topic":"a"}`), []string{"r"}) // no key
	if !j.Seen("mqtt:1") || j.Seen("mqtt:2") || j.Seen("") {
		t.Error("Seen before the restart")
	}
	j.Close()
	b.Close()
	b, j = reopen(t, path)
	if j.Seen("mqtt:1") {
		t.Error("known before the journal was loaded")
	}
	if _, err := j.Load(); err != nil {
		t.Fatal(err)
	}
	if !j.Seen("mqtt:1") || j.Seen("mqtt:2") {
		t.Error("Seen after the restart")
	}
}

// TestSeenAfterItsEntryWent: a message's key is known to the next process
// for SeenFor after its entry was deleted (its rules took it), not only
// while the entry lasts: a broker that lost the acknowledgement delivers
// it again after a kill, and it must not run again under new ids (a soak
// found it did). A key kept past SeenFor is dropped at the start.
func TestSeenAfterItsEntryWent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.db")
	b, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j := New(b, &testkit.Log{})
	e := event(t, `{"topic":"a"}`)
	e.Key = "mqtt:1"
	id, err := j.Add(e, []string{"r"})
	if err != nil {
		t.Fatal(err)
	}
	j.Ack(id) // its rule took it: the entry goes, its key stays
	j.Close()
	all, _ := b.HGetAll(Hash)
	if len(all) != 1 || all[id] != "" {
		t.Errorf("the store holds %v; want the key's field alone", all)
	}
	for f := range all {
		if !strings.HasPrefix(f, SeenPrefix) || !strings.HasSuffix(f, ":mqtt:1") {
			t.Errorf("field %q; want seen:<time>:mqtt:1", f)
		}
	}
	oldAt := time.Now().Add(-SeenFor - time.Minute).UnixNano()
	old := strconv.FormatInt(oldAt, 10)
	recent := strconv.FormatInt(time.Now().Add(-time.Minute).UnixNano(), 10)
	for f, v := range map[string]string{
		SeenPrefix + "mqtt:old": old, seenField(oldAt, "mqtt:old2"): old, // past SeenFor
		SeenPrefix + "mqtt:legacy": recent, // an earlier ruled's field, within it
		SeenPrefix + "mqtt:bad":    "x",
	} {
		if err := b.HSet(Hash, f, v); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	b, j = reopen(t, path)
	entries, err := j.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("%d entries after the acknowledgement; want none", len(entries))
	}
	if !j.Seen("mqtt:1") {
		t.Error("the key of a message its rules took is not known to the next process")
	}
	if !j.Seen("mqtt:legacy") {
		t.Error("a key an earlier ruled kept (seen:) within SeenFor is not known")
	}
	if j.Seen("mqtt:old") || j.Seen("mqtt:old2") || j.Seen("mqtt:bad") {
		t.Error("a key kept past SeenFor (or unreadable) is known")
	}
	for _, f := range []string{SeenPrefix + "mqtt:old", seenField(oldAt, "mqtt:old2"), SeenPrefix + "mqtt:bad"} {
		if v, ok, _ := b.HGet(Hash, f); ok {
			t.Errorf("%s, past SeenFor or unreadable, is still stored (%s)", f, v)
		}
	}
}

// TestKeptKeysAreBounded: the store keeps a key for as long as Seen knows
// it, no longer: past SeenMax keys the oldest fields go, and an entry
// whose key Seen forgot already leaves none.
func TestKeptKeysAreBounded(t *testing.T) {
	h := &testkit.Hasher{}
	j := New(h, &testkit.Log{})
	defer j.Close()
	const n = SeenMax + 50
	es := make([]*bus.Event, n)
	rules := make([][]string, n)
	for i := range es {
		es[i] = event(t, `{"topic":"a"}`)
		es[i].Key = fmt.Sprint("mqtt:", i)
		rules[i] = []string{"r"}
	}
	ids, err := j.AddAll(es[:SeenMax], rules[:SeenMax])
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		j.Ack(id)
	}
	eventually(t, "the entries deleted", func() bool { return j.Stats().Open == 0 })
	if got := h.Len(Hash); got != SeenMax {
		t.Fatalf("the store holds %d fields; want the %d keys", got, SeenMax)
	}
	more, err := j.AddAll(es[SeenMax:], rules[SeenMax:]) // forgets the 50 oldest
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range more {
		j.Ack(id)
	}
	eventually(t, "the oldest keys gone", func() bool { return j.Stats().Open == 0 && h.Len(Hash) == SeenMax })
	all, _ := h.HGetAll(Hash)
	for f := range all {
		if strings.HasSuffix(f, ":mqtt:0") || !strings.HasPrefix(f, SeenPrefix) {
			t.Errorf("field %q is still stored; want the newest keys' alone", f)
		}
	}
	if !j.Seen(fmt.Sprint("mqtt:", n-1)) || j.Seen("mqtt:0") {
		t.Error("Seen does not know the newest keys, or knows the forgotten")
	}
}

func TestDeletesRetryWhenTheStoreReturns(t *testing.T) {
	h := &testkit.Hasher{}
	j := New(h, &testkit.Log{})
	defer j.Close()
	id, err := j.Add(event(t, `{"topic":"a"}`), []string{"r"})
	if err != nil {
		t.Fatal(err)
	}
	h.SetDown(true)
	if _, err := j.Add(event(t, `{"topic":"a"}`), []string{"r"}); err == nil {
		t.Error("Add succeeded with the store down: the event would be acknowledged unkept")
	}
	j.Ack(id)
	eventually(t, "a refused delete is counted", func() bool { return j.Stats().Failed >= 2 })
	h.SetDown(false)
	eventually(t, "the delete is retried", func() bool { return h.Len(Hash) == 0 })
}

// TestRefusedWriteThatLandedGoes: a write whose answer was lost (the store
// took it and went away) is refused to the caller, who tells its sender to
// retry; the entry must not be re-admitted by the next start as well, so
// it is deleted — once the store takes deletions again — and not counted
// as acknowledged or open.
func TestRefusedWriteThatLandedGoes(t *testing.T) {
	h := lostAnswer()
	j := New(h, &testkit.Log{})
	if _, err := j.Add(event(t, `{"topic":"a"}`), []string{"r"}); err == nil {
		t.Fatal("Add succeeded though the store's answer was lost")
	}
	eventually(t, "the entry that landed is deleted", func() bool { return h.Len(Hash) == 0 })
	j.Close()
	if st := j.Stats(); st.Open != 0 || st.Acknowledged != 0 || st.Written != 0 {
		t.Errorf("stats %+v; want nothing written, open or acknowledged", st)
	}
	if es, _ := New(h, &testkit.Log{}).Load(); len(es) != 0 {
		t.Errorf("the next start loads %d entries; want none", len(es))
	}
}

func TestCloseFlushes(t *testing.T) {
	h := &testkit.Hasher{}
	j := New(h, &testkit.Log{})
	var ids []string
	for range 50 {
		id, err := j.Add(event(t, `{"topic":"a"}`), []string{"r"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// The store is busy while they are acknowledged (its lock held), as a
	// commit in progress would be: what arrives meanwhile goes in one batch.
	release := h.Hold()
	for _, id := range ids {
		j.Ack(id)
	}
	release()
	j.Close()
	if h.Len(Hash) != 0 {
		t.Errorf("%d entries left after Close", h.Len(Hash))
	}
	if h.Dels() > 2 {
		t.Errorf("%d deletes for 50 acknowledgements; want them batched (at most 2)", h.Dels())
	}
}

func TestLoadDropsWhatWillNotDecode(t *testing.T) {
	h := &testkit.Hasher{}
	h.HSet(Hash, "bad", "{")
	h.HSet(Hash, "future", `{"v":99,"topic":"a","event":{}}`)
	h.HSet(Hash, "ok", `{"v":1,"topic":"a","event":{"topic":"a"},"rules":["r"]}`)
	j := New(h, &testkit.Log{})
	defer j.Close()
	es, err := j.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].ID != "ok" {
		t.Errorf("loaded %+v; want only ok", es)
	}
	if h.Len(Hash) != 1 {
		t.Errorf("%d entries in the store; want the two bad ones removed", h.Len(Hash))
	}
}

// TestOnBolt runs the journal on the real embedded store across a reopen.
func TestOnBolt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.db")
	b, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j := New(b, &testkit.Log{})
	keep, err := j.Add(event(t, `{"topic":"a","id":"keep"}`), []string{"r"})
	if err != nil {
		t.Fatal(err)
	}
	gone, _ := j.Add(event(t, `{"topic":"a","id":"gone"}`), []string{"r"})
	j.Ack(gone)
	j.Close()
	b.Close()
	b, j = reopen(t, path)
	es, err := j.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].ID != keep || es[0].EventID != "keep" {
		t.Errorf("after reopening: %+v; want only the unacknowledged entry", es)
	}
}

// FuzzDecode: a stored entry, whatever its bytes, decodes or is refused,
// and one that decodes rebuilds its event or is refused — never a panic —
// within a small multiple of its size.
func FuzzDecode(f *testing.F) {
	f.Add("x", []byte(`{"v":1,"rules":["r"],"event-id":"e","topic":"a","time":1,"event":{"topic":"a","n":[1,2]},"written":1}`))
	f.Add("x", []byte(`{"v":1,"topic":"a","event":"not an object"}`))
	f.Add("x", []byte(`null`))
	f.Fuzz(func(t *testing.T, id string, b []byte) {
		fuzzmem.Check(t, b, 64, 64<<10, func() {
			en, err := Decode(id, b)
			if err != nil {
				return
			}
			if en.ID != id || en.Topic == "" || len(en.Event) == 0 || en.Version != Version {
				t.Fatalf("accepted %+v", en)
			}
			en.Rebuild()
		})
	})
}

// TestSeenIsBounded: Seen knows at most SeenMax keys, the oldest
// forgotten first (a key is whoever sends the message's choice).
func TestSeenIsBounded(t *testing.T) {
	j := New(&testkit.Hasher{}, &testkit.Log{})
	defer j.Close()
	for i := range SeenMax + 1 {
		j.rememberAt(fmt.Sprintf("k%d", i), time.Now())
	}
	if j.Seen("k0") || !j.Seen("k1") || !j.Seen(fmt.Sprintf("k%d", SeenMax)) || len(j.seen) != SeenMax {
		t.Errorf("after %d keys: k0 %v, k1 %v, %d known", SeenMax+1, j.Seen("k0"), j.Seen("k1"), len(j.seen))
	}
}

// TestAddAll: a group of events is journaled in one store write on a
// MultiSetter (bbolt: one commit), each with its own entry and rules; on a
// store without one, a write at a time; a refused group leaves nothing
// behind once the deleter has run.
func TestAddAll(t *testing.T) {
	b, err := store.OpenBolt(filepath.Join(t.TempDir(), "ruled.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	j := New(b, &testkit.Log{})
	defer j.Close()
	es := []*bus.Event{event(t, `{"topic":"a","id":"e1"}`), event(t, `{"topic":"a","id":"e2"}`), event(t, `{"topic":"b","id":"e3"}`)}
	c0, _ := b.Commits()
	ids, err := j.AddAll(es, [][]string{{"r1"}, {"r1", "r2"}, {"r3"}})
	if err != nil || len(ids) != 3 {
		t.Fatalf("AddAll: %v, %v", ids, err)
	}
	if c, _ := b.Commits(); c-c0 != 1 {
		t.Errorf("%d commits for a group of three; want 1", c-c0)
	}
	loaded, err := j.Load()
	if err != nil || len(loaded) != 3 {
		t.Fatalf("loaded %d entries (%v); want 3", len(loaded), err)
	}
	got := map[string]string{}
	for _, en := range loaded {
		got[en.EventID] = strings.Join(en.Rules, ",")
	}
	if got["e1"] != "r1" || got["e2"] != "r1,r2" || got["e3"] != "r3" {
		t.Errorf("entries %v; want each event with its rules", got)
	}

	h := &testkit.Hasher{}
	j2 := New(h, &testkit.Log{})
	defer j2.Close()
	if _, err := j2.AddAll(es[:2], [][]string{{"r"}, {"r"}}); err != nil || h.Sets() != 2 {
		t.Errorf("without a MultiSetter: %v, %d writes; want 2", err, h.Sets())
	}
	h.LoseNextAnswer() // the first write lands, and the store's answer is lost
	if _, err := j2.AddAll(es, [][]string{{"r"}, {"r"}, {"r"}}); err == nil {
		t.Fatal("AddAll whose write's answer was lost: no error")
	}
	if h.Sets() != 3 {
		t.Fatalf("%d writes; want the group's first to have landed", h.Sets())
	}
	eventually(t, "the refused group's entry that landed is gone", func() bool { return h.Len(Hash) == 2 })
}

// TestOneFieldAKey: a key journaled again (two entries of one key, in one
// batch of deletions or in two) is kept in one field, its latest write's.
func TestOneFieldAKey(t *testing.T) {
	h := &testkit.Hasher{}
	j := New(h, &testkit.Log{})
	defer j.Close()
	add := func() string {
		e := event(t, `{"topic":"a"}`)
		e.Key = "mqtt:k"
		id, err := j.Add(e, []string{"r"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	fields := func() []string {
		all, _ := h.HGetAll(Hash)
		var fs []string
		for f := range all {
			fs = append(fs, f)
		}
		return fs
	}
	a, b := add(), add()
	j.Ack(a)
	j.Ack(b)
	eventually(t, "both deleted", func() bool { return j.Stats().Open == 0 })
	first := fields()
	if len(first) != 1 || !strings.HasSuffix(first[0], ":mqtt:k") {
		t.Fatalf("fields %v; want one for mqtt:k", first)
	}
	time.Sleep(time.Millisecond) // a later write
	j.Ack(add())
	eventually(t, "deleted", func() bool { return j.Stats().Open == 0 })
	if now := fields(); len(now) != 1 || now[0] == first[0] || !strings.HasSuffix(now[0], ":mqtt:k") {
		t.Fatalf("fields %v after a third entry; want one, newer than %s", now, first[0])
	}
}
