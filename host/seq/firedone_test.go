package seq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
)

// TestFireDone checks when a journaled trigger is let go: never before its
// fate is in the store or settled, and exactly once.
func TestFireDone(t *testing.T) {
	tests := []struct {
		name  string
		rule  rules.Rule
		steps []string
		cond  string // the condition field's value; "" for no condition
		// prime fires one plain trigger first (to make a live run).
		prime bool
		// wantNow: done called right after the trigger was admitted;
		// wantLater: called only after an advance of a minute.
		wantNow, wantLater int
		// records is how many records of the trigger's own run the store
		// holds when done was called (another run's may be going aside).
		records int
	}{
		{"a durable first step: done once its record is written",
			rules.Rule{ID: "r"}, []string{"a+1m!"}, "", false, 1, 1, 1},
		{"a durable later step: done when that record is written",
			rules.Rule{ID: "r"}, []string{"a", "b+1m!"}, "", false, 1, 1, 1},
		{"no durable step: done when the run ends",
			rules.Rule{ID: "r"}, []string{"a+1m"}, "", false, 0, 1, 0},
		{"the condition says no: done at once",
			rules.Rule{ID: "r"}, []string{"a+1m!"}, "false", false, 1, 1, 0},
		{"the condition fails: done at once",
			rules.Rule{ID: "r"}, []string{"a+1m!"}, "missing", false, 1, 1, 0},
		{"suppressed by a live run: done at once",
			rules.Rule{ID: "r", Mode: rules.ModeSingle}, []string{"a+1m!"}, "", true, 1, 1, 0},
		{"queued behind a live run: done when its own record is written",
			rules.Rule{ID: "r", Mode: rules.ModeQueue, Max: 5}, []string{"a+1m!"}, "", true, 0, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			s := e.rule(tc.rule, tc.steps...)
			if tc.cond != "" {
				s.When = &cond{field: "go"}
			}
			if tc.prime {
				e.fire(s, `{"topic":"t","go":"true"}`)
			}
			js := `{"topic":"t","go":"true"}`
			switch tc.cond {
			case "false":
				js = `{"topic":"t","go":"false"}`
			case "missing":
				js = `{"topic":"t"}`
			}
			calls, records := 0, -1
			ev := e.event(js)
			e.rn.Fire(Trigger{Seq: s, Event: ev, Done: func() {
				calls++
				all, _ := e.h.HGetAll(PendingHash)
				records = 0
				for _, v := range all {
					if strings.Contains(v, `"event-id":"`+ev.ID+`"`) {
						records++
					}
				}
			}})
			e.settle()
			if calls != tc.wantNow {
				t.Fatalf("done called %d times after admission; want %d", calls, tc.wantNow)
			}
			e.advance(time.Minute)
			e.advance(time.Minute)
			if calls != tc.wantLater {
				t.Fatalf("done called %d times in all; want %d", calls, tc.wantLater)
			}
			if records != tc.records {
				t.Errorf("the store held %d records when done was called; want %d", records, tc.records)
			}
		})
	}
}

// TestFireDoneNotOnStop: a trigger still queued when the runner stops, and
// a run Stop ends before its record, are not let go — the journal keeps
// their events for the next start.
func TestFireDoneNotOnStop(t *testing.T) {
	e := newEnv(t, 1, 100)
	s := e.rule(rules.Rule{ID: "r", Mode: rules.ModeParallel}, "a", "b+1m!")
	gate, entered := make(chan struct{}), make(chan struct{})
	e.pool.Submit(pool.Job{Run: func() { close(entered); <-gate }}) // holds the one worker
	<-entered
	calls := 0
	e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t"}`), Done: func() { calls++ }})
	e.rn.Stop()
	close(gate)
	e.settle()
	if calls != 0 {
		t.Errorf("done called %d times for a trigger the runner never took", calls)
	}
}

// TestFireDoneWhile: exactly one of done and lost. Given up before a
// worker admits it: lost. Its run let go (ReleaseWhere) before its first
// record: lost. Let go after its record: done, and the record stays.
func TestFireDoneWhile(t *testing.T) {
	type result struct{ done, lost int }
	fire := func(e *env, ctx context.Context, s *Sequence) *result {
		r := &result{}
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1"}`), Live: ctx, Done: func() { r.done++ }, Lost: func() { r.lost++ }})
		return r
	}
	t.Run("given up before admission", func(t *testing.T) {
		e := newEnv(t, 1, 100)
		s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "a+1m!")
		gate, entered := make(chan struct{}), make(chan struct{})
		e.pool.Submit(pool.Job{Run: func() { close(entered); <-gate }})
		<-entered
		ctx, cancel := context.WithCancel(context.Background())
		r := fire(e, ctx, s)
		cancel()
		close(gate)
		e.settle()
		if *r != (result{0, 1}) || e.rn.Counts().Active != 0 {
			t.Errorf("%+v, %d active; want lost once and no run", *r, e.rn.Counts().Active)
		}
	})
	t.Run("let go before its record", func(t *testing.T) {
		e := newEnv(t, 1, 100)
		s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "a+1m", "b+1m!")
		r := fire(e, context.Background(), s)
		e.settle()
		e.rn.ReleaseWhere(func(_, key string) bool { return key == "s1" }, time.Second)
		if *r != (result{0, 1}) {
			t.Errorf("%+v; want lost once", *r)
		}
	})
	t.Run("let go after its record", func(t *testing.T) {
		e := newEnv(t, 1, 100)
		s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "a+1m!")
		r := fire(e, context.Background(), s)
		e.settle()
		e.rn.ReleaseWhere(func(_, key string) bool { return key == "s1" }, time.Second)
		if *r != (result{1, 0}) || e.h.Len(PendingHash) != 1 {
			t.Errorf("%+v, %d records; want done once and the record kept", *r, e.h.Len(PendingHash))
		}
	})
}

// TestFireDoneWhilePut: the first record goes through the caller's put
// (fleet mode writes it with the item's completion) and later ones through
// the store; a put answering ErrNotHeld ends the run unrecorded and calls
// lost; a run let go while its put is in flight keeps the record.
func TestFireDoneWhilePut(t *testing.T) {
	type result struct{ done, lost int }
	t.Run("the first record through put, the next through the store", func(t *testing.T) {
		e := newEnv(t, 1, 100)
		s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "a+1m!", "b+1m!")
		var puts []string
		put := func(hash, field string, value []byte) error {
			puts = append(puts, hash)
			return e.h.HSet(hash, field, value)
		}
		r := &result{}
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1"}`), Live: context.Background(), Put: put, Done: func() { r.done++ }, Lost: func() { r.lost++ }})
		e.settle()
		sets := e.h.Sets()
		e.advance(time.Minute)
		if *r != (result{1, 0}) || len(puts) != 1 || puts[0] != PendingHash || e.h.Sets() != sets+1 || e.h.Len(PendingHash) != 1 {
			t.Errorf("%+v, puts %v, %d store writes after the first; want done once, one put, the second record by the store", *r, puts, e.h.Sets()-sets)
		}
	})
	t.Run("not held", func(t *testing.T) {
		e := newEnv(t, 1, 100)
		s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "a+1m!")
		r := &result{}
		put := func(string, string, []byte) error { return fmt.Errorf("fenced: %w", ErrNotHeld) }
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1"}`), Live: context.Background(), Put: put, Done: func() { r.done++ }, Lost: func() { r.lost++ }})
		e.settle()
		e.advance(2 * time.Minute)
		if *r != (result{0, 1}) || e.h.Len(PendingHash) != 0 || e.rn.Counts().Active != 0 {
			t.Errorf("%+v, %d records, %d active; want lost once, nothing recorded, no run", *r, e.h.Len(PendingHash), e.rn.Counts().Active)
		}
	})
	// A store that went away before it answered (redis-server stopped
	// mid-reply) may have kept a record its put reported failed: the step
	// runs from memory, the ticket is settled when the run ends (not by the
	// record), and the record is dropped once the step ran, so a restart
	// does not run the step again (TestRedisOutageUnderLoad found it).
	t.Run("a put that failed after it wrote", func(t *testing.T) {
		e := newEnv(t, 1, 100)
		s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "a+1m!")
		r := &result{}
		put := func(hash, field string, value []byte) error {
			if err := e.h.HSet(hash, field, value); err != nil {
				return err
			}
			return errors.New("EOF: the server went away before it answered")
		}
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1"}`), Live: context.Background(), Put: put, Done: func() { r.done++ }, Lost: func() { r.lost++ }})
		e.settle()
		if *r != (result{0, 0}) || e.h.Len(PendingHash) != 1 {
			t.Fatalf("%+v, %d records; want the ticket open (no record it can count on) and the stray record there", *r, e.h.Len(PendingHash))
		}
		e.advance(2 * time.Minute)
		if *r != (result{1, 0}) || e.h.Len(PendingHash) != 0 || e.rn.Counts().Active != 0 {
			t.Errorf("%+v, %d records, %d active; want done once, the stray record dropped, no run", *r, e.h.Len(PendingHash), e.rn.Counts().Active)
		}
	})
	t.Run("let go while the put is in flight", func(t *testing.T) {
		e := newEnv(t, 1, 100)
		s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "a+1m!")
		r := &result{}
		entered, gate := make(chan struct{}), make(chan struct{})
		put := func(hash, field string, value []byte) error {
			close(entered)
			<-gate
			return e.h.HSet(hash, field, value)
		}
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"s1"}`), Live: context.Background(), Put: put, Done: func() { r.done++ }, Lost: func() { r.lost++ }})
		<-entered
		e.rn.ReleaseWhere(func(_, key string) bool { return key == "s1" }, 0)
		close(gate)
		e.settle()
		if *r != (result{0, 1}) || e.h.Len(PendingHash) != 1 {
			t.Errorf("%+v, %d records; want lost once and the record kept for the shard's next holder", *r, e.h.Len(PendingHash))
		}
	})
}
