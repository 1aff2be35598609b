package state_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/state"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/redistest"
)

func view(t testing.TB, js string) []byte {
	t.Helper()
	v, err := abi.AppendJSONView(nil, []byte(js), false)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSame(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{`{"topic":"d","open":true}`, `{"topic":"d","open":true}`, true},
		{`{"topic":"d","open":true}`, `{ "open" : true, "topic":"d" }`, true},
		{`{"topic":"d","open":true,"id":"1","time":"2026-12-06T08:00:00Z"}`, `{"topic":"d","open":true,"id":"2"}`, true},
		{`{"topic":"d","open":true}`, `{"topic":"d","open":false}`, false},
		{`{"topic":"d","t":21}`, `{"topic":"d","t":21.5}`, false},
		{`{"topic":"d","t":21}`, `{"topic":"d","t":21.0}`, true},
		{`{"topic":"d","t":"a"}`, `{"topic":"d","t":"b"}`, false},
		{`{"topic":"d","x":[1,2]}`, `{"topic":"d","x":[1,2,3]}`, false},
		{`{"topic":"d","x":{"a":1}}`, `{"topic":"d","x":{"a":1},"y":null}`, false},
		{`{"topic":"d","identity":1}`, `{"topic":"d","identity":2}`, false}, // not "id"
		{`{"topic":"d","id":{"a":1}}`, `{"topic":"d","id":{"a":2}}`, true},
		{`{"topic":"d"}`, `{"topic":"e"}`, false},
	} {
		if got := state.Same(view(t, tc.a), view(t, tc.b)); got != tc.same {
			t.Errorf("Same(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
	if state.Same([]byte("garbage"), view(t, `{}`)) {
		t.Error("a view that does not parse was the same as another")
	}
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func event(t testing.TB, js string) *bus.Event {
	t.Helper()
	var d bus.Decoder
	e, err := d.Decode([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestObserve(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)}
	keys := []state.KeyRule{mustKey(t, "scooter.*=vehicle")}
	tb, err := state.New(state.Config{Keys: keys, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		event   string
		entity  string
		changed bool
		prev    string // the previous state's "v", "" for none
	}
	for i, s := range []step{
		{`{"topic":"door.front","v":"open"}`, "door.front", true, ""},
		{`{"topic":"door.front","v":"open","id":"x"}`, "door.front", false, "open"},
		{`{"topic":"door.front","v":"closed"}`, "door.front", true, "open"},
		{`{"topic":"scooter.telemetry","vehicle":"sc-1","v":"a"}`, "scooter.telemetry/sc-1", true, ""},
		{`{"topic":"scooter.telemetry","vehicle":"sc-2","v":"a"}`, "scooter.telemetry/sc-2", true, ""},
		{`{"topic":"scooter.telemetry","vehicle":7,"v":"a"}`, "scooter.telemetry/7", true, ""},
		{`{"topic":"scooter.telemetry","v":"b"}`, "scooter.telemetry", true, ""},
		{`{"topic":"scooter.telemetry","vehicle":"sc-1","v":"a"}`, "scooter.telemetry/sc-1", false, "a"},
	} {
		c.add(time.Second)
		ch := tb.Observe(event(t, s.event))
		if ch.Entity != s.entity || ch.Changed != s.changed {
			t.Errorf("%d: %s: entity %q changed %v, want %q %v", i, s.event, ch.Entity, ch.Changed, s.entity, s.changed)
		}
		prev := ""
		if ch.Prev != nil {
			v, _ := abi.ParseView(ch.Prev.View)
			x, _ := v.Find("v")
			b, _ := x.Str()
			prev = string(b)
		}
		if prev != s.prev {
			t.Errorf("%d: %s: prev %q, want %q", i, s.event, prev, s.prev)
		}
	}
	e, ok := tb.Get("door.front")
	start := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	if !ok || !e.Changed.Equal(start.Add(3*time.Second)) || !e.Seen.Equal(start.Add(3*time.Second)) {
		t.Errorf("door.front: %+v, want changed and seen at +3s", e)
	}
	tb.Observe(event(t, `{"id":"r1","topic":"t.x","time":"2026-12-06T08:00:00Z","v":1}`))
	if e, _ := tb.Get("t.x"); string(e.Raw) != `{"topic":"t.x","v":1}` || e.EventID != "r1" {
		t.Errorf("a report's id and time in its state: %s (event %s)", e.Raw, e.EventID)
	}
	if _, ok := tb.Get("door.back"); ok {
		t.Error("an entity never reported has a state")
	}
	list, total := tb.List("scooter.", 2)
	if total != 4 || len(list) != 2 || list[0].ID != "scooter.telemetry" || list[1].ID != "scooter.telemetry/7" {
		t.Errorf("List: %d of %d: %v", len(list), total, list)
	}
	st := tb.Stats()
	if st.Entities != 6 || st.Reports != 9 || st.Changes != 7 {
		t.Errorf("stats %+v: want 6 entities, 9 reports, 7 changes", st)
	}
}

func mustKey(t testing.TB, s string) state.KeyRule {
	t.Helper()
	k, err := state.ParseKeyRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestParseKeyRule(t *testing.T) {
	for _, s := range []string{"scooter.telemetry", "scooter.telemetry=", "scooter..x=id", "ruled.x=id", "dev.report=a..b"} {
		if _, err := state.ParseKeyRule(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

// The bounds: a new entity past the count, a state past the bytes, a
// key value too long to name one; each refused and counted, and what
// the table holds is unchanged.
func TestBounds(t *testing.T) {
	tb, err := state.New(state.Config{MaxEntities: 3, MaxBytes: 3*(state.EntryOverhead+200) + 100,
		Keys: []state.KeyRule{mustKey(t, "k.*=id2")}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10_000 {
		tb.Observe(event(t, fmt.Sprintf(`{"topic":"e.%d"}`, i)))
	}
	if st := tb.Stats(); st.Entities != 3 || st.Refused["full"] != 9_997 {
		t.Errorf("after 10,000 entities: %+v", st)
	}
	// An entity held may change within the bytes, not past them.
	if ch := tb.Observe(event(t, `{"topic":"e.0","v":1}`)); !ch.Changed {
		t.Errorf("a held entity's change: %+v", ch)
	}
	big := `{"topic":"e.1","pad":"` + strings.Repeat("x", 2000) + `"}`
	if ch := tb.Observe(event(t, big)); ch.Refused != state.RefusedBytes || ch.Entity != "e.1" || ch.Changed {
		t.Errorf("a state past the bytes: %+v", ch)
	}
	if e, _ := tb.Get("e.1"); len(e.Raw) > 100 {
		t.Error("the refused state replaced the one held")
	}
	// A day later the made-up entities are forgotten for a new one; an
	// entity reported meanwhile is kept.
	c := &clock{t: time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)}
	full, _ := state.New(state.Config{MaxEntities: 3, Now: c.Now})
	for i := range 3 {
		full.Observe(event(t, fmt.Sprintf(`{"topic":"made.up%d"}`, i)))
	}
	c.add(23 * time.Hour)
	full.Observe(event(t, `{"topic":"made.up0","v":2}`))
	if ch := full.Observe(event(t, `{"topic":"door.front"}`)); ch.Refused != state.RefusedFull {
		t.Errorf("within a day: %+v, want refused", ch)
	}
	c.add(2 * time.Hour)
	if ch := full.Observe(event(t, `{"topic":"door.front"}`)); !ch.Changed {
		t.Errorf("a day on: %+v, want kept", ch)
	}
	if _, ok := full.Get("made.up0"); !ok || full.Stats().Forgot != 2 {
		t.Errorf("kept made.up0 %v, stats %+v: want the two unreported forgotten", ok, full.Stats())
	}
	if ch := tb.Observe(event(t, `{"topic":"k.x","id2":"\u001b[2Jfake"}`)); ch.Refused != state.RefusedID {
		t.Errorf("a key value with a control character: %+v", ch)
	}
	long := `{"topic":"k.x","id2":"` + strings.Repeat("k", state.MaxIDBytes) + `"}`
	if ch := tb.Observe(event(t, long)); ch.Refused != state.RefusedID {
		t.Errorf("a key value too long: %+v", ch)
	}
}

func TestKeptInTheStore(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ruled.db")
		open := func() kept {
			b, err := store.OpenBolt(path, store.BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		keptInTheStore(t, open)
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		keptInTheStore(t, func() kept {
			r, err := store.OpenRedis(srv.URL(), store.RedisOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return r
		})
	})
}

// kept is a store the test closes.
type kept interface {
	state.Store
	Close() error
}

// keptInTheStore writes changes and a report that changed nothing, and
// reads them back in a new table on a store opened again.
func keptInTheStore(t *testing.T, open func() kept) {
	c := &clock{t: time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)}
	s := open()
	tb, err := state.New(state.Config{Store: s, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	tb.Observe(event(t, `{"topic":"door.front","open":true}`))
	tb.Observe(event(t, `{"topic":"light.hall","on":false}`))
	c.add(time.Minute)
	tb.Observe(event(t, `{"topic":"door.front","open":true}`)) // seen, not changed
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if st := tb.Stats(); st.Writes == 0 || st.Unwritten != 0 {
		t.Errorf("after Close: %+v", st)
	}
	s.Close()

	s = open()
	defer s.Close()
	again, err := state.New(state.Config{Store: s, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	e, ok := again.Get("door.front")
	start := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	if !ok || string(e.Raw) != `{"topic":"door.front","open":true}` || !e.Changed.Equal(start) || !e.Seen.Equal(start.Add(time.Minute)) {
		t.Errorf("door.front read back: %+v ok %v", e, ok)
	}
	if ch := again.Observe(event(t, `{"topic":"light.hall","on":false}`)); ch.Changed || ch.Prev == nil {
		t.Errorf("a report the same as the state read back: %+v", ch)
	}
	// Forget (ruled state rm) removes it, from the store with Sync; its
	// next report is a first one.
	if !again.Forget("light.hall") || again.Forget("light.hall") || again.Forget("light.none") {
		t.Error("Forget: want true once, then false, and false for none")
	}
	if err := again.Sync("light.hall"); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.HGetAll(keyspace.State); all["light.hall"] != "" || all["door.front"] == "" {
		t.Errorf("the store after Forget and Sync: %v", all)
	}
	if _, ok := again.Get("light.hall"); ok || again.Stats().Entities != 1 {
		t.Errorf("the table after Forget: %+v", again.Stats())
	}
	if ch := again.Observe(event(t, `{"topic":"light.hall","on":false}`)); !ch.Changed || ch.Prev != nil {
		t.Errorf("the next report of a forgotten entity: %+v; want a first one", ch)
	}
}

// failing is a store that refuses writes while down.
type failing struct {
	mu     sync.Mutex
	down   bool
	writes [][]string
}

func (f *failing) HGetAll(string) (map[string]string, error) { return nil, nil }
func (f *failing) HSetDel(key string, fields []string, _ [][]byte, _ []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errors.New("store away")
	}
	if key != keyspace.State {
		return fmt.Errorf("key %q", key)
	}
	f.writes = append(f.writes, fields)
	return nil
}

// A store that goes away: the changes stay in memory, counted as
// unwritten, and are written once it is back.
func TestStoreAway(t *testing.T) {
	f := &failing{down: true}
	tb, err := state.New(state.Config{Store: f})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	tb.Observe(event(t, `{"topic":"a"}`))
	deadline := time.Now().Add(10 * time.Second)
	for tb.Stats().WriteFailed == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := tb.Stats(); st.WriteFailed == 0 || st.Unwritten != 1 {
		t.Fatalf("store away: %+v", st)
	}
	tb.Observe(event(t, `{"topic":"b"}`))
	f.mu.Lock()
	f.down = false
	f.mu.Unlock()
	for tb.Stats().Unwritten != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.writes) != 1 || len(f.writes[0]) != 2 {
		t.Errorf("written once back: %v, want a and b in one write", f.writes)
	}
}

// TestFires is the change trigger's rule, report by report: a door's
// "open" through a table, each row the trigger, the report and whether
// it fires.
func TestFires(t *testing.T) {
	open := rules.Change{Field: "open"}
	opened := rules.Change{Field: "open", From: []any{false}, To: []any{true}}
	hot := rules.Change{Field: "t", To: []any{30.0, 31.0}}
	whole := rules.Change{}
	nested := rules.Change{Field: "pos"}
	thirty, eighteen, twentyfour := 30.0, 18.0, 24.0
	above := rules.Change{Field: "t", Above: &thirty}
	comfy := rules.Change{Field: "t", Above: &eighteen, Below: &twentyfour}
	for _, tc := range []struct {
		name    string
		trigger rules.Change
		reports []string
		fires   []bool
	}{
		{"a field: first report, repeat, change, other field", open,
			[]string{`{"open":false}`, `{"open":false,"id":"2"}`, `{"open":true}`, `{"open":true,"x":1}`},
			[]bool{true, false, true, false}},
		{"from and to", opened,
			[]string{`{"open":true}`, `{"open":false}`, `{"open":true}`, `{"open":false}`, `{"open":null}`, `{"open":true}`},
			[]bool{false, false, true, false, false, false}},
		{"to any of, numbers int or float", hot,
			[]string{`{"t":29}`, `{"t":30}`, `{"t":30.0}`, `{"t":31.0}`, `{"t":32}`},
			[]bool{false, true, false, true, false}},
		{"the whole state", whole,
			[]string{`{"a":1}`, `{"a":1}`, `{"a":1,"b":2}`, `{"b":2,"a":1}`},
			[]bool{true, false, true, false}},
		{"a field that goes and comes", open,
			[]string{`{"x":1}`, `{"open":true}`, `{"x":2}`, `{"x":3}`},
			[]bool{false, true, true, false}},
		{"a threshold: on the crossing, not on each report above it", above,
			[]string{`{"t":29}`, `{"t":31}`, `{"t":35}`, `{"t":30}`, `{"t":30.5}`, `{"t":"hot"}`, `{"t":40}`},
			[]bool{false, true, false, false, true, false, true}},
		{"a threshold: a first report inside fires", above,
			[]string{`{"t":31}`, `{"t":32}`},
			[]bool{true, false}},
		{"a range", comfy,
			[]string{`{"t":10}`, `{"t":20}`, `{"t":23.9}`, `{"t":24}`, `{"t":18.5}`},
			[]bool{false, true, false, false, true}},
		{"an object field changes below", nested,
			[]string{`{"pos":{"lat":1}}`, `{"pos":{"lat":1},"v":2}`, `{"pos":{"lat":2}}`},
			[]bool{true, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, _ := state.New(state.Config{})
			for i, r := range tc.reports {
				e := event(t, `{"topic":"door.front",`+r[1:])
				if got := state.Fires(tc.trigger, tb.Observe(e), e.View); got != tc.fires[i] {
					t.Errorf("report %d %s: fires %v, want %v", i, r, got, tc.fires[i])
				}
			}
		})
	}
}

// TestCrossed: a threshold with hysteresis (above 30, back by 1) over a
// sensor wobbling around the line fires once per excursion, and keeps
// its flag across a restart.
func TestCrossed(t *testing.T) {
	thirty := 30.0
	tr := rules.Change{Topic: "room.temp", Field: "t", Above: &thirty, Hysteresis: 1}
	path := filepath.Join(t.TempDir(), "ruled.db")
	st, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := state.New(state.Config{Store: st})
	report := func(tb *state.Table, v string) bool {
		e := event(t, `{"topic":"room.temp","t":`+v+`}`)
		return tb.Crossed("hot\x000", tr, tb.Observe(e), e.View)
	}
	var got []string
	for _, v := range []string{"29", "31", "30.5", "29.5", "31", "29", "30.5", "32"} {
		if report(tb, v) {
			got = append(got, v)
		}
	}
	if strings.Join(got, ",") != "31,30.5" {
		t.Errorf("fired at %v, want 31 and, after the dip to 29, 30.5", got)
	}
	tb.Close()
	st.Close()
	st, err = store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	again, _ := state.New(state.Config{Store: st})
	defer again.Close()
	if report(again, "31") {
		t.Error("fired again after a restart without the dip")
	}
	if report(again, "28") || !report(again, "31") {
		t.Error("after the dip it did not fire")
	}
}
