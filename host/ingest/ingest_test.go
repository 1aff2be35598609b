package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/state"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/journal"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/ruleset"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/wasm"
)

// runner records the triggers it is handed.
type runner struct {
	mu        sync.Mutex
	fired     []seq.Trigger
	canceled  []string
	delivered []string
	away      []string // TurnAway's
}

func (r *runner) Fire(t seq.Trigger) { r.mu.Lock(); r.fired = append(r.fired, t); r.mu.Unlock() }
func (r *runner) Deliver(rule string, e *bus.Event, done func()) int {
	r.mu.Lock()
	r.delivered = append(r.delivered, rule+" "+e.Topic)
	r.mu.Unlock()
	if done != nil {
		done()
	}
	return 0
}

func (r *runner) Awaits(string) bool { return false }

func (r *runner) TurnAway(s *seq.Sequence, _ *bus.Event, why string) {
	r.mu.Lock()
	r.away = append(r.away, s.Rule.ID+": "+why)
	r.mu.Unlock()
}

func (r *runner) CancelMatching(e *bus.Event) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.canceled = append(r.canceled, e.Topic)
	return 0
}

func (r *runner) rules() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, t := range r.fired {
		out = append(out, t.Seq.Rule.ID)
	}
	return out
}

// room has room or not, and counts the waits for it.
type room struct {
	fits  bool
	waits int
	// free, when set, is the queue's capacity, which the triggers fired
	// take (queued: nothing runs them).
	free int
	run  *runner
}

func (r *room) Fits(n int) bool { return r.fits && (r.free == 0 || n <= r.Free()) }
func (r *room) Free() int {
	switch {
	case !r.fits:
		return 0
	case r.free > 0:
		r.run.mu.Lock()
		defer r.run.mu.Unlock()
		return max(r.free-len(r.run.fired), 0)
	}
	return 1 << 20
}
func (r *room) WaitRoom(int, <-chan struct{}) bool {
	r.waits++
	return true
}

type actions struct{}

func (actions) Function(string, string) (abi.Kind, bool) { return abi.KindAction, true }
func (actions) Plugins() []string                        { return []string{"p"} }

// The rules: plain triggers on a.x, durable on d.x, cancelled by c.x.
const ruleFile = `
- id: plain
  on: a.x
  cancel-on: [c.x]
  steps:
    - name: s
      do: p.act
- id: durable
  on: [a.x, d.x]
  steps:
    - name: later
      do: p.act
      after: 1m
      durable: true
- id: held
  on: {topic: held.*, changes: open, to: true, for: 1m}
  steps:
    - do: p.act
- id: opened
  on: [{topic: door.*, changes: open, to: true}, door.test]
  steps:
    - name: later
      do: p.act
      after: 1m
      durable: true
`

type env struct {
	*Ingest
	dir  string // the rules' directory
	run  *runner
	room *room
	j    *journal.Journal
	st   *store.Bolt
	bus  *bus.Local
	stop chan struct{}
}

// loader reads the rules of dir, each compiled to a bare sequence.
func loader(dir string) *ruleset.Loader {
	return ruleset.New(ruleset.Config{Dir: dir, Catalog: actions{},
		Compile: func(r *rules.Rule) (*seq.Sequence, error) { return &seq.Sequence{Rule: r}, nil },
		Def:     func(r *rules.Rule) string { return r.ID }})
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "r.yaml"), []byte(ruleFile), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := loader(dir)
	if rs.Load(); len(rs.Current().Problems()) > 0 {
		t.Fatal(rs.Current().Problems())
	}
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "ruled.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j := journal.New(st, hclog.NewNullLogger())
	t.Cleanup(func() { j.Close(); st.Close() })
	run := &runner{}
	e := &env{dir: dir, run: run, room: &room{fits: true, run: run}, j: j, st: st, bus: &bus.Local{}, stop: make(chan struct{})}
	e.Ingest = New(Config{Rules: rs, Runner: e.run, Room: e.room, Journal: j, Decoder: &bus.Decoder{}, Stop: e.stop})
	return e
}

func (e *env) event(t *testing.T, topic string) *bus.Event {
	t.Helper()
	ev, err := e.cfg.Decoder.Decode([]byte(`{"topic":"` + topic + `","v":1}`))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestTakeByTrigger(t *testing.T) {
	tests := []struct {
		name, topic string
		fired       []string
		journaled   uint64
		canceled    int
	}{
		{"a plain and a durable rule", "a.x", []string{"plain", "durable"}, 1, 0},
		{"a durable rule only", "d.x", []string{"durable"}, 1, 0},
		{"a cancel only", "c.x", nil, 0, 1},
		{"no rule", "z.x", nil, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.ConnectLocal(e.bus)
			var seen []string // the bus's subscribers see it first, once
			t.Cleanup(e.bus.Subscribe(func(ev *bus.Event) { seen = append(seen, ev.Topic+" "+strconv.Itoa(len(e.run.fired))) }))
			if err := e.Take(e.event(t, tc.topic), FromClient); err != nil {
				t.Fatal(err)
			}
			if want := tc.topic + " 0"; len(seen) != 1 || seen[0] != want {
				t.Errorf("the bus's subscriber saw %q; want %q: once, before the rules", seen, want)
			}
			if got := e.run.rules(); strings.Join(got, ",") != strings.Join(tc.fired, ",") {
				t.Errorf("fired %v, want %v", got, tc.fired)
			}
			if st := e.Status(); st.Written != tc.journaled {
				t.Errorf("journaled %d, want %d", st.Written, tc.journaled)
			}
			if len(e.run.canceled) != tc.canceled {
				t.Errorf("cancels %v, want %d", e.run.canceled, tc.canceled)
			}
			for _, tr := range e.run.fired {
				durable := tr.Seq.Rule.ID == "durable"
				if (tr.Done != nil) != durable || tr.Waited == durable {
					t.Errorf("%s: Done set %v, Waited %v: the journaled trigger is let go by Done, the other is never refused",
						tr.Seq.Rule.ID, tr.Done != nil, tr.Waited)
				}
				if tr.Done != nil {
					tr.Done() // the rule took it: the journal lets it go
				}
			}
		})
	}
}

func TestTakeWhenItCannotNow(t *testing.T) {
	e := newEnv(t)
	ev := e.event(t, "a.x")
	if err := e.Take(ev, FromClient); err == nil || !strings.Contains(err.Error(), "not open yet") {
		t.Errorf("before Connect: %v", err)
	}
	live := false
	e.Connect(e.bus, func() bool { return live }, nil)
	if err := e.Take(ev, FromClient); !errors.Is(err, ErrBusDown) {
		t.Errorf("subscription down, from a client: %v, want ErrBusDown", err)
	}
	live = true
	e.room.fits = false
	if err := e.Take(ev, FromClient); !errors.Is(err, ErrBusy) {
		t.Errorf("queue full, from a client: %v, want ErrBusy", err)
	}
	if st := e.Status(); st.Busy != 1 || st.Written != 0 {
		t.Errorf("busy %d, journaled %d: want the refusal counted and nothing kept", st.Busy, st.Written)
	}
	if err := e.Take(ev, FromPlugin); err != nil || e.room.waits != 0 {
		t.Errorf("queue full, from a plugin: %v after %d waits; want taken without waiting", err, e.room.waits)
	}
	if err := e.Take(ev, FromInput); err != nil || e.room.waits != 1 {
		t.Errorf("queue full, from an input: %v after %d waits; want taken after one wait", err, e.room.waits)
	}
	close(e.stop)
	if err := e.Take(ev, FromInput); !errors.Is(err, ErrStopping) {
		t.Errorf("after Stop: %v", err)
	}
}

// closedBus refuses every publish: the Redis bus once its subscription
// closed (bus.ErrNoSubscriber).
type closedBus struct{}

func (closedBus) Publish(context.Context, *bus.Event) error { return bus.ErrNoSubscriber }

// A step publishing while the daemon stops, on a bus whose subscription
// is closed already: its event is kept in the journal for the next start
// (for every rule it triggers), and the step is not failed. A client's
// event is refused as before.
func TestStepsPublishKeptWhileStopping(t *testing.T) {
	e := newEnv(t)
	e.Connect(closedBus{}, nil, nil)
	if err := e.Take(e.event(t, "a.x"), FromClient); !errors.Is(err, bus.ErrNoSubscriber) {
		t.Errorf("a client's event on a closed bus: %v, want refused", err)
	}
	close(e.stop)
	if err := e.Take(e.event(t, "a.x"), FromPlugin); err != nil {
		t.Fatalf("a step's publish while stopping: %v, want taken", err)
	}
	entries, err := e.j.Load()
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, en := range entries { // the client's refused entry goes later (Forget is batched)
		if strings.Join(en.Rules, ",") == "plain,durable" {
			kept++
		}
	}
	if kept != 1 {
		t.Errorf("journal: %+v, want the step's event kept for plain and durable", entries)
	}
}

// A change trigger: a door's reports fire the rule only when "open"
// becomes true; a plain trigger of the same rule fires on every event;
// a report that fires nothing lets its journal entry go at once (the
// rule took it: a start does not give it the event). Without a state
// table a change trigger fires nothing.
func TestChangeTriggers(t *testing.T) {
	e := newEnv(t)
	tb, err := state.New(state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.States = tb
	e.ConnectLocal(e.bus)
	for _, js := range []string{
		`{"topic":"door.front","open":false}`, `{"topic":"door.front","open":true}`, `{"topic":"door.front","open":true}`,
		`{"topic":"door.back","open":true}`, `{"topic":"door.front","open":false}`, `{"topic":"door.test"}`, `{"topic":"door.test"}`,
	} {
		ev, err := e.cfg.Decoder.Decode([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Take(ev, FromClient); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, tr := range e.run.fired {
		got = append(got, tr.Event.Topic)
		tr.Done()
	}
	if want := "door.front,door.back,door.test,door.test"; strings.Join(got, ",") != want {
		t.Errorf("fired on %v, want %s", got, want)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		entries, err := e.j.Load()
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d journal entries left: a report that fired nothing kept its entry", len(entries))
		}
		time.Sleep(10 * time.Millisecond)
	}

	off := newEnv(t)
	off.ConnectLocal(off.bus)
	ev, _ := off.cfg.Decoder.Decode([]byte(`{"topic":"door.front","open":true}`))
	if err := off.Take(ev, FromClient); err != nil || len(off.run.fired) != 0 {
		t.Errorf("without a state table: %v, fired %d; want taken, nothing fired", err, len(off.run.fired))
	}
	if len(off.run.away) != 1 || !strings.Contains(off.run.away[0], "kept off") {
		t.Errorf("why-not without a state table: %q", off.run.away)
	}

	// A full table: the new entity's change trigger cannot tell, and
	// the rule says so in its why-not.
	full := newEnv(t)
	one, _ := state.New(state.Config{MaxEntities: 1})
	full.cfg.States = one
	full.ConnectLocal(full.bus)
	for _, js := range []string{`{"topic":"door.a","open":true}`, `{"topic":"door.b","open":true}`} {
		ev, _ := full.cfg.Decoder.Decode([]byte(js))
		if err := full.Take(ev, FromClient); err != nil {
			t.Fatal(err)
		}
	}
	if len(full.run.fired) != 1 || len(full.run.away) != 1 || !strings.Contains(full.run.away[0], "state table was full") {
		t.Errorf("a full table: fired %d, why-nots %q", len(full.run.fired), full.run.away)
	}
}

// heldCalls records what the holds heard.
type heldCalls struct {
	rules []string
	syncs int
}

func (h *heldCalls) Observe(rule string, _ int, _ rules.Change, _ state.Change, e *bus.Event) {
	h.rules = append(h.rules, rule+" "+e.Topic)
}

func (h *heldCalls) Sync() error { h.syncs++; return nil }

// A journal entry re-admitted at a start to a rule that hears its topic
// through a change trigger runs it whether or not the event changes the
// state now: the entry says the rule had not taken it, and its dispatch
// may have found a change the state table has since kept (a crash soak
// lost 98 changes a run queued behind another when the start asked the
// table again). A rule heard through a hold alone begins its hold
// instead (the holds hear the event), and takes the entry.
func TestReadmitRunsChangeTriggers(t *testing.T) {
	e := newEnv(t)
	tb, err := state.New(state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.States = tb
	holds := &heldCalls{}
	e.cfg.Holds = holds
	hold, err := e.cfg.Decoder.Decode([]byte(`{"topic":"held.x","open":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.j.Add(hold, []string{"held"}); err != nil {
		t.Fatal(err)
	}
	for _, js := range []string{`{"topic":"door.front","open":false}`, `{"topic":"door.back","open":true}`} {
		ev, err := e.cfg.Decoder.Decode([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.j.Add(ev, []string{"opened"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.Readmit(nil); n != 3 {
		t.Fatalf("found %d entries", n)
	}
	var got []string
	for _, tr := range e.run.fired {
		got = append(got, tr.Event.Topic)
		tr.Done()
	}
	if strings.Join(got, ",") != "door.front,door.back" {
		t.Errorf("re-admitted to %v, want both doors' (at least once)", got)
	}
	if strings.Join(holds.rules, ",") != "held held.x" {
		t.Errorf("the holds heard %v, want the hold rule's event", holds.rules)
	}
	if holds.syncs != 1 {
		t.Errorf("the holds were synced %d times; want once, before the entry held for a hold alone was let go", holds.syncs)
	}
	if _, ok := tb.Get("door.front"); !ok {
		t.Error("the state table did not hear the re-admitted event")
	}
	deadline := time.Now().Add(5 * time.Second)
	for entries, _ := e.j.Load(); len(entries) > 0; entries, _ = e.j.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("entries left: %+v", entries)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A change a change trigger hears is in the store before its rule runs
// (and, on the in-process bus, before Take returns): a kill cannot leave
// the table with the state before it. A change no trigger hears waits for
// the table's batched write.
func TestWatchedChangeWrittenFirst(t *testing.T) {
	e := newEnv(t)
	tb, err := state.New(state.Config{Store: e.st})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	e.cfg.States = tb
	e.ConnectLocal(e.bus)
	for _, js := range []string{`{"topic":"door.front","open":true}`, `{"topic":"a.x","v":7}`} {
		ev, _ := e.cfg.Decoder.Decode([]byte(js))
		if err := e.Take(ev, FromClient); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := e.st.HGetAll(keyspace.State)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := kept["door.front"]; !ok {
		t.Errorf("the door's change was not written before Take returned: %v", kept)
	}
}

func TestReadmit(t *testing.T) {
	e := newEnv(t)
	for _, topic := range []string{"d.x", "d.x"} {
		if _, err := e.j.Add(e.event(t, topic), []string{"durable"}); err != nil {
			t.Fatal(err)
		}
	}
	gone := e.event(t, "d.x")
	if _, err := e.j.Add(gone, []string{"removed-rule"}); err != nil {
		t.Fatal(err)
	}
	held := e.event(t, "d.x")
	if _, err := e.j.Add(held, []string{"durable"}); err != nil {
		t.Fatal(err)
	}
	// A later event that says the same id (a client's "id": "q1" on every
	// event of a device), queued behind the held one at the kill: its own.
	sameID, err := e.cfg.Decoder.Decode([]byte(`{"topic":"d.x","id":"` + held.ID + `","v":2}`))
	if err != nil {
		t.Fatal(err)
	}
	sameID.Time = held.Time.Add(time.Millisecond)
	if _, err := e.j.Add(sameID, []string{"durable"}); err != nil {
		t.Fatal(err)
	}
	n := e.Readmit(Held([]seq.Pending{{Rule: "durable", EventID: held.ID, EventTime: held.Time.UnixNano()}}))
	if n != 5 {
		t.Errorf("found %d entries, want 5", n)
	}
	if got := e.run.rules(); len(got) != 3 {
		t.Errorf("fired %v: want the three entries no record holds (one of them the held one's id), not the gone rule's, not the held one", got)
	}
	if e.Status().Readmitted != 5 {
		t.Errorf("status %+v", e.Status())
	}
}

// A step run again after a kill publishes the events it published before
// under the same ids (bus.StepEventID): a durable rule that held a record
// of one at the start is not given it again; a rule that did not hold it,
// a later publish and an outside event of the same id are taken.
func TestReplayedStepsRepeatIsTurnedAway(t *testing.T) {
	e := newEnv(t)
	c := &wasm.Call{Info: abi.CallInfo{Rule: "tell", Step: "s", Key: "run-1/tell"}}
	repeat := bus.StepEventID(c.Info.Key, 0)
	// A second step's event the journal kept for the rule: re-admitted.
	c2 := &wasm.Call{Info: abi.CallInfo{Rule: "tell", Step: "s", Key: "run-2/tell"}}
	kept, err := e.cfg.Decoder.DecodeAs([]byte(`{"topic":"d.x"}`), bus.StepEventID(c2.Info.Key, 0))
	if err != nil {
		t.Fatal(err)
	}
	kept.Hops = 1
	if _, err := e.j.Add(kept, []string{"durable"}); err != nil {
		t.Fatal(err)
	}
	e.Readmit(Held([]seq.Pending{
		{Rule: "durable", EventID: repeat, Hops: 1},
		{Rule: "durable", EventID: "from-outside"},
	}))
	if got := e.run.rules(); len(got) != 1 {
		t.Fatalf("re-admitted %v: want the journal's entry", got)
	}
	e.ConnectLocal(e.bus)
	for _, call := range []*wasm.Call{c, c, c2} {
		if err := e.Publish(context.Background(), wasm.OriginOf(call), "d.x", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.run.rules(); len(got) != 2 || got[1] != "durable" || e.run.fired[1].Event.ID != bus.StepEventID(c.Info.Key, 1) {
		t.Errorf("fired %v: want the journal's entry and the second publish's run only", got)
	}
	if st := e.Status(); st.Repeats != 2 || st.Written != 2 {
		t.Errorf("repeats %d, journaled %d: want both repeats counted and not journaled, the new one journaled", st.Repeats, st.Written)
	}
	// The same id from outside is no step's repeat.
	ev, err := e.cfg.Decoder.DecodeAs([]byte(`{"topic":"d.x"}`), repeat)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Take(ev, FromClient); err != nil {
		t.Fatal(err)
	}
	if got := e.run.rules(); len(got) != 3 {
		t.Errorf("fired %v: want the outside event taken", got)
	}
}

func TestReadEvents(t *testing.T) {
	e := newEnv(t)
	e.ConnectLocal(e.bus)
	in := `{"topic":"a.x"}` + "\n" + `not json` + "\n" + `{"topic":"ruled.reserved"}` + "\n" + `{"topic":"d.x"}` + "\n"
	e.ReadEvents(context.Background(), strings.NewReader(in))
	c := e.Counters().Snapshot()
	if c.Accepted != 2 || sum(c.Rejected) != 2 {
		t.Errorf("counters %+v, want 2 accepted and 2 rejected", c)
	}
	if got := e.run.rules(); len(got) != 3 {
		t.Errorf("fired %v, want plain and durable, then durable", got)
	}
}

func TestPluginPublishAndFire(t *testing.T) {
	e := newEnv(t)
	e.ConnectLocal(e.bus)
	e.cfg.Decoder.MaxSize = 64
	from := wasm.Origin{Info: &abi.CallInfo{Rule: "r", Step: "s", Run: "parent-run"}}
	if err := e.Publish(context.Background(), from, "d.x", []byte(`{"topic":"overridden"}`)); err != nil {
		t.Fatal(err)
	}
	if got := e.run.rules(); len(got) != 1 || got[0] != "durable" {
		t.Errorf("a publish on d.x fired %v", got)
	}
	err := e.Publish(context.Background(), from, "d.x", []byte(`{"pad":"`+strings.Repeat("x", 100)+`"}`))
	if !errors.Is(err, wasm.ErrTooLarge) {
		t.Errorf("an event over the size limit: %v, want ErrTooLarge", err)
	}
	if err := e.Publish(context.Background(), from, "ruled.x", nil); !errors.Is(err, wasm.ErrDenied) {
		t.Errorf("a reserved topic: %v, want ErrDenied", err)
	}
	// A topic template naming a field the event lacks: bad input, not a
	// grant's refusal, with a hint at the template.
	if err := e.Publish(context.Background(), from, "alerts.", nil); !errors.Is(err, wasm.ErrBadInput) || !strings.Contains(err.Error(), "{{placeholder}}") {
		t.Errorf("an empty segment: %v, want ErrBadInput with a hint", err)
	}
	id, err := e.Fire(context.Background(), from, "plain", []byte(`{}`))
	if err != nil || id == "" {
		t.Fatalf("fire: %q %v", id, err)
	}
	last := e.run.fired[len(e.run.fired)-1]
	if last.Seq.Rule.ID != "plain" || last.RunID != id || last.Parent != "parent-run" || last.Event.Topic != "fire.plain" {
		t.Errorf("fired %+v: want plain's run %s, a sub-run of parent-run, on fire.plain", last, id)
	}
	if _, err := e.Fire(context.Background(), from, "nope", nil); !errors.Is(err, wasm.ErrNotFound) {
		t.Errorf("fire of a rule not loaded: %v", err)
	}
}

// A step's events are named by its key and their order in the call: a
// re-run of the step publishes them under the same ids (a consumer that
// drops repeats by id drops them), unless the payload names its own.
func TestStepEventIDsRepeatWithTheStep(t *testing.T) {
	e := newEnv(t)
	e.ConnectLocal(e.bus)
	publish := func(from wasm.Origin, payload string) string {
		t.Helper()
		if err := e.Publish(context.Background(), from, "d.x", []byte(payload)); err != nil {
			t.Fatal(err)
		}
		return e.run.fired[len(e.run.fired)-1].Event.ID
	}
	call := func(key string) wasm.Origin {
		return wasm.OriginOf(&wasm.Call{Info: abi.CallInfo{Rule: "r", Step: "s", Key: key}})
	}
	first := call("run1/s/0")
	a, b := publish(first, `{"n":1}`), publish(first, `{"n":2}`)
	if a != bus.StepEventID("run1/s/0", 0) || b != bus.StepEventID("run1/s/0", 1) || a == b {
		t.Errorf("a call's two events: %s %s", a, b)
	}
	again := call("run1/s/0") // the step run again: a retry, a replay
	if a2, b2 := publish(again, `{"n":1}`), publish(again, `{"n":2}`); a2 != a || b2 != b {
		t.Errorf("the re-run's events %s %s, want %s %s", a2, b2, a, b)
	}
	if c := publish(call("run2/s/0"), `{"n":1}`); c == a {
		t.Errorf("another run's event has the same id %s", c)
	}
	if own := publish(call("run1/s/0"), `{"id":"mine"}`); own != "mine" {
		t.Errorf("a payload's own id: %s", own)
	}
	// No key (no step's call): a new id each time.
	nokey := wasm.Origin{Info: &abi.CallInfo{Rule: "r"}}
	if x, y := publish(nokey, `{}`), publish(nokey, `{}`); x == y || len(x) != 32 {
		t.Errorf("keyless publishes: %s %s", x, y)
	}
}

// outbox records what it is offered; while failing, it refuses; while
// unwritable, it takes an offer and its write fails (its wait says so).
type outbox struct {
	offered    []string // topic key by payload
	fail       error
	unwritable error
}

func (o *outbox) OfferLater(e *bus.Event, payload []byte, key, by string) (bool, func() error, error) {
	if o.fail != nil {
		return true, nil, o.fail
	}
	o.offered = append(o.offered, e.Topic+" "+key+" "+by+" "+string(payload))
	err := o.unwritable
	return true, func() error { return err }, nil
}

// A plugin's publish is offered to the outbox with the step's key before
// the bus has it; one the outbox refuses fails the publish and reaches no
// rule.
func TestPluginPublishMeetsTheOutbox(t *testing.T) {
	e := newEnv(t)
	e.ConnectLocal(e.bus)
	o := &outbox{}
	e.SendOut(o)
	from := wasm.Origin{Info: &abi.CallInfo{Rule: "r", Step: "s", Key: "run/s/0"}}
	if err := e.Publish(context.Background(), from, "d.x", []byte(`{"on":true}`)); err != nil {
		t.Fatal(err)
	}
	if want := `d.x run/s/0 r/s {"on":true}`; len(o.offered) != 1 || o.offered[0] != want {
		t.Errorf("offered %q, want %q", o.offered, want)
	}
	o.fail = errors.New("outbox full")
	if err := e.Publish(context.Background(), from, "d.x", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "outbox full") {
		t.Errorf("a refused offer: %v", err)
	}
	if got := e.run.rules(); len(got) != 1 {
		t.Errorf("fired %v: the refused publish must reach no rule", got)
	}
	// A step's call takes the wait: the publish returns at once, and its
	// event reaches the bus only once the write has landed — one that
	// fails reaches no rule (a retry would publish it again).
	o.fail, o.unwritable = nil, errors.New("disk gone")
	var owed []func() error
	step := wasm.OriginOf(&wasm.Call{Info: abi.CallInfo{Rule: "r", Step: "s", Key: "run/s/1"}, Owed: &owed})
	if err := e.Publish(context.Background(), step, "d.x", []byte(`{"n":2}`)); err != nil || len(owed) != 1 {
		t.Fatalf("publish %v, %d owed", err, len(owed))
	}
	if err := owed[0](); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Errorf("the owed write: %v", err)
	}
	if got := e.run.rules(); len(got) != 1 {
		t.Errorf("fired %v: a publish whose write failed must reach no rule", got)
	}
	o.unwritable, owed = nil, nil
	if err := e.Publish(context.Background(), step, "d.x", []byte(`{"n":3}`)); err != nil || len(owed) != 1 {
		t.Fatalf("publish %v, %d owed", err, len(owed))
	}
	if got := e.run.rules(); len(got) != 1 {
		t.Errorf("fired %v before the write landed", got)
	}
	if err := owed[0](); err != nil {
		t.Fatal(err)
	}
	if got := e.run.rules(); len(got) != 2 {
		t.Errorf("fired %v; want the event on the bus once its write landed", got)
	}
	// A call that takes no owed wait (this one is no run's) has the
	// publish wait for the write itself: one that fails fails it.
	o.fail, o.unwritable = nil, errors.New("disk gone")
	if err := e.Publish(context.Background(), from, "d.x", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Errorf("an offer the store could not write: %v", err)
	}
}

func sum[K comparable](m map[K]uint64) (n uint64) {
	for _, v := range m {
		n += v
	}
	return n
}

// stream is a fleet's ingest stream in memory: the topics appended, and
// "topic@entity" for one appended with its entity's state.
type stream struct{ appended []string }

func (s *stream) Append(_ context.Context, id, topic string, _ time.Time, _ int, _ []byte) (string, error) {
	s.appended = append(s.appended, topic)
	return id, nil
}

func (s *stream) AppendChange(_ context.Context, id, topic string, _ time.Time, _ int, _ []byte, entity string, _ []byte, _ int,
	_ time.Duration, _ time.Time, ops []store.TriggerOp) (string, error) {
	a := topic + "@" + entity
	for _, op := range ops {
		rule, _, _ := strings.Cut(op.Key, "\x00")
		a += fmt.Sprintf("+%s(in:%v)", rule, op.In)
	}
	s.appended = append(s.appended, a)
	return id, nil
}

func (s *stream) AppendEntry(ctx context.Context, en store.Entry) (string, store.WindowResult, error) {
	var res store.WindowResult
	for range en.Windows {
		res.Results = append(res.Results, "1")
	}
	if en.Entity == "" {
		id, err := s.Append(ctx, en.EventID, en.Topic, en.At, en.Hops, en.Raw)
		return id, res, err
	}
	id, err := s.AppendChange(ctx, en.EventID, en.Topic, en.At, en.Hops, en.Raw, en.Entity, en.State, en.MaxEntities,
		en.ForgetAfter, en.Now, en.Ops)
	return id, res, err
}

// TestFleetAppendsWatchedStates: in a fleet, an event on a topic a
// change trigger watches is appended with its entity's state (the
// member that routes it reads the state before it from the entry) and,
// for a hold, what the append script needs to run it (its value is not
// to: true here); one no rule watches is appended as it is; without a
// state table, none is.
func TestFleetAppendsWatchedStates(t *testing.T) {
	for _, keep := range []bool{true, false} {
		e := newEnv(t)
		e.cfg.Fleet, e.cfg.Journal = true, nil
		if keep {
			tb, err := state.New(state.Config{})
			if err != nil {
				t.Fatal(err)
			}
			e.cfg.States = tb
		}
		s := &stream{}
		e.Connect(e.bus, nil, s)
		for _, topic := range []string{"door.front", "a.x", "held.x"} {
			if err := e.Take(e.event(t, topic), FromClient); err != nil {
				t.Fatal(err)
			}
		}
		want := "door.front@door.front a.x held.x@held.x+held(in:false)"
		if !keep {
			want = "door.front a.x held.x"
		}
		if got := strings.Join(s.appended, " "); got != want {
			t.Errorf("states kept %v: appended %q; want %q", keep, got, want)
		}
	}
}

// In a fleet the stream is the acceptance and the member triggers the
// rules: an event on the bus — another member's pub/sub copy, even one
// delivered before this process joined — cancels here and triggers
// nothing, and the Redis subscription never waits for local room for it.
// (Before host/ingest the daemon decided this by its member being set,
// which it was not until after the subscription opened.)
func TestFleetTriggersNothingLocally(t *testing.T) {
	e := newEnv(t)
	e.cfg.Fleet, e.cfg.Journal = true, nil
	e.room.fits = false
	e.Dispatch(e.event(t, "a.x"))
	e.DispatchWaiting(e.event(t, "c.x"))
	if len(e.run.fired) != 0 || e.room.waits != 0 || len(e.run.canceled) != 1 {
		t.Errorf("fired %v, waited %d, cancels %v: want none, none, and c.x's", e.run.rules(), e.room.waits, e.run.canceled)
	}
	if err := e.Take(e.event(t, "a.x"), FromClient); err == nil {
		t.Error("taken before Connect")
	}
	s := &stream{}
	e.Connect(e.bus, nil, s)
	if err := e.Take(e.event(t, "a.x"), FromClient); err != nil || len(s.appended) != 1 || len(e.run.fired) != 0 {
		t.Errorf("%v, appended %v, fired %v: want the XADD as the acceptance and no local trigger", err, s.appended, e.run.rules())
	}
}

// TestTakeAll: a body's events into a durable rule are journaled in one
// store write (issue 39), each triggers its rules in order as Take would,
// and the group stops at the queue's room: the rest is Take's (refused
// busy, from a client).
func TestTakeAll(t *testing.T) {
	e := newEnv(t)
	e.ConnectLocal(e.bus)
	var es []*bus.Event
	for _, topic := range []string{"d.x", "a.x", "z.x", "d.x", "a.x"} {
		es = append(es, e.event(t, topic))
	}
	c0, _ := e.st.Commits()
	n, err := e.TakeAll(es, FromClient)
	if n != len(es) || err != nil {
		t.Fatalf("took %d (%v); want all %d", n, err, len(es))
	}
	if c, _ := e.st.Commits(); c-c0 != 1 {
		t.Errorf("%d commits for the body's journal entries; want 1", c-c0)
	}
	if got := strings.Join(e.run.rules(), ","); got != "durable,plain,durable,durable,plain,durable" {
		t.Errorf("fired %s; want each event's rules in the events' order", got)
	}
	if st := e.Status(); st.Written != 4 {
		t.Errorf("journaled %d; want 4 (every event a durable rule takes)", st.Written)
	}

	// A queue with room for three jobs: the group takes the first three
	// events; the fourth goes to Take, which refuses it.
	e2 := newEnv(t)
	e2.ConnectLocal(e2.bus)
	e2.room.free = 3
	n, err = e2.TakeAll([]*bus.Event{e2.event(t, "d.x"), e2.event(t, "d.x"), e2.event(t, "d.x"), e2.event(t, "d.x")}, FromClient)
	if n != 3 || !errors.Is(err, ErrBusy) {
		t.Errorf("took %d (%v); want 3, then ErrBusy", n, err)
	}
}

// An event that changed its entity's state is acknowledged only once the
// holds it may have begun or ended are in the store (Holds.Sync); a
// repeat of the state changes no hold, and costs no sync.
func TestTakeSyncsHolds(t *testing.T) {
	e := newEnv(t)
	tb, err := state.New(state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	holds := &heldCalls{}
	e.cfg.States, e.cfg.Holds = tb, holds
	e.ConnectLocal(e.bus)
	for i, want := range []int{1, 1, 2} {
		v := map[int]string{0: "1", 1: "1", 2: "2"}[i]
		ev, err := e.cfg.Decoder.Decode([]byte(`{"topic":"a.x","v":` + v + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Take(ev, FromClient); err != nil {
			t.Fatal(err)
		}
		if holds.syncs != want {
			t.Errorf("after report %d (v %s): %d syncs; want %d", i+1, v, holds.syncs, want)
		}
	}
}

// A body of reports that each change their entity's state (TakeAll) is
// answered once the holds they began or ended are in the store: one sync
// for the group, not one a report.
func TestTakeAllSyncsHoldsOnce(t *testing.T) {
	e := newEnv(t)
	tb, err := state.New(state.Config{})
	if err != nil {
		t.Fatal(err)
	}
	holds := &heldCalls{}
	e.cfg.States, e.cfg.Holds = tb, holds
	e.ConnectLocal(e.bus)
	var es []*bus.Event
	for i := range 5 {
		ev, err := e.cfg.Decoder.Decode([]byte(`{"topic":"d.x","v":` + strconv.Itoa(i) + `}`))
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, ev)
	}
	if n, err := e.TakeAll(es, FromClient); n != 5 || err != nil {
		t.Fatalf("took %d (%v); want 5", n, err)
	}
	if holds.syncs != 1 {
		t.Errorf("%d syncs for a body of 5 changes; want 1, before the answer", holds.syncs)
	}
}

// TestReadmitWaitsForARefusedRule: a journaled event whose rule is
// refused at the start for a problem of its file (a typo) is kept for it,
// in the journal and in memory, and given to it once the file is mended
// (ReadmitAbsent); the entry goes once the rule took it.
func TestReadmitWaitsForARefusedRule(t *testing.T) {
	e := newEnv(t)
	if _, err := e.j.Add(e.event(t, "d.x"), []string{"durable"}); err != nil {
		t.Fatal(err)
	}
	// The start after the kill reads the file with a typo in durable.
	rs := loader(e.dir)
	e.cfg.Rules = rs
	typo := strings.Replace(ruleFile, "after: 1m\n      durable: true\n- id: held", "aftr: 1m\n      durable: true\n- id: held", 1)
	if typo == ruleFile {
		t.Fatal("the typo did not take")
	}
	os.WriteFile(filepath.Join(e.dir, "r.yaml"), []byte(typo), 0o600)
	rs.Load()
	if !rs.Current().Refused("durable") {
		t.Fatalf("durable not refused: %v", rs.Current().Problems())
	}
	if n := e.Readmit(nil); n != 1 || len(e.run.rules()) != 0 {
		t.Fatalf("found %d, fired %v; want the entry kept for the refused rule", n, e.run.rules())
	}
	if n := e.ReadmitAbsent(); n != 0 { // a reload that left it refused
		t.Fatalf("fired %d while refused", n)
	}
	os.WriteFile(filepath.Join(e.dir, "r.yaml"), []byte(ruleFile), 0o600)
	rs.Load()
	if n := e.ReadmitAbsent(); n != 1 || !slices.Equal(e.run.rules(), []string{"durable"}) {
		t.Fatalf("fired %d %v once mended; want durable", n, e.run.rules())
	}
	e.run.fired[0].Done()
	e.j.Close() // lands the acknowledgement
	if left, err := e.st.HGetAll(journal.Hash); err != nil || len(left) != 0 {
		t.Errorf("journal %d entries after the rule took it (%v)", len(left), err)
	}
}

// TestReadmitAbsentDelivers: an event kept for a refused rule's waiting
// run (wait-for) goes to that run once the rule is mended, not away (a
// review found it acknowledged and lost).
func TestReadmitAbsentDelivers(t *testing.T) {
	e := newEnv(t)
	const waiter = `
- id: waiter
  on: job.start
  steps:
    - name: ask
      wait-for: {topic: job.ack, timeout: 1h}
`
	if _, err := e.j.Add(e.event(t, "job.ack"), []string{"waiter"}); err != nil {
		t.Fatal(err)
	}
	rs := loader(e.dir)
	e.cfg.Rules = rs
	os.WriteFile(filepath.Join(e.dir, "r.yaml"), []byte(strings.Replace(waiter, "timeout: 1h", "timeout: soon", 1)), 0o600)
	rs.Load()
	if !rs.Current().Refused("waiter") {
		t.Fatalf("waiter not refused: %v", rs.Current().Problems())
	}
	e.Readmit(nil)
	os.WriteFile(filepath.Join(e.dir, "r.yaml"), []byte(waiter), 0o600)
	rs.Load()
	e.ReadmitAbsent()
	if !slices.Equal(e.run.delivered, []string{"waiter job.ack"}) || len(e.run.rules()) != 0 {
		t.Errorf("delivered %v, fired %v; want the waiting run given it", e.run.delivered, e.run.rules())
	}
	e.j.Close()
	if left, err := e.st.HGetAll(journal.Hash); err != nil || len(left) != 0 {
		t.Errorf("journal %d entries after the run took it (%v)", len(left), err)
	}
}
