package window

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeShared is the append script's compare-and-set in memory: the
// store a Shared reads, and apply, which writes a plan's ops as the
// script does (all at their versions, or none).
type fakeShared struct {
	mu   sync.Mutex
	ver  int64
	vals map[string]string
}

func (f *fakeShared) WindowValues(_ context.Context, fields []string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(fields))
	for i, k := range fields {
		out[i] = f.vals[k]
	}
	return out, nil
}

func (f *fakeShared) WindowKeys(_ context.Context, name string, _ int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.vals {
		if rest, ok := strings.CutPrefix(k, "s\x00"+name+"\x00"); ok {
			key, _, _ := strings.Cut(rest, "\x00")
			out = append(out, key)
		}
	}
	return out, nil
}

// apply makes p's ops; it reports whether it had to retry.
func (f *fakeShared) apply(p *Plan) (retried bool) {
	for {
		f.mu.Lock()
		bad := map[int]string{}
		for i, op := range p.Ops() {
			cur := f.vals[op.Field()]
			v := int64(0)
			if n, _, ok := strings.Cut(cur, " "); ok {
				v, _ = strconv.ParseInt(n, 10, 64)
			}
			if v != op.Expect {
				bad[i] = cur
			}
		}
		if len(bad) == 0 {
			var res []string
			for _, op := range p.Ops() {
				f.ver++
				f.vals[op.Field()] = fmt.Sprintf("%d %s", f.ver, op.Value)
				res = append(res, strconv.FormatInt(f.ver, 10))
			}
			f.mu.Unlock()
			p.Applied(res)
			return retried
		}
		f.mu.Unlock()
		retried = true
		for i, v := range bad {
			p.Conflict(i, v)
		}
		p.Rebuild()
	}
}

// TestSharedMembersAgree: two members counting one key, each from its
// own cache, conflict and work their writes out again from the value
// the other wrote: the series holds every event once, and both read it.
func TestSharedMembersAgree(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeShared{vals: map[string]string{}}
	specs := map[string]Spec{
		"avg":  {Kind: Sliding, Last: 15 * time.Minute, Numeric: true},
		"day":  {Kind: Tumbling, Calendar: Day, Zone: time.UTC, Numeric: true},
		"last": {Kind: Count, Events: 3, Numeric: true},
	}
	var members []*Shared
	for range 2 {
		s := NewShared(SharedConfig{Store: f, Now: func() time.Time { return now }})
		if err := s.Define(specs); err != nil {
			t.Fatal(err)
		}
		members = append(members, s)
	}
	retries := 0
	for i := 1; i <= 10; i++ {
		s := members[i%2]
		var obs []Obs
		for name := range specs {
			obs = append(obs, Obs{Window: name, Key: "k", V: float64(i), At: now.Add(-time.Duration(i) * time.Second)})
		}
		if f.apply(s.Plan(obs)) {
			retries++
		}
	}
	if retries == 0 {
		t.Fatal("the members never conflicted: the test tests nothing")
	}
	for i, s := range members {
		for name, want := range map[string]string{"avg": `"count":10,"sum":55`, "day": `"count":10,"sum":55`, "last": `"count":3,"sum":27`} {
			b, ok := s.Read(name, "k")
			if !ok || !strings.Contains(string(b), want) {
				t.Errorf("member %d reads %s: %s; want %s", i, name, b, want)
			}
		}
	}
	st := members[0].Stats(nil)["avg"].Counted + members[1].Stats(nil)["avg"].Counted
	if st != 10 {
		t.Errorf("counted by both: %d; want 10", st)
	}
}

// TestSharedRefuses: what the member's clock refuses is counted once,
// however many times the plan is worked out again; a value written under
// another spec is none (the window starts afresh).
func TestSharedRefuses(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeShared{vals: map[string]string{}}
	s := NewShared(SharedConfig{Store: f, Now: func() time.Time { return now }})
	s.Define(map[string]Spec{"w": {Kind: Sliding, Last: time.Minute, Numeric: true}, "d": {Kind: Tumbling, Every: time.Hour}})
	p := s.Plan([]Obs{
		{Window: "w", Key: "a", V: 1e101, At: now},                   // invalid
		{Window: "w", Key: "a", V: 1, At: now.Add(2 * time.Minute)},  // future
		{Window: "w", Key: "a", V: 1, At: now.Add(-time.Hour)},       // late
		{Window: "d", Key: "a", At: now.Add(-time.Hour)},             // late: a closed period
		{Window: "w", Key: "a", V: 2, At: now.Add(30 * time.Second)}, // ahead within the skew: now
		{Window: "nope", Key: "a", At: now},                          // undefined
	})
	f.vals[SeriesField("w", "a", false, 0)] = "7 other-spec\nxx" // a conflict, under another spec
	if !f.apply(p) {
		t.Fatal("no conflict")
	}
	w, d := s.Stats(nil)["w"], s.Stats(nil)["d"]
	if w.Invalid != 1 || w.Future != 1 || w.Late != 1 || d.Late != 1 || w.Counted != 1 {
		t.Fatalf("stats: w %+v d %+v", w, d)
	}
	b, _ := s.Read("w", "a")
	var v struct{ Count, Sum int }
	if json.Unmarshal(b, &v); v.Count != 1 || v.Sum != 2 {
		t.Fatalf("read: %s", b)
	}
}

// TestSharedPeriods: the close of a key without events, as the poll
// makes it from a period's head and tail around the key, is the close
// event a key's series would make with none.
func TestSharedPeriods(t *testing.T) {
	now := time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	s := NewShared(SharedConfig{Now: func() time.Time { return now }})
	s.Define(map[string]Spec{"opens": {Kind: Tumbling, Calendar: Day, Zone: berlin}})
	ps := s.Periods()
	if len(ps) != 1 {
		t.Fatalf("periods: %+v", ps)
	}
	p := ps[0]
	key, _ := json.Marshal(`door "front"`)
	got := string(p.ZeroHead) + string(key) + string(p.ZeroTail)
	start, end := s.wins["opens"].spec.Period(now)
	want := Closed{Window: "opens", Key: `door "front"`, Value: Value{Start: start, End: end}}.AppendEvent(nil)
	if got != string(want) {
		t.Fatalf("zero close:\n got %s\nwant %s", got, want)
	}
	if p.Start != start.UnixNano() || p.End != end.UnixMilli() || end.Sub(start) != 23*time.Hour {
		t.Fatalf("period %+v; want %v to %v (23 hours: the spring change)", p, start, end)
	}
}
