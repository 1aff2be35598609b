package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/ruleset"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/state"
	"github.com/ruled-dev/ruled/host/window"
)

// windowsEngine is an engine of the windows (and rules) in src alone, on
// a virtual clock: enough for ObserveWindows and Window.
func windowsEngine(t *testing.T, src string) (*Engine, *window.Table, *sched.Virtual) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	l := ruleset.New(ruleset.Config{Dir: dir, Compile: func(r *rules.Rule) (*seq.Sequence, error) { return &seq.Sequence{Rule: r}, nil },
		Def: func(r *rules.Rule) string { return r.ID }})
	l.Load()
	if p := l.Current().Problems(); len(p) > 0 {
		t.Logf("problems: %v", p)
	}
	clk := sched.NewVirtual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tb, err := window.New(window.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{cfg: Config{Windows: tb}, clock: clk, rules: l, log: hclog.NewNullLogger()}
	e.syncWindows()
	tb.Start()
	return e, tb, clk
}

func ev(t *testing.T, topic, raw string) *bus.Event {
	e, err := bus.Rebuild("id", topic, time.Now(), []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func count(t *testing.T, tb *window.Table, name, key string) float64 {
	b, ok := tb.Read(name, key)
	if !ok {
		t.Fatalf("no window %s", name)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	c, _ := m["count"].(float64)
	return c
}

// TestWindowCountsAnEventOnce: a window under a literal and a wildcard
// pattern, another window on the literal between them (the index answers
// [w1, w2, w1]): each counts the event once.
func TestWindowCountsAnEventOnce(t *testing.T) {
	e, tb, _ := windowsEngine(t, `windows:
  - {name: w1, on: [sensor.temp, "sensor.*"], last: 1h}
  - {name: w2, on: sensor.temp, last: 1h}
`)
	e.ObserveWindows(ev(t, "sensor.temp", `{"v":1}`), state.Change{})
	if c := count(t, tb, "w1", ""); c != 1 {
		t.Fatalf("w1 counted one event %v times", c)
	}
}

// TestWindowTimeMillis: an event's time in Unix milliseconds is its time,
// not "now": two hours old, it is late for this hour's window.
func TestWindowTimeMillis(t *testing.T) {
	e, tb, clk := windowsEngine(t, `windows:
  - {name: w, on: s, time: ts, every: 1h}
`)
	// event 2 hours old, in ms: should be Late, is counted as now.
	ts := clk.Now().Add(-2 * time.Hour).UnixMilli()
	e.ObserveWindows(ev(t, "s", `{"ts":`+itoa(ts)+`}`), state.Change{})
	if c := count(t, tb, "w", ""); c != 0 {
		t.Fatalf("an event 2h old (ms timestamp) counted in the current hour: count %v", c)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestOneBadWindowDropsNoOther: a window the table refuses (a spec past
// its bounds, which the parser holds too) leaves the others defined.
func TestOneBadWindowDropsNoOther(t *testing.T) {
	clk := sched.NewVirtual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tb, _ := window.New(window.Config{Clock: clk})
	err := tb.Define(map[string]window.Spec{"good": SpecOf(&rules.Window{Name: "good", Last: time.Hour}),
		"fast": SpecOf(&rules.Window{Name: "fast", Last: 50 * time.Millisecond})})
	if err == nil || !tb.Has("good") || tb.Has("fast") {
		t.Fatalf("defined good %v, fast %v; error %v", tb.Has("good"), tb.Has("fast"), err)
	}
}

// TestCloseTriggerReadsOwnWindow: a rule triggered by a window's close
// reads that window by the trigger: the close event's key, not the
// window's key field (which the event has not).
func TestCloseTriggerReadsOwnWindow(t *testing.T) {
	e, tb, clk := windowsEngine(t, `windows:
  - {name: opens, on: door, key: door, every: 1h}
`)
	e.ObserveWindows(ev(t, "door", `{"door":"front"}`), state.Change{})
	closeEv := ev(t, WindowTopic, `{"topic":"ruled.window","window":"opens","key":"front","count":1}`)
	v, _ := abi.ParseView(closeEv.View)
	b, ok := e.Window("opens", "", true, &v)
	if !ok || !strings.Contains(string(b), `"count":1`) {
		t.Fatalf("a close-triggered rule reading {window: opens} gets %s %v", b, ok)
	}
	_, _ = tb, clk
}

// TestWindowInvalidEvents: an event a window hears and cannot count — no
// key, no number in its field, a time it cannot read, a number past
// ±1e100 — is counted invalid, not silently dropped.
func TestWindowInvalidEvents(t *testing.T) {
	e, tb, _ := windowsEngine(t, `windows:
  - {name: w, on: s, key: dev, field: v, time: ts, last: 1h}
`)
	for _, raw := range []string{
		`{"v":1}`,                        // no key
		`{"dev":"","v":1}`,               // an empty key
		`{"dev":"a","v":"5"}`,            // a string
		`{"dev":"a"}`,                    // no number
		`{"dev":"a","v":1,"ts":0}`,       // a clock never set
		`{"dev":"a","v":1,"ts":-5}`,      // before the epoch
		`{"dev":"a","v":1,"ts":"08:00"}`, // not RFC 3339
		`{"dev":"a","v":1e300}`,          // past ±1e100
		`{"dev":"a","v":2,"ts":1.7e300}`, // a time past any unit
	} {
		e.ObserveWindows(ev(t, "s", raw), state.Change{})
	}
	e.ObserveWindows(ev(t, "s", `{"dev":"a","v":1}`), state.Change{}) // counted
	if st := tb.Stats()["w"]; st.Invalid != 9 || st.Counted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestWindowAggregatesAgree: the aggregates lint holds a rule's reads to
// (rules.WindowAggregates) are the ones a window's value has
// (window.Aggregates, the keys of Value.AppendJSON): the layers keep the
// two packages apart, so the list is spelled twice.
func TestWindowAggregatesAgree(t *testing.T) {
	if !slices.Equal(rules.WindowAggregates, window.Aggregates) {
		t.Fatalf("rules.WindowAggregates %v; window.Aggregates %v", rules.WindowAggregates, window.Aggregates)
	}
	var v map[string]any
	b := window.Value{Agg: window.Agg{Count: 1}, Numeric: true}.AppendJSON(nil)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, a := range window.Aggregates {
		if _, ok := v[a]; !ok {
			t.Errorf("a window's value has no %q: %s", a, b)
		}
	}
	if len(v) != len(window.Aggregates) {
		t.Errorf("a window's value has %d keys, the list %d: %s", len(v), len(window.Aggregates), b)
	}
}
