package seq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// localHasher is testkit.Hasher reading one field back, as store.Bolt
// does: runs replayed over it go cold (freezeLocked).
type localHasher struct{ *testkit.Hasher }

func (h localHasher) HGet(key, field string) ([]byte, bool, error) {
	all, err := h.HGetAll(key)
	if err != nil {
		return nil, false, err
	}
	v, ok := all[field]
	return []byte(v), ok, nil
}

// coldEnv is an env whose store reads a record back (localHasher).
func coldEnv(t *testing.T) *env {
	e := newEnv(t, 2, 100)
	e.configure(func(cfg *RunnerConfig) { cfg.Store = NewPendingStore(localHasher{e.h}, Placement{}, e.log) })
	return e
}

// cold reports how many of the runner's runs hold no trigger in memory.
func (e *env) cold() int {
	e.rn.mu.Lock()
	defer e.rn.mu.Unlock()
	n := 0
	for _, r := range e.rn.m.runs {
		if r.event == nil {
			n++
		}
	}
	return n
}

// TestColdReplay: a run replayed over a store that reads a record back
// keeps its trigger there, not in memory, and reads it back however it
// wakes: its step comes due, its wait-for takes an event or times out.
// Over a store that cannot read one back (Redis), and for a rule with cancel-on,
// runs stay warm.
func TestColdReplay(t *testing.T) {
	cases := []struct {
		name  string
		local bool
		rule  func(e *env) *Sequence
		wake  func(e *env, s *Sequence)
		cold  int
		want  string // the journal after the wake
	}{
		{"a step comes due", true,
			func(e *env) *Sequence { return e.rule(rules.Rule{ID: "valve", Key: "zone"}, "open", "close+10m!") },
			func(e *env, s *Sequence) { e.advance(10 * time.Minute) },
			2, "close:0:a close:0:b"},
		{"a wait-for takes its event", true,
			func(e *env) *Sequence { return e.waitRule(true, nil) },
			func(e *env, s *Sequence) {
				e.rn.Deliver("valve", e.event(`{"topic":"flow.sensor","zone":"b","rate":2.5}`), nil)
				e.settle()
			},
			2, `close,steps.flow.event.rate=2.5,steps.flow.timeout=-,zone="b"`},
		{"a wait-for times out", true,
			func(e *env) *Sequence { return e.waitRule(true, nil) },
			func(e *env, s *Sequence) { e.advance(10 * time.Minute) },
			2, `close,steps.flow.event.rate=-,steps.flow.timeout=true,zone="a" close,steps.flow.event.rate=-,steps.flow.timeout=true,zone="b"`},
		{"over a store that cannot read one back", false,
			func(e *env) *Sequence { return e.waitRule(true, nil) },
			func(e *env, s *Sequence) { e.advance(10 * time.Minute) },
			0, `close,steps.flow.event.rate=-,steps.flow.timeout=true,zone="a" close,steps.flow.event.rate=-,steps.flow.timeout=true,zone="b"`},
		{"a rule with cancel-on", true,
			func(e *env) *Sequence {
				return e.rule(rules.Rule{ID: "valve", Key: "zone", CancelOn: []rules.Cancel{{Pattern: "stop", Match: []string{"zone"}}}},
					"open", "close+10m!")
			},
			func(e *env, s *Sequence) {
				e.rn.CancelMatching(e.event(`{"topic":"stop","zone":"a"}`))
				e.advance(10 * time.Minute)
			},
			0, "close:0:b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			if tc.local {
				e = coldEnv(t)
			}
			s := tc.rule(e)
			e.fire(s, `{"topic":"flow.start","zone":"a","vehicle":"a"}`)
			e.fire(s, `{"topic":"flow.start","zone":"b","vehicle":"b"}`)
			e.restart()
			s = tc.rule(e)
			if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 2 {
				t.Fatalf("replayed %d runs; want 2", n)
			}
			if got := e.cold(); got != tc.cold {
				t.Fatalf("%d runs cold after the replay; want %d", got, tc.cold)
			}
			e.j.got = nil
			tc.wake(e, s)
			got := e.j.list()
			slices.Sort(got)
			if got := strings.Join(got, " "); got != tc.want {
				t.Errorf("journal %q; want %q", got, tc.want)
			}
		})
	}
}

// TestColdRereadFails: a cold run whose record is no longer its own
// (gone, or another run's) ends at its next step with a RereadError —
// whatever that step is (a wait-for too) and whatever its on-error says
// — and never writes {} as its trigger; its finally steps still run.
func TestColdRereadFails(t *testing.T) {
	tests := []struct {
		name  string
		steps []string
		setup func(e *env, s *Sequence)
		after time.Duration
		want  string // the journal from the restart on
	}{
		{name: "a step comes due", steps: []string{"open", "close+10m!"}, after: 10 * time.Minute},
		{name: "the next step is a wait-for", steps: []string{"open", "a?flow.sensor/10m", "b?other/10m", "close"},
			after: 20 * time.Minute},
		{name: "its step goes on on error", steps: []string{"open", "close+10m!", "after"},
			setup: func(e *env, s *Sequence) { s.Steps[1].ContinueOnError = true }, after: 10 * time.Minute},
		{name: "its finally steps run", steps: []string{"open", "close+10m!"},
			setup: func(e *env, s *Sequence) { e.withFinally(s, "safe") }, after: 10 * time.Minute, want: "safe:0:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := coldEnv(t)
			mk := func() *Sequence {
				s := e.rule(rules.Rule{ID: "valve", Key: "vehicle"}, tt.steps...)
				if tt.setup != nil {
					tt.setup(e, s)
				}
				return s
			}
			e.fire(mk(), `{"topic":"t","vehicle":"v1"}`)
			e.restart()
			var failed []error
			e.configure(func(cfg *RunnerConfig) {
				cfg.OnError = func(rule string, err error) { failed = append(failed, err) }
			})
			if n := e.rn.Replay([]*Sequence{mk()}, time.Hour); n != 1 || e.cold() != 1 {
				t.Fatalf("replayed %d runs, %d cold; want 1 cold", n, e.cold())
			}
			e.h.HSet(PendingHash, recordID(t, e), `{"v":2,"id":"someone else's"}`)
			e.j.got = nil
			for range int(tt.after / time.Minute) {
				e.advance(time.Minute)
				assertNoEmptyTrigger(t, e)
			}
			if got := e.j.String(); got != tt.want {
				t.Errorf("journal %q; want %q", got, tt.want)
			}
			var re *RereadError
			if len(failed) != 1 || !errors.As(failed[0], &re) {
				t.Fatalf("errors %v; want one RereadError", failed)
			}
			if !strings.Contains(e.log.String(), "cannot be read back from its record") {
				t.Errorf("no log line says the trigger could not be read back:\n%s", e.log.String())
			}
			if n := e.rn.Counts().Active; n != 0 {
				t.Errorf("%d runs active; want the run failed", n)
			}
		})
	}
}

// TestReplayRoomOnlyForLoadedRules: a replay makes room for the runs of
// the rules loaded now, and none for a rule that is gone: its records are
// dropped, and it gets no state from them.
func TestReplayRoomOnlyForLoadedRules(t *testing.T) {
	e := coldEnv(t)
	now := e.clk.Now().UnixMilli()
	for i := range 1500 {
		p := Pending{ID: NewRunID(), Rule: "gone", Step: "close", FireAt: now + 60_000, WrittenAt: now,
			Key: strconv.Itoa(i), Event: json.RawMessage(`{"topic":"t"}`)}
		if err := e.rn.store.Put(p); err != nil {
			t.Fatal(err)
		}
	}
	s := e.rule(rules.Rule{ID: "valve", Key: "vehicle"}, "open", "close+10m!")
	if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 0 {
		t.Fatalf("replayed %d runs of a rule that is gone", n)
	}
	e.rn.mu.Lock()
	_, made := e.rn.m.rules["gone"]
	e.rn.mu.Unlock()
	if made {
		t.Error("a rule that is gone got state from its records")
	}
	if recs, _ := e.rn.store.List(); len(recs) != 0 {
		t.Errorf("%d records of a rule that is gone kept", len(recs))
	}
}

// assertNoEmptyTrigger fails t if a record keeps {} as a run's trigger:
// the placeholder of one that was lost.
func assertNoEmptyTrigger(t *testing.T, e *env) {
	t.Helper()
	recs, err := e.rn.store.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range recs {
		if string(p.Event) == "{}" {
			t.Fatalf("record of run %s at step %s keeps {} as its trigger", p.ID, p.Step)
		}
	}
}

// recordID is the id of the env's one pending record.
func recordID(t *testing.T, e *env) string {
	t.Helper()
	recs, err := e.rn.store.List()
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %v (%v); want one", recs, err)
	}
	return recs[0].ID
}

// runTracer keeps the run entries it is told, and no nodes.
type runTracer struct {
	mu   sync.Mutex
	runs []runlog.Run
}

func (r *runTracer) Run(x runlog.Run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, x)
}
func (r *runTracer) Node(runlog.Node)            {}
func (r *runTracer) LastSeq(string) (int, error) { return 0, nil }

// TestColdCancelByHand: a cold run cancelled by hand ends with a run
// entry naming its trigger, read back from its record.
func TestColdCancelByHand(t *testing.T) {
	e := coldEnv(t)
	tr := &runTracer{}
	e.configure(func(c *RunnerConfig) { c.Tracer = tr })
	s := e.rule(rules.Rule{ID: "valve", Key: "zone"}, "open", "close+10m!")
	e.fire(s, `{"topic":"flow.start","zone":"a","vehicle":"a"}`)
	e.restart()
	s = e.rule(rules.Rule{ID: "valve", Key: "zone"}, "open", "close+10m!")
	if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 1 || e.cold() != 1 {
		t.Fatalf("replayed %d runs, %d cold; want 1 cold", n, e.cold())
	}
	id := recordID(t, e)
	if err := e.rn.Control(id, ControlCancel, "ops"); err != nil {
		t.Fatal(err)
	}
	e.settle()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	last := tr.runs[len(tr.runs)-1]
	if last.ID != id || last.Outcome != runlog.Cancelled || last.Topic != "flow.start" || last.EventID == "" {
		t.Errorf("the run's last entry %+v; want it cancelled, naming its trigger", last)
	}
}

// sawContext is a wait's condition that keeps the contexts it was called
// with, and says yes.
type sawContext struct {
	mu  sync.Mutex
	got []string
}

func (c *sawContext) When(_ context.Context, call *Call) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, _ := abi.ParseView(call.Context)
	x, _ := v.Decode("states.dock.free")
	c.got = append(c.got, fmt.Sprint(x))
	return true, nil
}

// TestWaitReadsItsStates: a parked run whose wait matches on nothing is
// offered an event as it was parked — cold (its trigger in its record
// only, over a store that reads a record back), or with its trigger but
// not its view (one that cannot: Redis) —; its wait's condition still
// reads the states its trigger names (dock.{{zone}}), the trigger read
// back into a copy — not the ids rendered from no trigger at all.
func TestWaitReadsItsStates(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(t *testing.T) *env
		cold int
	}{
		{"cold", coldEnv, 1},
		{"parked without its view", func(t *testing.T) *env { return newEnv(t, 2, 100) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.env(t)
			e.configure(func(c *RunnerConfig) { c.States = fixedStates{"dock.a": `{"free":true}`} })
			saw := &sawContext{}
			rule := func() *Sequence {
				s := e.waitRule(true, saw)
				s.Rule.Steps[1].Wait.Match, s.Steps[1].Wait.Match = nil, nil
				s.States = []StateRead{{Name: "dock", Entity: mustText(t, "dock.{{zone}}")}}
				return s
			}
			e.fire(rule(), `{"topic":"flow.start","zone":"a"}`)
			e.restart()
			if n := e.rn.Replay([]*Sequence{rule()}, time.Hour); n != 1 {
				t.Fatalf("replayed %d runs; want 1", n)
			}
			if n := e.cold(); n != tc.cold {
				t.Fatalf("%d runs cold; want %d", n, tc.cold)
			}
			e.rn.Deliver("valve", e.event(`{"topic":"flow.sensor","zone":"z","rate":1}`), nil)
			e.settle()
			saw.mu.Lock()
			defer saw.mu.Unlock()
			if len(saw.got) != 1 || saw.got[0] != "true" {
				t.Errorf("the wait's condition read states.dock.free %q; want [true] (dock.a, from the trigger)", saw.got)
			}
		})
	}
}
