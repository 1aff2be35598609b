package seq

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq/core"
)

// tally is an Action that counts its calls by idempotency key and
// attempt (a step of a pass of a run, tried for the nth time), and fails
// the first attempt of each when failFirst says so.
type tally struct {
	mu        sync.Mutex
	calls     map[string]int
	failFirst bool
}

func (a *tally) Act(_ context.Context, c *Call) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls[c.Info.Key+"#"+strconv.Itoa(int(c.Info.Attempt))]++
	if a.failFirst && c.Info.Attempt <= 1 {
		return nil, fmt.Errorf("%s fails its first attempt", c.Info.Step)
	}
	return nil, nil
}

// take returns the calls counted since the last take.
func (a *tally) take() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.calls
	a.calls = map[string]int{}
	return m
}

// FuzzRunner drives a runner with random triggers, clock moves, cancels,
// operators' controls and kill-free restarts (the store kept, the records
// replayed), on one rule whose shape the input picks — each mode, a max, a
// key or none, a durable after, a failing step with or without a retry,
// finally steps, cancel-on, a cooldown, two passes — and checks, after
// each move once the runner is quiet, issue 40's invariants:
//
//   - a key never has more live runs than its mode allows (max in
//     parallel mode; one otherwise; in queue mode max live, closing and
//     queued together);
//   - a step of a pass of a run runs at most once per attempt in one
//     process (a restart may run it again: at least once);
//   - the store holds a record for every run whose standing says so, and
//     a record only for a run that is live;
//   - every trigger is accounted for: started, suppressed, refused,
//     queued, or thrown away with its queue by a cancel;
//
// and at the end, a day later, that every run has ended and left no
// record.
func FuzzRunner(f *testing.F) {
	f.Add([]byte{0, 1, 0x0f, 0, 0, 2, 0, 7, 13, 4, 2, 5, 2, 3})
	f.Add([]byte{2, 2, 0x3f, 1, 0, 0, 1, 6, 12, 3, 9, 4, 2, 2, 5, 11})
	f.Add([]byte{1, 0, 0x52, 1, 0, 6, 0, 2, 10, 4, 17, 2})
	f.Add([]byte{3, 2, 0xff, 1, 1, 7, 6, 0, 2, 8, 4, 14, 20, 2, 2, 2})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 || len(in) > 64 {
			return
		}
		fz := newFuzzStory(t, in[0], in[1], in[2], in[3])
		for i, op := range in[4:] {
			fz.do(op)
			fz.check(fmt.Sprintf("op %d (%d)", i, op))
		}
		fz.until(24 * time.Hour)
		fz.check("a day later")
		if n := fz.rn.Counts().Active; n != 0 {
			t.Fatalf("a day later: %d runs still active: %s", n, fz.runs())
		}
		if n := fz.h.Len(PendingHash); n != 0 {
			t.Fatalf("a day later: %d records left", n)
		}
	})
}

// fuzzStory is FuzzRunner's world: one rule on an env, what it has seen.
type fuzzStory struct {
	*env
	t      *testing.T
	rule   rules.Rule
	steps  []string
	fin    bool
	retry  bool
	failC  bool // c fails its first attempt
	seq    *Sequence
	acts   []*tally
	ran    map[string]int // calls this process made, by key#attempt
	fires  int            // triggers fired in this process
	thrown int            // queued triggers a cancel threw away, in this process
	replay int            // runs the last replay resumed
}

var fuzzModes = [...]rules.Mode{rules.ModeSingle, rules.ModeRestart, rules.ModeQueue, rules.ModeParallel}

func newFuzzStory(t *testing.T, mode, max, flags, fails byte) *fuzzStory {
	fz := &fuzzStory{env: newEnv(t, 1, 1000), t: t, ran: map[string]int{}}
	fz.rule = rules.Rule{ID: "r", Mode: fuzzModes[mode%4], Max: int(max%3) + 1}
	if flags&1 != 0 {
		fz.rule.Key = "vehicle"
	}
	b := "b+1m"
	if flags&2 != 0 {
		b += "!"
	}
	fz.steps = []string{"a", b, "c"}
	fz.fin = flags&4 != 0
	fz.retry = flags&8 != 0
	if flags&16 != 0 {
		fz.rule.CancelOn = []rules.Cancel{{Pattern: "stop", Match: []string{"vehicle"}}}
	}
	if flags&32 != 0 {
		fz.rule.Cooldown = 2 * time.Minute
	}
	if flags&64 != 0 {
		fz.rule.Repeat = rules.Repeat{Passes: 2, Interval: time.Minute}
	}
	fz.failC = fails&1 != 0
	fz.build()
	return fz
}

// build compiles the story's rule again, its actions tallies: what a
// new process loads.
func (fz *fuzzStory) build() {
	s := fz.env.rule(fz.rule, fz.steps...)
	if fz.fin {
		fz.withFinally(s, "z")
	}
	fz.acts = nil
	for i := range s.Steps {
		a := &tally{calls: map[string]int{}, failFirst: fz.failC && s.Steps[i].Name == "c"}
		s.Steps[i].Action = a
		if fz.retry {
			s.Steps[i].Retry = rules.Retry{Attempts: 2, Backoff: 30 * time.Second, MaxBackoff: time.Minute, Factor: 2}
		}
		fz.acts = append(fz.acts, a)
	}
	for i := range s.Finally {
		a := &tally{calls: map[string]int{}}
		s.Finally[i].Action = a
		fz.acts = append(fz.acts, a)
	}
	fz.seq = s
}

func (fz *fuzzStory) event(topic string, k int) string {
	return `{"topic":"` + topic + `","vehicle":"k` + strconv.Itoa(k) + `"}`
}

func (fz *fuzzStory) advance(d time.Duration) {
	fz.clk.Advance(d)
	fz.settle()
}

// until moves the clock on by d a timer at a time, settling after each:
// a step a timer submits parks its next timer from its worker, after the
// clock's move has returned.
func (fz *fuzzStory) until(d time.Duration) {
	end := fz.clk.Now().Add(d)
	for {
		fz.settle()
		next, ok := fz.clk.Next()
		if !ok || fz.clk.Now().Add(next).After(end) {
			break
		}
		fz.clk.Advance(next)
	}
	fz.clk.Advance(end.Sub(fz.clk.Now()))
	fz.settle()
}

func (fz *fuzzStory) do(op byte) {
	arg := int(op / 6)
	switch op % 6 {
	case 0, 1:
		fz.fires++
		fz.rn.Fire(Trigger{Seq: fz.seq, Event: fz.env.event(fz.event("t", arg%3))})
		fz.settle()
	case 2:
		fz.advance([...]time.Duration{0, 20 * time.Second, time.Minute, 3 * time.Minute, 10 * time.Minute}[arg%5])
	case 3:
		if len(fz.rule.CancelOn) > 0 {
			fz.thrown += fz.queued("k" + strconv.Itoa(arg%3))
		}
		fz.rn.CancelMatching(fz.env.event(fz.event("stop", arg%3)))
		fz.settle()
	case 4:
		fz.settle()
		fz.restart()
		fz.ran, fz.fires, fz.thrown = map[string]int{}, 0, 0
		fz.build()
		fz.replay = fz.rn.Replay([]*Sequence{fz.seq}, time.Hour)
		fz.settle()
	case 5:
		ids := fz.liveIDs()
		if len(ids) == 0 {
			return
		}
		id := ids[arg%len(ids)]
		switch arg % 3 {
		case 0:
			fz.rn.Control(id, ControlCancel, "fuzz")
		case 1:
			fz.rn.Control(id, ControlNow, "fuzz")
		case 2:
			fz.rn.Control(id, ControlDrop, "fuzz")
		}
		fz.settle()
	}
}

// queued is how many queued triggers carry vehicle v.
func (fz *fuzzStory) queued(v string) int {
	fz.rn.mu.Lock()
	defer fz.rn.mu.Unlock()
	n := 0
	if rs := fz.rn.m.rules[fz.rule.ID]; rs != nil {
		for _, ks := range rs.keys {
			for _, tr := range ks.few().queue {
				if got, _ := fieldOf(tr.event, "vehicle"); got == v {
					n++
				}
			}
		}
	}
	return n
}

// runs says what the runner holds of each run, for a failure.
func (fz *fuzzStory) runs() string {
	fz.rn.mu.Lock()
	defer fz.rn.mu.Unlock()
	var out []string
	for id, r := range fz.rn.m.runs {
		out = append(out, fmt.Sprintf("%s %+v timer=%v hand=%v gated=%d", id, r.Run, r.timer != nil, r.Hand, len(fz.rn.m.gated[r.seq.Rule.ID])))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func (fz *fuzzStory) liveIDs() []string {
	fz.rn.mu.Lock()
	defer fz.rn.mu.Unlock()
	var ids []string
	for id, r := range fz.rn.m.runs {
		if !r.Over() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func (fz *fuzzStory) check(at string) {
	t := fz.t
	t.Helper()
	for _, a := range fz.acts {
		for k, n := range a.take() {
			if fz.ran[k] += n; fz.ran[k] > 1 {
				t.Fatalf("%s: %s ran %d times in one process", at, k, fz.ran[k])
			}
		}
	}
	recs, err := fz.rn.store.List()
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, p := range recs {
		stored[p.ID] = true
	}
	fz.rn.mu.Lock()
	defer fz.rn.mu.Unlock()
	queued := 0
	if rs := fz.rn.m.rules[fz.rule.ID]; rs != nil {
		for k, ks := range rs.keys {
			live, all := len(ks.live), len(ks.live)+len(ks.few().closing)+len(ks.few().queue)
			queued += len(ks.few().queue)
			switch {
			case fz.rule.Mode == rules.ModeParallel && live > fz.rule.Max:
				t.Fatalf("%s: key %q has %d live runs, max %d", at, k, live, fz.rule.Max)
			case fz.rule.Mode != rules.ModeParallel && live > 1:
				t.Fatalf("%s: key %q has %d live runs in mode %v", at, k, live, fz.rule.Mode)
			case fz.rule.Mode == rules.ModeQueue && all > fz.rule.Max && len(ks.few().queue) > 0:
				t.Fatalf("%s: key %q holds %d live, closing and queued, max %d", at, k, all, fz.rule.Max)
			}
		}
	}
	for id, r := range fz.rn.m.runs {
		if r.Record == core.Written && !stored[id] {
			t.Fatalf("%s: run %s (%+v) says its record is written; the store has none", at, id, r.Run)
		}
		delete(stored, id)
	}
	if len(stored) > 0 {
		t.Fatalf("%s: records of no live run: %v", at, slices.Sorted(maps.Keys(stored)))
	}
	st := fz.rn.m.rules[fz.rule.ID]
	var stats RuleStats
	if st != nil {
		stats = st.stats
	}
	accounted := int(stats.Started) - fz.replay + int(stats.Suppressed) + int(stats.Refused) + int(stats.RefusedKeys) + queued + fz.thrown
	if accounted != fz.fires {
		t.Fatalf("%s: %d triggers fired; accounted %d (stats %+v, replayed %d, queued %d, thrown %d)",
			at, fz.fires, accounted, stats, fz.replay, queued, fz.thrown)
	}
}
