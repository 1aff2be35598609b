package seq

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/rules"
)

// waitRule is open, then a wait-for flow.sensor of the trigger's zone (up
// to 10m), then close, which journals what the wait left.
func (e *env) waitRule(cont bool, filter Condition) *Sequence {
	s := e.outputs(rules.Rule{ID: "valve", Key: "zone", Mode: rules.ModeParallel},
		`open|{"ok":true}|`, `flow||`, `close||steps.flow.event.rate steps.flow.timeout zone`)
	w := &rules.Wait{Pattern: "flow.sensor", Match: []string{"zone"}, Timeout: 10 * time.Minute, Continue: cont}
	s.Rule.Steps[1] = rules.Step{Name: "flow", Index: 1, Wait: w}
	s.Steps[1] = CompiledStep{Name: "flow", Do: "wait-for flow.sensor", Fingerprint: s.Rule.Steps[1].Fingerprint(),
		Wait: &Wait{Pattern: w.Pattern, Match: w.Match, Timeout: w.Timeout, Continue: cont, When: filter}}
	return s
}

// TestWaitFor: a run waits for an event of its own zone without a worker;
// another zone's event passes it over; the event that came is
// steps.flow.event to the next step; a run that hears nothing goes on
// after its timeout with steps.flow.timeout.
func TestWaitFor(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.waitRule(true, nil)
	e.fire(s, `{"topic":"flow.start","zone":"a"}`)
	e.fire(s, `{"topic":"flow.start","zone":"b"}`)
	if n := e.rn.Counts().Waiting; n != 2 {
		t.Fatalf("%d runs waiting; want 2", n)
	}
	recs, _ := e.rn.store.List()
	if len(recs) != 2 || recs[0].Step != "flow" {
		t.Fatalf("records %+v; want each run's wait", recs)
	}
	e.j.got = nil
	ev := e.event(`{"topic":"flow.sensor","zone":"b","rate":2.5}`)
	if n := e.rn.Deliver("valve", ev, nil); n != 1 {
		t.Fatalf("offered to %d runs; want zone b's", n)
	}
	e.settle()
	if got := e.j.String(); got != `close,steps.flow.event.rate=2.5,steps.flow.timeout=-,zone="b"` {
		t.Errorf("journal %q", got)
	}
	if n := e.rn.Deliver("valve", ev, nil); n != 0 {
		t.Errorf("a run that took its event was offered another")
	}
	e.j.got = nil
	e.advance(10 * time.Minute)
	if got := e.j.String(); got != `close,steps.flow.event.rate=-,steps.flow.timeout=true,zone="a"` {
		t.Errorf("journal %q after the timeout", got)
	}
	e.settle()
	if e.h.Len(PendingHash) != 0 || e.rn.Counts().Active != 0 || e.rn.Counts().Waiting != 0 {
		t.Errorf("records %d, active %d, waiting %d; want none", e.h.Len(PendingHash), e.rn.Counts().Active, e.rn.Counts().Waiting)
	}
	if st := e.rn.RuleStats("valve"); st.Completed != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestWaitForStop: on-timeout: stop ends the run there, completed; a
// filter that says no passes an event over.
func TestWaitForStop(t *testing.T) {
	e := newEnv(t, 2, 100)
	f := &cond{field: "steady"}
	s := e.waitRule(false, f)
	e.fire(s, `{"topic":"flow.start","zone":"a"}`)
	e.j.got = nil
	e.rn.Deliver("valve", e.event(`{"topic":"flow.sensor","zone":"a","steady":false}`), nil)
	e.settle()
	if e.rn.Counts().Waiting != 1 || f.calls != 1 {
		t.Fatalf("waiting %d after an event its when refused (%d calls)", e.rn.Counts().Waiting, f.calls)
	}
	e.advance(10 * time.Minute)
	e.settle()
	if got := e.j.String(); got != "" {
		t.Errorf("journal %q; want nothing after a wait that stops", got)
	}
	if st := e.rn.RuleStats("valve"); st.Completed != 1 || e.rn.Counts().Active != 0 {
		t.Errorf("stats %+v, active %d", st, e.rn.Counts().Active)
	}
}

// TestWaitForAcrossRestart: a restart while waiting keeps waiting out what
// is left; an event delivered after it is taken; a record written when an
// event came goes on at once after a restart, without waiting again.
func TestWaitForAcrossRestart(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.waitRule(true, nil)
	e.fire(s, `{"topic":"flow.start","zone":"a"}`)
	e.fire(s, `{"topic":"flow.start","zone":"b"}`)
	e.advance(3 * time.Minute)
	e.restart()
	e.j.got = nil
	if n := e.rn.Replay([]*Sequence{e.waitRule(true, nil)}, time.Hour); n != 2 {
		t.Fatalf("replayed %d", n)
	}
	if e.rn.Counts().Waiting != 2 {
		t.Fatalf("%d runs waiting after the restart; want 2", e.rn.Counts().Waiting)
	}
	// zone a's event comes; the process stops before close runs (its
	// worker held), and the record says the wait is over.
	e.rn.Deliver("valve", e.event(`{"topic":"flow.sensor","zone":"a","rate":1}`), nil)
	e.settle()
	if got := e.j.String(); got != `close,steps.flow.event.rate=1,steps.flow.timeout=-,zone="a"` {
		t.Errorf("journal %q", got)
	}
	e.j.got = nil
	e.advance(6 * time.Minute) // zone b: 9 minutes in
	if got := e.j.String(); got != "" {
		t.Errorf("journal %q before the timeout", got)
	}
	e.advance(time.Minute)
	if got := e.j.String(); got != `close,steps.flow.event.rate=-,steps.flow.timeout=true,zone="b"` {
		t.Errorf("journal %q at the timeout (10 minutes from the start, across the restart)", got)
	}
}

// TestWaitTakenThenRestart: the event a run took is in its record before
// the run goes on, so a restart right then does not wait for it again.
func TestWaitTakenThenRestart(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.waitRule(true, nil)
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	entered := make(chan struct{}, 1)
	s.Steps[2].Action = &act{j: e.j, name: "close", gate: gate, entered: entered}
	e.fire(s, `{"topic":"flow.start","zone":"a"}`)
	e.rn.Deliver("valve", e.event(`{"topic":"flow.sensor","zone":"a","rate":1}`), nil)
	select { // close is on a worker: the run went on past its wait
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the run never went on to close")
	}
	recs, _ := e.rn.store.List()
	if len(recs) != 1 || string(recs[0].Steps) != `{"open":{"ok":true},"flow":{"event":{"topic":"flow.sensor","zone":"a","rate":1}}}` {
		t.Fatalf("records %+v; want the wait's with the event", recs)
	}
	// The process dies with close on a worker: the record replays.
	rec := recs[0]
	open()
	e.settle()
	e.restart()
	e.j.got = nil
	if err := e.rn.store.Put(rec); err != nil {
		t.Fatal(err)
	}
	if n := e.rn.Replay([]*Sequence{e.waitRule(true, nil)}, time.Hour); n != 1 {
		t.Fatalf("replayed %d", n)
	}
	e.advance(time.Millisecond) // its timer is due at once
	if got := e.j.String(); got != `close,steps.flow.event.rate=1,steps.flow.timeout=-,zone="a"` {
		t.Errorf("journal %q; want close at once with the event", got)
	}
	if e.rn.Counts().Waiting != 0 {
		t.Error("a run whose record has its event waits again")
	}
}

// TestWaitUntrustedClock: replayed before the clock is trusted, a run
// waiting for an event still hears it (only its timeout needs the clock),
// and once the clock is trusted it is not judged again.
func TestWaitUntrustedClock(t *testing.T) {
	e := newEnv(t, 2, 100)
	trusted := false
	e.configure(func(c *RunnerConfig) {
		c.ClockCheck = func(time.Time, time.Time) bool { return trusted }
		c.ClockPoll = time.Second
	})
	e.fire(e.waitRule(true, nil), `{"topic":"flow.start","zone":"a"}`)
	e.restart()
	e.j.got = nil
	if n := e.rn.Replay([]*Sequence{e.waitRule(true, nil)}, time.Hour); n != 1 {
		t.Fatalf("replayed %d", n)
	}
	if e.rn.Counts().Waiting != 1 {
		t.Fatal("a run replayed under an untrusted clock does not wait for its event")
	}
	e.rn.Deliver("valve", e.event(`{"topic":"flow.sensor","zone":"a","rate":3}`), nil)
	e.settle()
	trusted = true
	e.advance(20 * time.Minute)
	if got := e.j.String(); got != `close,steps.flow.event.rate=3,steps.flow.timeout=-,zone="a"` {
		t.Errorf("journal %q; want close once, with the event", got)
	}
}

// TestWaitPaused: a waiting run of a paused rule takes its event (the
// wait is over, in its record) but goes on only when the rule runs again.
func TestWaitPaused(t *testing.T) {
	e := newEnv(t, 2, 100)
	g := &fakeGate{admit: true}
	e.configure(func(c *RunnerConfig) { c.Gate = g })
	s := e.waitRule(true, nil)
	e.fire(s, `{"topic":"flow.start","zone":"a"}`)
	e.j.got = nil
	g.set(false, true, "")
	e.rn.Deliver("valve", e.event(`{"topic":"flow.sensor","zone":"a","rate":3}`), nil)
	e.settle()
	if got := e.j.String(); got != "" || e.rn.Counts().Waiting != 0 {
		t.Fatalf("journal %q, waiting %d; want the event taken and the run held", got, e.rn.Counts().Waiting)
	}
	g.set(true, false, "")
	e.rn.ReleaseHeld("valve", time.Hour)
	e.settle()
	if got := e.j.String(); got != `close,steps.flow.event.rate=3,steps.flow.timeout=-,zone="a"` {
		t.Errorf("journal %q after the release", got)
	}
}

// replier is an Action that, like a device answering a command at once,
// has an event delivered before its step returns.
type replier struct {
	rn   func() *Runner
	e    *bus.Event
	rule string
}

func (a *replier) Act(context.Context, *Call) ([]byte, error) {
	a.rn().Deliver(a.rule, a.e, nil)
	return nil, nil
}

// TestWaitEventBeforeWait: the answer to a command can come before the
// run reaches its wait (publish, then wait-for the ack): a wait that
// starts takes a matching event that came since its run started; one
// from before the run started, or another key's, it does not.
func TestWaitEventBeforeWait(t *testing.T) {
	e := newEnv(t, 2, 100)
	old := e.event(`{"topic":"flow.sensor","zone":"a","rate":9}`)
	s := e.waitRule(true, nil)
	e.rn.Deliver("valve", old, nil) // before any run: not for it
	s.Steps[0].Action = &replier{rn: func() *Runner { return e.rn }, rule: "valve",
		e: e.event(`{"topic":"flow.sensor","zone":"a","rate":4}`)}
	e.fire(s, `{"topic":"flow.start","zone":"a"}`)
	e.settle()
	if got := e.j.String(); got != `close,steps.flow.event.rate=4,steps.flow.timeout=-,zone="a"` {
		t.Errorf("journal %q; want the answer that came before the wait", got)
	}
	e.j.got = nil
	s.Steps[0].Action = &replier{rn: func() *Runner { return e.rn }, rule: "valve",
		e: e.event(`{"topic":"flow.sensor","zone":"b","rate":4}`)}
	e.fire(s, `{"topic":"flow.start","zone":"c"}`)
	e.settle()
	if e.rn.Counts().Waiting != 1 || e.j.String() != "" {
		t.Errorf("waiting %d, journal %q; want zone c still waiting (b's answer is not its)", e.rn.Counts().Waiting, e.j.String())
	}
}

// TestWaitKeyOf: the index key of waiting runs compares values as sameAt
// does — 0 and -0 alike, 1 and 1.0 alike, "1" and 1 apart — and a value
// that cannot compare equal (missing, an object) makes no key.
func TestWaitKeyOf(t *testing.T) {
	var dec bus.Decoder
	key := func(js string, paths ...string) (string, bool) {
		e, err := dec.Decode([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		return waitKeyOf(e, paths)
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`{"topic":"t","v":0}`, `{"topic":"t","v":-0.0}`, true},
		{`{"topic":"t","v":1}`, `{"topic":"t","v":1.0}`, true},
		{`{"topic":"t","v":"1"}`, `{"topic":"t","v":1}`, false},
		{`{"topic":"t","v":true}`, `{"topic":"t","v":"true"}`, false},
		{`{"topic":"t","v":null}`, `{"topic":"t","v":null}`, true},
	} {
		ka, oka := key(tc.a, "v")
		kb, okb := key(tc.b, "v")
		if !oka || !okb || (ka == kb) != tc.same {
			t.Errorf("%s vs %s: keys %q %q; want same %v", tc.a, tc.b, ka, kb, tc.same)
		}
		ea, _ := dec.Decode([]byte(tc.a))
		eb, _ := dec.Decode([]byte(tc.b))
		if sameAt(ea, eb, []string{"v"}) != tc.same {
			t.Errorf("%s vs %s: sameAt disagrees with the case", tc.a, tc.b)
		}
	}
	if _, ok := key(`{"topic":"t","v":{"x":1}}`, "v"); ok {
		t.Error("an object made a key")
	}
	if _, ok := key(`{"topic":"t"}`, "v"); ok {
		t.Error("a missing value made a key")
	}
}
