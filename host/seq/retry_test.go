package seq

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/runlog"
)

// flaky fails its first fails calls (all of them when fails < 0), and
// journals each call as "<name>#<attempt>@<seconds since t0>".
type flaky struct {
	j         *journal
	clk       interface{ Now() time.Time }
	name      string
	fails     int
	permanent bool
	mu        sync.Mutex
	calls     int
	keys      []string
}

type permErr struct{ error }

func (permErr) Permanent() bool { return true }

func (f *flaky) Act(_ context.Context, c *Call) ([]byte, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.keys = append(f.keys, c.Info.Key)
	f.mu.Unlock()
	f.j.add(fmt.Sprintf("%s#%d@%v", f.name, c.Info.Attempt, f.clk.Now().Sub(t0)))
	if f.fails < 0 || n <= f.fails {
		err := fmt.Errorf("%s failed", f.name)
		if f.permanent {
			return nil, permErr{err}
		}
		return nil, err
	}
	return nil, nil
}

var noJitter = rules.Retry{Attempts: 4, Backoff: time.Second, MaxBackoff: 3 * time.Second, Factor: 2}

// retryRule is a rule whose step "call" is f, retried as rt, followed by
// a step "done".
func (e *env) retryRule(f *flaky, rt rules.Retry) *Sequence {
	s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "call", "done")
	s.Steps[0].Action, s.Steps[0].Retry = f, rt
	s.Rule.Steps[0].Retry = rt
	return s
}

// TestRetry: a failed action is tried again after its backoff, with the
// same idempotency key and the next attempt; the error budget hears of a
// step that failed for good only.
func TestRetry(t *testing.T) {
	tests := []struct {
		name      string
		fails     int
		permanent bool
		rt        rules.Retry
		want      string
		errors    int
		outcome   string // completed, failed
	}{
		{"succeeds on the third", 2, false, noJitter,
			"call#1@0s call#2@1s call#3@3s done:0:s1", 0, "completed"},
		{"every attempt fails", -1, false, noJitter,
			"call#1@0s call#2@1s call#3@3s call#4@6s", 1, "failed"},
		{"backoff capped", -1, false, rules.Retry{Attempts: 5, Backoff: 2 * time.Second, MaxBackoff: 5 * time.Second, Factor: 3},
			"call#1@0s call#2@2s call#3@7s call#4@12s call#5@17s", 1, "failed"},
		{"permanent is not retried", -1, true, noJitter, "call#1@0s", 1, "failed"},
		{"no retry", -1, false, rules.Retry{}, "call#1@0s", 1, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			var errs []string
			e.configure(func(c *RunnerConfig) {
				c.OnError = func(rule string, err error) { errs = append(errs, err.Error()) }
			})
			f := &flaky{j: e.j, clk: e.clk, name: "call", fails: tt.fails, permanent: tt.permanent}
			s := e.retryRule(f, tt.rt)
			e.fire(s, `{"topic":"t","vehicle":"s1"}`)
			for range 30 {
				e.advance(time.Second)
			}
			if got := e.j.String(); got != tt.want {
				t.Errorf("calls %q; want %q", got, tt.want)
			}
			if len(errs) != tt.errors {
				t.Errorf("the error budget heard %d errors (%q); want %d", len(errs), errs, tt.errors)
			}
			for _, k := range f.keys {
				if k != f.keys[0] {
					t.Errorf("idempotency keys %q; want one for every attempt", f.keys)
					break
				}
			}
			st := e.rn.RuleStats("r")
			if got := map[bool]string{true: "completed", false: "failed"}[st.Completed == 1]; got != tt.outcome || st.Completed+st.Failed != 1 {
				t.Errorf("stats %+v; want the run %s", st, tt.outcome)
			}
			if st.Errors != uint64(tt.errors) {
				t.Errorf("Errors = %d; want %d", st.Errors, tt.errors)
			}
			if e.h.Len(PendingHash) != 0 {
				t.Errorf("%d records left", e.h.Len(PendingHash))
			}
		})
	}
}

// TestRetryAcrossRestart: the wait before a retry is a durable record
// (the step had no after and is not durable): a restart replays it, and
// the attempt goes on counting.
func TestRetryAcrossRestart(t *testing.T) {
	e := newEnv(t, 2, 100)
	f := &flaky{j: e.j, clk: e.clk, name: "call", fails: 2}
	e.fire(e.retryRule(f, noJitter), `{"topic":"t","vehicle":"s1"}`)
	recs, _ := e.rn.store.List()
	if len(recs) != 1 || recs[0].Attempt != 2 || recs[0].Step != "call" || recs[0].Remaining != 1000 {
		t.Fatalf("records %+v; want one for attempt 2 of call, due in 1s", recs)
	}
	e.restart() // the process dies during the wait
	s := e.retryRule(f, noJitter)
	if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 1 {
		t.Fatalf("replayed %d; want 1", n)
	}
	for range 10 {
		e.advance(time.Second)
	}
	if got, want := e.j.String(), "call#1@0s call#2@1s call#3@3s done:0:s1"; got != want {
		t.Errorf("calls %q; want %q", got, want)
	}
	if e.h.Len(PendingHash) != 0 || e.rn.Counts().Active != 0 {
		t.Errorf("records %d, active %d; want none", e.h.Len(PendingHash), e.rn.Counts().Active)
	}
}

// TestRetryCancelled: a run cancelled while it waits for a retry ends
// there, its record dropped.
func TestRetryCancelled(t *testing.T) {
	e := newEnv(t, 2, 100)
	f := &flaky{j: e.j, clk: e.clk, name: "call", fails: -1}
	s := e.retryRule(f, noJitter)
	s.Rule.CancelOn = []rules.Cancel{{Pattern: "stop"}}
	e.fire(s, `{"topic":"t","vehicle":"s1"}`)
	if n := e.rn.CancelMatching(e.event(`{"topic":"stop"}`)); n != 1 {
		t.Fatalf("cancelled %d runs; want 1", n)
	}
	for range 10 {
		e.advance(time.Second)
	}
	if got := e.j.String(); got != "call#1@0s" {
		t.Errorf("calls %q; want the first attempt only", got)
	}
	if e.h.Len(PendingHash) != 0 {
		t.Errorf("%d records left", e.h.Len(PendingHash))
	}
}

// TestRetryNodes: each attempt is a step node of the run's tree, each wait
// a delay node saying which attempt it waits for.
func TestRetryNodes(t *testing.T) {
	e := newEnv(t, 2, 100)
	tr := &recTracer{}
	e.configure(func(c *RunnerConfig) { c.Tracer = tr })
	f := &flaky{j: e.j, clk: e.clk, name: "call", fails: 1}
	e.fire(e.retryRule(f, noJitter), `{"topic":"t","vehicle":"s1"}`)
	e.advance(time.Second)
	var got []string
	for _, n := range tr.nodes() {
		if n.Kind == runlog.KindStep || n.Kind == runlog.KindDelay {
			got = append(got, fmt.Sprintf("%s %s %s: %s", n.Kind, n.Name, n.Outcome, n.Detail))
		}
	}
	want := []string{
		"step call failed: attempt 1 of 4; tried again in 1s",
		"delay call ok: retry: attempt 2 of 4 in 1s (durable)",
		"step call ok: ",
		"step done ok: ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("nodes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRetryRecordDecodes: a retry's record round-trips its attempt.
func TestRetryRecordDecodes(t *testing.T) {
	b, _ := json.Marshal(Pending{ID: "x", Rule: "r", FireAt: 1, Event: json.RawMessage(`{}`), Attempt: 3})
	p, err := decodePending("x", b)
	if err != nil || p.Attempt != 3 {
		t.Fatalf("decoded %+v, %v", p, err)
	}
}

// recTracer keeps each node as last told, in the order first told.
type recTracer struct {
	mu    sync.Mutex
	order []int
	byseq map[int]runlog.Node
}

func (r *recTracer) Run(runlog.Run) {}
func (r *recTracer) Node(n runlog.Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byseq == nil {
		r.byseq = map[int]runlog.Node{}
	}
	if _, ok := r.byseq[n.Seq]; !ok {
		r.order = append(r.order, n.Seq)
	}
	r.byseq[n.Seq] = n
}
func (r *recTracer) LastSeq(string) (int, error) { return 0, nil }
func (r *recTracer) nodes() []runlog.Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []runlog.Node
	for _, s := range r.order {
		out = append(out, r.byseq[s])
	}
	return out
}
