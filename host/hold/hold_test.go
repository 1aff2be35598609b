package hold_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/hold"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/state"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// world is a state table, holds over a real bbolt store, a virtual
// clock, and the runs the holds fired.
type world struct {
	t      *testing.T
	clock  *sched.Virtual
	st     *store.Bolt
	states *state.Table
	holds  *hold.Holds
	mu     sync.Mutex
	fired  []hold.Due
	dones  []func()
	dec    bus.Decoder
	// refused: the rule is refused for a problem of its file (Refused);
	// noRun: Fire starts no run (an edited trigger).
	refused, noRun bool
}

var open = rules.Change{Topic: "door.*", Field: "open", To: []any{true}, For: 10 * time.Minute}

func newWorld(t *testing.T, path string, clock *sched.Virtual) *world {
	t.Helper()
	st, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	states, err := state.New(state.Config{Store: st, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, clock: clock, st: st, states: states}
	w.holds = hold.New(hold.Config{Store: st, Clock: clock, Entity: states.Get, Window: time.Hour,
		Fire: func(d hold.Due, done func()) bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.noRun {
				done()
				return false
			}
			w.fired = append(w.fired, d)
			w.dones = append(w.dones, done)
			return true
		},
		Refused: func(string) bool { return w.refused }})
	return w
}

// report is an event on topic with the state js, heard by the state
// table and then the holds, as ingest does.
func (w *world) report(topic, js string) {
	w.t.Helper()
	e, err := w.dec.Decode([]byte(`{"topic":"` + topic + `",` + js[1:]))
	if err != nil {
		w.t.Fatal(err)
	}
	w.holds.Observe("door-left-open", 0, open, w.states.Observe(e), e)
}

func (w *world) firedFor() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, d := range w.fired {
		out = append(out, d.Entity)
	}
	return out
}

// close stops the world as a daemon's stop does: the state table writes
// what changed, the holds' timers stop, the store closes.
func (w *world) close() {
	w.states.Close()
	w.holds.Close()
	w.st.Close()
}

func TestHold(t *testing.T) {
	w := newWorld(t, filepath.Join(t.TempDir(), "ruled.db"), sched.NewVirtual(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)))
	w.report("door.front", `{"open":true}`)
	w.clock.Advance(5 * time.Minute)
	w.report("door.front", `{"open":true,"battery":80}`) // another field: keeps it
	w.report("door.back", `{"open":true}`)
	w.clock.Advance(5*time.Minute - time.Second)
	if got := w.firedFor(); len(got) != 0 {
		t.Fatalf("fired %v before 10 minutes", got)
	}
	w.clock.Advance(time.Second)
	if got := w.firedFor(); strings.Join(got, ",") != "door.front" {
		t.Fatalf("at 10 minutes: fired %v, want door.front", got)
	}
	w.report("door.back", `{"open":false}`) // cancels the back door's
	w.clock.Advance(time.Hour)
	w.report("door.front", `{"open":true}`) // still open: no second hold
	w.clock.Advance(time.Hour)
	if got := w.firedFor(); strings.Join(got, ",") != "door.front" {
		t.Errorf("fired %v: want the front door's once, the back door's cancelled", got)
	}
	w.report("door.front", `{"open":false}`)
	w.report("door.front", `{"open":true}`)
	w.clock.Advance(10 * time.Minute)
	if got := w.firedFor(); strings.Join(got, ",") != "door.front,door.front" {
		t.Errorf("fired %v: want a second hold after the door closed and opened", got)
	}
	if st := w.holds.Stats(); st.Began != 3 || st.Fired != 2 || st.Cancelled != 1 || st.Running != 0 {
		t.Errorf("stats %+v", st)
	}
	// A fired hold's record goes once its run took it.
	for _, done := range w.dones {
		done()
	}
	w.holds.Close() // its writer's last removals
	if n, _ := w.st.HGetAll(keyspace.Holds); len(n) != 0 {
		t.Errorf("records left: %v", n)
	}
}

// A restart in the middle of holds: one waits out the rest of its time,
// one whose state changed while down (its last report before the stop)
// is dropped, one that came due while down runs at once, one due past
// the replay window is dropped; a trigger changed meanwhile drops its
// hold. None runs twice.
func TestHoldAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.db")
	clock := sched.NewVirtual(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	a := newWorld(t, path, clock)
	a.report("door.front", `{"open":true}`)
	a.report("door.side", `{"open":true}`)
	clock.Advance(4 * time.Minute)
	a.report("door.back", `{"open":true}`)
	a.report("door.cellar", `{"open":true}`)
	a.close() // the states written, the holds' records kept

	// The cellar door closed while the daemon was down: its state says so
	// when the next start checks (as a report just before the stop would).
	b0 := newWorld(t, path, clock)
	e, _ := b0.dec.Decode([]byte(`{"topic":"door.cellar","open":false}`))
	b0.states.Observe(e)
	b0.states.Close()
	b0.st.Close()

	clock.Advance(2 * time.Minute) // down 2 minutes: front and side due in 4, back in 8
	b := newWorld(t, path, clock)
	n, err := b.holds.Restore(func(rule string, i int) (rules.Change, bool) {
		if rule == "door-left-open" && i == 0 {
			return open, true
		}
		return rules.Change{}, false
	}, nil)
	if err != nil || n != 3 {
		t.Fatalf("restored %d (%v), want front, side and back (cellar's state changed)", n, err)
	}
	b.report("door.side", `{"open":false}`) // closed after the restart: cancelled
	clock.Advance(4 * time.Minute)
	if got := b.firedFor(); strings.Join(got, ",") != "door.front" {
		t.Errorf("4 minutes after the restart: fired %v, want door.front (10 minutes after it began)", got)
	}
	clock.Advance(4 * time.Minute)
	if got := b.firedFor(); strings.Join(got, ",") != "door.front,door.back" {
		t.Errorf("8 minutes after: fired %v", got)
	}
	if got := a.firedFor(); len(got) != 0 {
		t.Errorf("the first process fired %v", got)
	}
	b.close()

	// Down long: a hold due while down runs at once within the window,
	// past it is dropped; a changed trigger drops its hold.
	path2 := filepath.Join(t.TempDir(), "ruled.db")
	c := newWorld(t, path2, clock)
	c.report("door.front", `{"open":true}`)
	c.close()
	clock.Advance(30 * time.Minute)
	d := newWorld(t, path2, clock)
	if n, _ := d.holds.Restore(func(string, int) (rules.Change, bool) { return open, true }, nil); n != 1 {
		t.Fatalf("restored %d after 30 minutes down", n)
	}
	clock.Advance(0)
	if got := d.firedFor(); strings.Join(got, ",") != "door.front" {
		t.Errorf("due while down, within the window: fired %v, want at once", got)
	}
	d.close()
	// The wall clock set back an hour while down: the hold waits at most
	// its own ten minutes from the start, not an hour and ten.
	p3 := filepath.Join(t.TempDir(), "ruled.db")
	e3 := newWorld(t, p3, clock)
	e3.report("door.front", `{"open":true}`)
	e3.close()
	clock.SetWall(clock.Now().Add(-time.Hour))
	f3 := newWorld(t, p3, clock)
	if n, _ := f3.holds.Restore(func(string, int) (rules.Change, bool) { return open, true }, nil); n != 1 {
		t.Fatalf("restored %d after the clock was set back", n)
	}
	clock.Advance(10 * time.Minute)
	if got := f3.firedFor(); strings.Join(got, ",") != "door.front" {
		t.Errorf("clock set back an hour: fired %v within the hold's ten minutes, want door.front", got)
	}
	f3.close()

	for _, tc := range []struct {
		name    string
		down    time.Duration
		trigger rules.Change
	}{
		{"past the window", 2 * time.Hour, open},
		{"trigger changed", time.Minute, rules.Change{Topic: "door.*", Field: "open", To: []any{true}, For: 20 * time.Minute}},
	} {
		p := filepath.Join(t.TempDir(), "ruled.db")
		x := newWorld(t, p, clock)
		x.report("door.front", `{"open":true}`)
		x.close()
		clock.Advance(tc.down)
		y := newWorld(t, p, clock)
		if n, _ := y.holds.Restore(func(string, int) (rules.Change, bool) { return tc.trigger, true }, nil); n != 0 {
			t.Errorf("%s: restored %d", tc.name, n)
		}
		y.holds.Close() // its writer's last removals
		if recs, _ := y.st.HGetAll(keyspace.Holds); len(recs) != 0 || y.holds.Stats().Dropped != 1 {
			t.Errorf("%s: records %v, stats %+v: want it dropped", tc.name, recs, y.holds.Stats())
		}
		y.close()
	}
}

// The bound: holds past Max are refused and counted.
func TestHoldBound(t *testing.T) {
	clock := sched.NewVirtual(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "ruled.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	states, _ := state.New(state.Config{Now: clock.Now})
	hs := hold.New(hold.Config{Store: st, Clock: clock, Max: 2, Fire: func(hold.Due, func()) bool { return true }})
	var d bus.Decoder
	for _, topic := range []string{"door.a", "door.b", "door.c"} {
		e, _ := d.Decode([]byte(`{"topic":"` + topic + `","open":true}`))
		hs.Observe("r", 0, open, states.Observe(e), e)
	}
	if s := hs.Stats(); s.Running != 2 || s.Refused != 1 {
		t.Errorf("stats %+v: want 2 running, 1 refused", s)
	}
}

// The review's cases. A kill within the state table's 10 ms after the
// report that began a hold: the kept state is older than the hold, and
// does not drop it. A hold whose run took it before the kill (its rule
// holds a record of the event) is not run again. A report the table
// refuses (at its size) ends the entity's hold: whether the value still
// holds is not known.
func TestHoldEdges(t *testing.T) {
	clock := sched.NewVirtual(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "ruled.db")
	a := newWorld(t, path, clock)
	a.report("door.front", `{"open":false}`)
	a.close() // the state "closed" is kept
	clock.Advance(time.Minute)
	// The door opens; the state table's write of it never lands (a
	// kill within its 10 ms): a table that keeps nothing hears it.
	st, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := state.New(state.Config{Now: clock.Now})
	hs := hold.New(hold.Config{Store: st, Clock: clock, Fire: func(hold.Due, func()) bool { return true }})
	var d bus.Decoder
	e, _ := d.Decode([]byte(`{"topic":"door.front","open":true}`))
	mem.Observe(event(t, `{"topic":"door.front","open":false}`))
	hs.Observe("door-left-open", 0, open, mem.Observe(e), e)
	hs.Close()
	st.Close()

	b := newWorld(t, path, clock)
	if n, _ := b.holds.Restore(func(string, int) (rules.Change, bool) { return open, true }, nil); n != 1 {
		t.Fatalf("restored %d: a kept state older than the hold dropped it", n)
	}
	clock.Advance(10 * time.Minute)
	if got := b.firedFor(); strings.Join(got, ",") != "door.front" {
		t.Errorf("fired %v", got)
	}
	b.close()

	// Taken before the kill: not run again.
	p2 := filepath.Join(t.TempDir(), "ruled.db")
	c := newWorld(t, p2, clock)
	c.report("door.front", `{"open":true}`)
	c.close()
	clock.Advance(11 * time.Minute)
	x := newWorld(t, p2, clock)
	if n, _ := x.holds.Restore(func(string, int) (rules.Change, bool) { return open, true },
		func(rule, id string, at int64) bool { return rule == "door-left-open" }); n != 0 {
		t.Errorf("restored %d holds whose runs had taken them", n)
	}
	clock.Advance(time.Minute)
	if got := x.firedFor(); len(got) != 0 {
		t.Errorf("fired %v", got)
	}
	x.close()

	// A closing report the table refuses ends the hold.
	tight, _ := state.New(state.Config{Now: clock.Now, MaxBytes: state.EntryOverhead + 300})
	var fired int
	hs2 := hold.New(hold.Config{Store: nopStore{}, Clock: clock, Fire: func(hold.Due, func()) bool { fired++; return true }})
	defer hs2.Close()
	for _, js := range []string{`{"topic":"door.front","open":true}`, `{"topic":"door.front","open":false,"pad":"` + strings.Repeat("x", 300) + `"}`} {
		ev := event(t, js)
		hs2.Observe("door-left-open", 0, open, tight.Observe(ev), ev)
	}
	clock.Advance(time.Hour)
	if st := tight.Stats(); st.Refused["bytes"] != 1 {
		t.Fatalf("the closing report was not refused: %+v", st)
	}
	if s := hs2.Stats(); fired != 0 || s.Cancelled != 1 {
		t.Errorf("fired %d, stats %+v: want the hold ended by the refused report", fired, s)
	}
}

func event(t *testing.T, js string) *bus.Event {
	t.Helper()
	var d bus.Decoder
	e, err := d.Decode([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestSync: Sync returns once the holds' records queued so far are in
// the store — waiting for a write the writer has under way —, so that
// ingest acknowledges an event that began a hold only then; with nothing
// queued it returns at once.
func TestSync(t *testing.T) {
	clock := sched.NewVirtual(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	st := &testkit.Hasher{}
	hs := hold.New(hold.Config{Store: st, Clock: clock, Fire: func(hold.Due, func()) bool { return true }})
	defer hs.Close()
	if err := hs.Sync(); err != nil {
		t.Fatal(err)
	}
	states, _ := state.New(state.Config{Now: clock.Now})
	entered, release := st.HoldWrites()
	e := event(t, `{"topic":"door.front","open":true}`)
	hs.Observe("door-left-open", 0, open, states.Observe(e), e)
	<-entered // the writer has begun the record's write, and waits
	synced := make(chan error, 1)
	go func() { synced <- hs.Sync() }()
	select {
	case err := <-synced:
		t.Fatalf("Sync returned (%v) while the hold's record was still being written", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if all, _ := st.HGetAll(keyspace.Holds); len(all) != 1 {
		t.Errorf("after Sync the store has %d holds; want the one begun", len(all))
	}
}

// TestHoldOfARefusedRule: a start that finds a hold's rule refused for a
// problem of its file keeps the hold in the store, neither restored nor
// dropped; the start after the file is mended restores and runs it (a
// review found it dropped as a gone rule's).
func TestHoldOfARefusedRule(t *testing.T) {
	clock := sched.NewVirtual(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "ruled.db")
	a := newWorld(t, path, clock)
	a.report("door.front", `{"open":true}`)
	a.close()
	b := newWorld(t, path, clock)
	b.refused = true
	if n, _ := b.holds.Restore(func(string, int) (rules.Change, bool) { return rules.Change{}, false }, nil); n != 0 {
		t.Fatalf("restored %d of a refused rule", n)
	}
	if st := b.holds.Stats(); st.Dropped != 0 {
		t.Fatalf("dropped %d of a refused rule", st.Dropped)
	}
	b.close()
	c := newWorld(t, path, clock)
	if n, _ := c.holds.Restore(func(string, int) (rules.Change, bool) { return open, true }, nil); n != 1 {
		t.Fatalf("restored %d once the rule loads", n)
	}
	clock.Advance(10 * time.Minute)
	if got := c.firedFor(); strings.Join(got, ",") != "door.front" {
		t.Errorf("fired %v; want door.front", got)
	}
}

// TestHoldThatStartsNoRun: a hold whose Fire starts no run (its trigger
// edited since it began) counts as dropped, not fired.
func TestHoldThatStartsNoRun(t *testing.T) {
	w := newWorld(t, filepath.Join(t.TempDir(), "ruled.db"), sched.NewVirtual(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)))
	w.noRun = true
	w.report("door.front", `{"open":true}`)
	w.clock.Advance(10 * time.Minute)
	if st := w.holds.Stats(); st.Fired != 0 || st.Dropped != 1 {
		t.Errorf("stats %+v; want 0 fired, 1 dropped", st)
	}
}
