package seq

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// TestDurableAcrossRestart: a durable step survives a restart and fires once,
// at its due time; a run replayed mid-repeat finishes the passes it had left.
func TestDurableAcrossRestart(t *testing.T) {
	e := newEnv(t, 2, 100)
	rule := rules.Rule{ID: "low", Key: "vehicle", Repeat: rules.Repeat{Passes: 2, Interval: time.Minute}}
	s := e.rule(rule, "alert", "limit+5m!")
	e.fire(s, `{"topic":"t","vehicle":"s1"}`)
	if e.h.Len(PendingHash) != 1 {
		t.Fatalf("%d records; want the waiting limit step", e.h.Len(PendingHash))
	}
	e.advance(2 * time.Minute)
	e.restart() // the process dies mid-wait; the new one loads the same rules
	s = e.rule(rule, "alert", "limit+5m!")
	if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 1 {
		t.Fatalf("replayed %d; want 1", n)
	}
	if e.rn.Counts().Active != 1 {
		t.Fatal("the replayed run is not active")
	}
	e.advance(2*time.Minute + 59*time.Second)
	if strings.Contains(e.j.String(), "limit") {
		t.Fatal("the replayed step fired early")
	}
	e.advance(time.Second)
	e.advance(time.Minute)     // the gap before pass 1
	e.advance(5 * time.Minute) // pass 1's limit
	want := "alert:0:s1 limit:0:s1 alert:1:s1 limit:1:s1"
	if got := e.j.String(); got != want {
		t.Errorf("journal %q; want %q", got, want)
	}
	if e.h.Len(PendingHash) != 0 || e.rn.Counts().Active != 0 {
		t.Errorf("records %d, active %d; want none", e.h.Len(PendingHash), e.rn.Counts().Active)
	}
	if st := e.rn.RuleStats("low"); st.Started != 1 || st.Completed != 1 {
		t.Errorf("stats after replay %+v; the replayed run counts as a start", st)
	}
}

func TestReplayDrops(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(r *rules.Rule, steps []string) (*rules.Rule, []string) // the rules as loaded after the restart
		skip   time.Duration                                               // how long the process was down
		window time.Duration
		reason string
	}{
		{"rule gone", func(r *rules.Rule, s []string) (*rules.Rule, []string) {
			r.ID = "renamed"
			return r, s
		}, time.Minute, time.Hour, DropRuleGone},
		{"step gone", func(r *rules.Rule, s []string) (*rules.Rule, []string) { return r, []string{"a"} }, time.Minute, time.Hour, DropStepGone},
		{"step changed", func(r *rules.Rule, s []string) (*rules.Rule, []string) { return r, []string{"a", "b+10m!"} }, time.Minute, time.Hour, DropStepChanged},
		{"overdue past the window", func(r *rules.Rule, s []string) (*rules.Rule, []string) { return r, s }, 3 * time.Hour, time.Hour, DropOverdue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			rule := rules.Rule{ID: "r"}
			steps := []string{"a", "b+5m!"}
			e.fire(e.rule(rule, steps...), `{"topic":"t"}`)
			e.restart() // down for tc.skip
			e.clk.Advance(tc.skip)
			r2, s2 := tc.edit(&rule, steps)
			if n := e.rn.Replay([]*Sequence{e.rule(*r2, s2...)}, tc.window); n != 0 {
				t.Errorf("replayed %d; want the record dropped", n)
			}
			if e.h.Len(PendingHash) != 0 {
				t.Error("a dropped record stayed in the store")
			}
			if d := e.rn.Counts().Dropped; d[tc.reason] != 1 {
				t.Errorf("dropped %v; want one %q", d, tc.reason)
			}
			if !e.log.Has(tc.reason) {
				t.Errorf("no log line gives the reason %q: %v", tc.reason, e.log.Lines())
			}
			e.advance(time.Hour)
			if strings.Contains(e.j.String(), "b:") {
				t.Error("a dropped step ran")
			}
		})
	}
}

// TestOverdueWithinWindowFiresAtOnce: a record due while the process was
// down fires right after Replay.
func TestOverdueWithinWindowFiresAtOnce(t *testing.T) {
	e := newEnv(t, 2, 100)
	rule := rules.Rule{ID: "r"}
	e.fire(e.rule(rule, "a", "b+5m!"), `{"topic":"t"}`)
	e.restart() // down for 20 minutes
	e.clk.Advance(20 * time.Minute)
	e.rn.Replay([]*Sequence{e.rule(rule, "a", "b+5m!")}, time.Hour)
	e.advance(0)
	if got := e.j.String(); got != "a:0: b:0:" {
		t.Errorf("journal %q", got)
	}
}

// TestClockJumps: the wall clock set back or forward across a restart.
// Without a clock check the seed's limits apply (a record dated further
// ahead than its step could wait is dropped); with one, Replay waits for a
// trusted clock, nothing is dropped for the jump alone, and nothing fires
// early or twice.
func TestClockJumps(t *testing.T) {
	for _, back := range []bool{true, false} {
		name := map[bool]string{true: "set back", false: "set forward"}[back]
		t.Run(name+"/without a check", func(t *testing.T) {
			e := newEnv(t, 2, 100)
			rule := rules.Rule{ID: "r"}
			e.fire(e.rule(rule, "a", "b+5m!"), `{"topic":"t"}`)
			e.restart()
			jump := -6 * time.Hour
			if !back {
				jump = 6 * time.Hour
			}
			e.clk.SetWall(e.clk.Now().Add(jump))
			e.rn.Replay([]*Sequence{e.rule(rule, "a", "b+5m!")}, time.Hour)
			want := DropTooEarly
			if !back {
				want = DropOverdue
			}
			if d := e.rn.Counts().Dropped; d[want] != 1 {
				t.Errorf("dropped %v; want %q", d, want)
			}
		})
		t.Run(name+"/waiting for a trusted clock", func(t *testing.T) {
			e := newEnv(t, 2, 100)
			rule := rules.Rule{ID: "r"}
			e.fire(e.rule(rule, "a", "b+5m!"), `{"topic":"t"}`)
			written := e.clk.Now()
			e.restart()
			trusted := false
			e.configure(func(c *RunnerConfig) {
				c.ClockCheck = func(now, newest time.Time) bool { return trusted && ClockAfterNewest(now, newest) }
				c.ClockPoll = time.Second
			})
			if back {
				e.clk.SetWall(written.Add(-6 * time.Hour)) // a device that booted without its clock
			} else {
				e.clk.SetWall(written.Add(6 * time.Hour)) // a clock that raced ahead
			}
			if n := e.rn.Replay([]*Sequence{e.rule(rule, "a", "b+5m!")}, time.Hour); n != 1 {
				t.Fatalf("replay held %d; want 1", n)
			}
			e.advance(10 * time.Second) // the clock is still not trusted: nothing is judged
			if len(e.rn.Counts().Dropped) != 0 || strings.Contains(e.j.String(), "b:") {
				t.Fatalf("judged on an untrusted clock: dropped %v, journal %q", e.rn.Counts().Dropped, e.j.String())
			}
			// NTP answers: the clock is right again, 2 minutes after the write.
			e.clk.SetWall(written.Add(2 * time.Minute))
			trusted = true
			e.advance(time.Second)
			e.advance(2*time.Minute + 50*time.Second)
			if strings.Contains(e.j.String(), "b:") {
				t.Fatal("fired before its due time")
			}
			e.advance(10 * time.Second)
			e.advance(time.Hour)
			if got := e.j.String(); got != "a:0: b:0:" {
				t.Errorf("journal %q; want b exactly once", got)
			}
			if len(e.rn.Counts().Dropped) != 0 {
				t.Errorf("dropped %v for a jump alone", e.rn.Counts().Dropped)
			}
		})
	}
}

// TestStopKeepsDurableRecords: Stop drops what is queued and keeps durable
// records, which fire after the next start.
func TestStopKeepsDurableRecords(t *testing.T) {
	e := newEnv(t, 2, 100)
	rule := rules.Rule{ID: "r", Mode: rules.ModeQueue, Max: 5}
	s := e.rule(rule, "a", "b+5m!", "c")
	e.fire(s, `{"topic":"t"}`)
	e.fire(s, `{"topic":"t"}`) // queued behind
	e.rn.Stop()
	e.advance(10 * time.Minute)
	if strings.Contains(e.j.String(), "b:") || e.h.Len(PendingHash) != 1 {
		t.Fatalf("after Stop: journal %q, records %d; want nothing run, the record kept", e.j.String(), e.h.Len(PendingHash))
	}
	e.restart()
	e.rn.Replay([]*Sequence{e.rule(rule, "a", "b+5m!", "c")}, time.Hour)
	e.advance(0)
	if got := e.j.String(); got != "a:0: b:0: c:0:" {
		t.Errorf("journal %q; the queued trigger was dropped and the record fired", got)
	}
}

// TestSeedFormatRecordLoads: records in the seed's format (v1: the step by
// index, no remaining delay) still load and fire (fixture in testdata).
func TestSeedFormatRecordLoads(t *testing.T) {
	b, err := os.ReadFile("testdata/pending-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var fixture struct {
		Rule  string                     `json:"rule"`
		Steps []string                   `json:"steps"`
		Hash  map[string]json.RawMessage `json:"hash"`
	}
	if err := json.Unmarshal(b, &fixture); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, 2, 100)
	for id, rec := range fixture.Hash {
		e.h.HSet(PendingHash, id, []byte(rec))
	}
	e.clk.SetWall(time.Date(2026, 11, 30, 8, 1, 0, 0, time.UTC))
	s := e.rule(rules.Rule{ID: fixture.Rule}, fixture.Steps...)
	if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 1 {
		t.Fatalf("replayed %d; want the v1 record (dropped: %v; log %v)", n, e.rn.Counts().Dropped, e.log.Lines())
	}
	e.advance(5 * time.Minute)
	if got := e.j.String(); got != "limit:0:s-17" {
		t.Errorf("journal %q", got)
	}
}

func TestLoadDropsUndecodableRecords(t *testing.T) {
	e := newEnv(t, 1, 10)
	e.h.HSet(PendingHash, "bad", []byte("{not json"))
	e.h.HSet(PendingHash, "future", []byte(`{"v":99,"id":"future","rule":"r","fire-at":1,"event":{}}`))
	e.h.HSet(PendingHash, "mislabelled", []byte(`{"id":"other","rule":"r","fire-at":1,"event":{}}`))
	recs, err := e.rn.store.Load()
	if err != nil || len(recs) != 0 {
		t.Fatalf("Load = %v, %v", recs, err)
	}
	if e.h.Len(PendingHash) != 0 {
		t.Errorf("%d undecodable records left in place", e.h.Len(PendingHash))
	}
	if !e.log.Has("will not decode") {
		t.Error("no log line")
	}
	if err := e.rn.store.Drop("never-there"); err != nil {
		t.Errorf("Drop of a missing record: %v", err)
	}
}

// A step that runs while the store is away leaves its record behind; the
// record goes with the next drop once the store is back, so a restart does
// not run the step again.
func TestRecordsLeftByAnOutageGoLater(t *testing.T) {
	e := newEnv(t, 2, 100)
	rule := rules.Rule{ID: "r", Key: "vehicle", Mode: rules.ModeParallel, Max: 10}
	s := e.rule(rule, "limit+5m!")
	e.fire(s, `{"topic":"t","vehicle":"v1"}`)
	e.fire(s, `{"topic":"t","vehicle":"v2"}`)
	e.h.SetDown(true) // the store goes away while both wait
	e.advance(5 * time.Minute)
	if got := e.j.String(); got != "limit:0:v1 limit:0:v2" && got != "limit:0:v2 limit:0:v1" {
		t.Fatalf("journal %q: the steps must run without the store", got)
	}
	if e.h.Len(PendingHash) != 2 || e.rn.Counts().Undropped != 2 {
		t.Fatalf("records %d, undropped %d; want both left behind and known", e.h.Len(PendingHash), e.rn.Counts().Undropped)
	}
	e.h.SetDown(false)
	e.fire(s, `{"topic":"t","vehicle":"v3"}`)
	e.advance(5 * time.Minute)
	if e.h.Len(PendingHash) != 0 || e.rn.Counts().Undropped != 0 {
		t.Fatalf("records %d, undropped %d after the store came back; want none", e.h.Len(PendingHash), e.rn.Counts().Undropped)
	}
	e.restart()
	if n := e.rn.Replay([]*Sequence{e.rule(rule, "limit+5m!")}, time.Hour); n != 0 {
		t.Errorf("replayed %d steps that had run; want 0", n)
	}
}

// TestRestartBetweenPasses: a kill in the gap between two repeat passes
// of a run past its durable point resumes it at the next pass, at the
// gap's end: the pass that ran is not run again (an outside tester's
// soak: a repeat's step ran twice in one of four kills, and the gap began
// anew).
func TestRestartBetweenPasses(t *testing.T) {
	e := newEnv(t, 2, 100)
	rule := rules.Rule{ID: "low", Key: "vehicle", Repeat: rules.Repeat{Passes: 2, Interval: time.Minute}}
	s := e.rule(rule, "alert", "limit+5m!")
	e.fire(s, `{"topic":"t","vehicle":"s1"}`)
	e.advance(5 * time.Minute) // pass 0's limit runs; the gap begins
	e.advance(30 * time.Second)
	if got := e.j.String(); got != "alert:0:s1 limit:0:s1" {
		t.Fatalf("journal %q before the kill", got)
	}
	e.restart()
	s = e.rule(rule, "alert", "limit+5m!")
	if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 1 {
		t.Fatalf("replayed %d; want the run between its passes", n)
	}
	e.advance(29 * time.Second)
	if got := e.j.String(); got != "alert:0:s1 limit:0:s1" {
		t.Fatalf("journal %q within the gap: a step ran again, or pass 1 came early", got)
	}
	e.advance(time.Second)     // the gap's end
	e.advance(5 * time.Minute) // pass 1's limit
	if got, want := e.j.String(), "alert:0:s1 limit:0:s1 alert:1:s1 limit:1:s1"; got != want {
		t.Errorf("journal %q; want %q", got, want)
	}
	if e.h.Len(PendingHash) != 0 || e.rn.Counts().Active != 0 {
		t.Errorf("records %d, active %d; want none", e.h.Len(PendingHash), e.rn.Counts().Active)
	}
}
