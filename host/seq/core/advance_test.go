package core

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// TestAdvance: after a step, the next step, the next pass (with its gap),
// the run's end; a failure ends it whatever comes next; finally steps go
// on past a failure and close the run after the last.
func TestAdvance(t *testing.T) {
	three := Shape{Steps: 3, Passes: 1}
	twice := Shape{Steps: 2, Passes: 2, Gap: time.Minute}
	fin := Shape{Steps: 1, Finally: 2}
	for _, tc := range []struct {
		name   string
		p      Pos
		sh     Shape
		failed bool
		want   Move
	}{
		{"first of three", Pos{}, three, false, Move{Kind: Next, To: Pos{Step: 1}}},
		{"last of three", Pos{Step: 2}, three, false, Move{Kind: Complete}},
		{"a failure", Pos{Step: 0}, three, true, Move{Kind: Fail}},
		{"a failure on the last step", Pos{Step: 2}, three, true, Move{Kind: Fail}},
		{"end of the first pass", Pos{Step: 1}, twice, false, Move{Kind: NextPass, To: Pos{Pass: 1}, Gap: time.Minute}},
		{"within the second pass", Pos{Pass: 1}, twice, false, Move{Kind: Next, To: Pos{Step: 1, Pass: 1}}},
		{"end of the last pass", Pos{Step: 1, Pass: 1}, twice, false, Move{Kind: Complete}},
		{"a failure ends the passes", Pos{Step: 1}, twice, true, Move{Kind: Fail}},
		{"passes unset read as one", Pos{}, Shape{Steps: 1}, false, Move{Kind: Complete}},
		{"finally: the next", Pos{Final: true}, fin, false, Move{Kind: Next, To: Pos{Step: 1, Final: true}}},
		{"finally: on past a failure", Pos{Final: true}, fin, true, Move{Kind: Next, To: Pos{Step: 1, Final: true}}},
		{"finally: the last", Pos{Step: 1, Final: true}, fin, false, Move{Kind: Closed}},
		{"finally keeps the pass", Pos{Pass: 3, Final: true}, fin, false, Move{Kind: Next, To: Pos{Step: 1, Pass: 3, Final: true}}},
	} {
		if got := Advance(tc.p, tc.sh, tc.failed); got != tc.want {
			t.Errorf("%s: %+v; want %+v", tc.name, got, tc.want)
		}
	}
}

// TestMovePast: a let-go run's record is written again for the next step
// of its pass; kept where a record cannot name what comes next (another
// pass, finally steps); dropped when nothing comes next.
func TestMovePast(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Pos
		sh   Shape
		want Past
		to   Pos
	}{
		{"a step follows", Pos{}, Shape{Steps: 2}, PastMove, Pos{Step: 1}},
		{"a step of the same pass", Pos{Step: 1, Pass: 2}, Shape{Steps: 3, Passes: 4}, PastMove, Pos{Step: 2, Pass: 2}},
		{"the last step", Pos{Step: 1}, Shape{Steps: 2}, PastDrop, Pos{Step: 1}},
		{"another pass", Pos{Step: 1}, Shape{Steps: 2, Passes: 2}, PastKeep, Pos{Step: 1}},
		{"finally steps", Pos{}, Shape{Steps: 1, Finally: 1}, PastKeep, Pos{}},
		{"a finally step", Pos{Final: true}, Shape{Steps: 1, Finally: 2}, PastKeep, Pos{Final: true}},
	} {
		past, to := MovePast(tc.p, tc.sh)
		if past != tc.want || past == PastMove && to != tc.to {
			t.Errorf("%s: %v %+v; want %v %+v", tc.name, past, to, tc.want, tc.to)
		}
	}
}

// TestReads: an output is bounded only where a later step may read it.
func TestReads(t *testing.T) {
	for _, tc := range []struct {
		p    Pos
		sh   Shape
		want bool
	}{
		{Pos{}, Shape{Steps: 2}, true},
		{Pos{Step: 1}, Shape{Steps: 2}, false},
		{Pos{Step: 1}, Shape{Steps: 2, Passes: 2}, true},
		{Pos{Step: 1, Pass: 1}, Shape{Steps: 2, Passes: 2}, false},
		{Pos{Step: 1}, Shape{Steps: 2, Finally: 1}, true},
		{Pos{Final: true}, Shape{Steps: 2, Finally: 2}, true},
		{Pos{Step: 1, Final: true}, Shape{Steps: 2, Finally: 2}, false},
	} {
		if got := Reads(tc.p, tc.sh); got != tc.want {
			t.Errorf("Reads(%+v, %+v) = %v", tc.p, tc.sh, got)
		}
	}
}

// TestRetry: tried again until the attempts are spent, never when the
// plugin says it is no use; the jitter is drawn only for a wait there
// will be.
func TestRetry(t *testing.T) {
	rt := rules.Retry{Attempts: 3, Backoff: 10 * time.Second, MaxBackoff: time.Minute, Factor: 2}
	drawn := 0
	u := func() float64 { drawn++; return 0 }
	for _, tc := range []struct {
		name      string
		rt        rules.Retry
		attempt   int
		permanent bool
		wait      time.Duration
		note      string
	}{
		{"no retry", rules.Retry{}, 1, false, 0, ""},
		{"one attempt", rules.Retry{Attempts: 1}, 1, false, 0, ""},
		{"the first", rt, 1, false, 10 * time.Second, "attempt 1 of 3; tried again in 10s"},
		{"the second", rt, 2, false, 20 * time.Second, "attempt 2 of 3; tried again in 20s"},
		{"the last", rt, 3, false, 0, "attempt 3 of 3, the last"},
		{"permanent", rt, 1, true, 0, "not retried: the plugin says a retry would fail the same way"},
	} {
		drawn = 0
		wait, note := Retry(tc.rt, tc.attempt, tc.permanent, u)
		if wait != tc.wait || !strings.Contains(note, tc.note) {
			t.Errorf("%s: %v %q; want %v %q", tc.name, wait, note, tc.wait, tc.note)
		}
		if (wait > 0) != (drawn == 1) || drawn > 1 {
			t.Errorf("%s: jitter drawn %d times for a wait of %v", tc.name, drawn, wait)
		}
	}
}

// TestJitter: jitter takes up to its share off each wait, the same share
// for the same attempt however often it is worked out — and the same as
// the draw records were written with before it moved here (a replayed
// retry's wait is the one first written).
func TestJitter(t *testing.T) {
	rt := rules.Retry{Attempts: 3, Backoff: 10 * time.Second, MaxBackoff: time.Minute, Factor: 2, Jitter: 0.5}
	seen := map[time.Duration]bool{}
	for i := range 50 {
		run := fmt.Sprintf("run%d", i)
		u := Jitter(run, "call", 0, 2)
		if u != Jitter(run, "call", 0, 2) {
			t.Fatal("the draw differs for the same attempt")
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%s/%d/%d", run, "call", 0, 2)
		if was := float64(h.Sum64()>>11) / (1 << 53); u != was {
			t.Fatalf("draw %v; the format it had drew %v", u, was)
		}
		d := rt.Delay(2, u)
		if d <= 5*time.Second || d > 10*time.Second {
			t.Fatalf("wait %v; want in (5s, 10s]", d)
		}
		seen[d.Round(time.Second)] = true
	}
	if len(seen) < 3 {
		t.Errorf("50 runs waited only %v: jitter does not spread them", seen)
	}
}

// FuzzAdvance walks random shapes with random failures, as the driver
// does — a failed step is tried again while its retry allows, a failure
// for good ends the run's steps, and a run with finally steps runs them —
// and checks: every position is a step of the shape, no step runs twice
// in one pass, every walk ends, and the finally steps run once each,
// after the run's own steps.
func FuzzAdvance(f *testing.F) {
	f.Add(byte(3), byte(2), byte(1), byte(2), []byte{0, 0, 1, 0, 0, 0})
	f.Add(byte(1), byte(1), byte(0), byte(1), []byte{1})
	f.Add(byte(4), byte(3), byte(2), byte(3), []byte{0, 1, 1, 0, 1, 0, 0, 1})
	f.Fuzz(func(t *testing.T, steps, passes, finally, attempts byte, fails []byte) {
		sh := Shape{Steps: int(steps%6) + 1, Passes: int(passes % 4), Finally: int(finally % 3)}
		rt := rules.Retry{Attempts: int(attempts%4) + 1, Backoff: time.Second, MaxBackoff: time.Minute, Factor: 2}
		var p Pos
		attempt := 1
		ran := map[Pos]int{}
		finals := 0
		limit := sh.Steps*sh.passes()*rt.Attempts + sh.Finally + 1
		for i := 0; ; i++ {
			if i > limit {
				t.Fatalf("no end after %d steps: %+v in %+v", i, p, sh)
			}
			switch {
			case p.Final && (p.Step < 0 || p.Step >= sh.Finally):
				t.Fatalf("finally position %+v outside %+v", p, sh)
			case !p.Final && (p.Step < 0 || p.Step >= sh.Steps || p.Pass < 0 || p.Pass >= sh.passes()):
				t.Fatalf("position %+v outside %+v", p, sh)
			}
			failed := i < len(fails) && fails[i]%2 == 1
			if p.Final {
				finals++
			} else if attempt == 1 {
				if ran[p]++; ran[p] > 1 {
					t.Fatalf("step %+v ran twice in one pass", p)
				}
			}
			if failed && !p.Final {
				if wait, _ := Retry(rt, attempt, false, func() float64 { return 0.5 }); wait > 0 {
					attempt++
					continue
				}
			}
			attempt = 1
			m := Advance(p, sh, failed)
			switch m.Kind {
			case Next, NextPass:
				if m.To.Final != p.Final {
					t.Fatalf("%+v moved to %+v", p, m.To)
				}
				p = m.To
				continue
			case Complete, Fail:
				if p.Final {
					t.Fatalf("a finally step's move is %v", m.Kind)
				}
				if m.Kind == Complete && (p.Step != sh.Steps-1 || p.Pass != sh.passes()-1) {
					t.Fatalf("completed at %+v of %+v", p, sh)
				}
				if sh.Finally > 0 {
					p = Pos{Pass: p.Pass, Final: true}
					continue
				}
			case Closed:
				if !p.Final || p.Step != sh.Finally-1 {
					t.Fatalf("closed at %+v of %+v", p, sh)
				}
			}
			break
		}
		if finals != sh.Finally {
			t.Fatalf("%d finally steps ran of %d", finals, sh.Finally)
		}
	})
}

func ExampleAdvance() {
	sh := Shape{Steps: 2, Passes: 2, Gap: time.Minute}
	m := Advance(Pos{Step: 1}, sh, false)
	fmt.Println(m.Kind == NextPass, m.To.Pass, m.Gap)
	fmt.Println(Advance(Pos{Step: 1, Pass: 1}, sh, false).Kind == Complete)
	fmt.Println(Advance(Pos{}, sh, true).Kind == Fail)
	// Output:
	// true 1 1m0s
	// true
	// true
}

// TestSchedule: a step without delay goes to a worker, after its record
// when the run has one; a delay parks, durably when the step says so or
// the run is recorded, and only with a store.
func TestSchedule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		after   time.Duration
		durable bool
		rec     Record
		store   bool
		want    Go
	}{
		{"no delay", 0, false, NoRecord, true, Go{Kind: Submit}},
		{"no delay, recorded", 0, false, Written, true, Go{Kind: Follow}},
		{"no delay, uncertain", 0, false, Uncertain, true, Go{Kind: Follow}},
		{"no delay, recorded, no store", 0, false, Written, false, Go{Kind: Submit}},
		{"an after", time.Minute, false, NoRecord, true, Go{Kind: Park, After: time.Minute}},
		{"a durable after", time.Minute, true, NoRecord, true, Go{Kind: Park, After: time.Minute, Durable: true}},
		{"an after, recorded", time.Minute, false, Written, true, Go{Kind: Park, After: time.Minute, Durable: true}},
		{"a durable after, no store", time.Minute, true, NoRecord, false, Go{Kind: Park, After: time.Minute}},
	} {
		if got := Schedule(tc.after, tc.durable, tc.rec, tc.store); got != tc.want {
			t.Errorf("%s: %+v; want %+v", tc.name, got, tc.want)
		}
	}
}

// TestEnd: a run ends once; one with finally steps closes first (its
// finally steps recorded when durable, its waiting step's record dropped
// otherwise, handed over when a step of its own runs); a stop keeps the
// record and abandons the ticket.
func TestEnd(t *testing.T) {
	plain, fin := Shape{Steps: 2}, Shape{Steps: 2, Finally: 1}
	for _, tc := range []struct {
		name           string
		r              Run
		why            Outcome
		sh             Shape
		store, durable bool
		want           Ending
		after          Run
	}{
		{"completed", Run{Pos: Pos{Step: 1}}, Completed, plain, true, false,
			Ending{Settle: true}, Run{Pos: Pos{Step: 1}, Phase: Ended}},
		{"cancelled with a record", Run{Record: Written}, Cancelled, plain, true, true,
			Ending{Settle: true, Drop: true}, Run{Phase: Ended}},
		{"stopped with a record", Run{Record: Written}, Stop, plain, true, true,
			Ending{}, Run{Record: Written, Phase: Stopped}},
		{"closes", Run{Pos: Pos{Step: 1, Pass: 2}, Attempt: 2}, Failed, fin, true, false,
			Ending{Close: true, Settle: true, Submit: true}, Run{Pos: Pos{Pass: 2, Final: true}, Why: Failed}},
		{"closes, durable", Run{}, Completed, fin, true, true,
			Ending{Close: true, Settle: true, Submit: true}, Run{Pos: Pos{Final: true}, FinRecord: true}},
		{"closes, recorded, no store", Run{Record: Written}, Cancelled, fin, false, true,
			Ending{Close: true, Settle: true, Drop: true, Submit: true}, Run{Pos: Pos{Final: true}, Why: Cancelled}},
		{"closes while a step runs", Run{Running: 1}, Cancelled, fin, false, false,
			Ending{Close: true, Settle: true}, Run{Pos: Pos{Final: true}, Why: Cancelled, Running: 1, Handover: true}},
		{"closes while its wait's record is written", Run{Hand: HandParking}, Cancelled, fin, true, true,
			Ending{Close: true, Settle: true}, Run{Pos: Pos{Final: true}, Why: Cancelled, Hand: HandParking, Handover: true, FinRecord: true}},
		{"a stop does not close", Run{Record: Written}, Stop, fin, true, true,
			Ending{}, Run{Record: Written, Phase: Stopped}},
		{"finally steps done", Run{Pos: Pos{Final: true}, Why: Failed, Record: Written}, Failed, fin, true, true,
			Ending{Settle: true, Drop: true}, Run{Pos: Pos{Final: true}, Why: Failed, Phase: Ended}},
	} {
		r := tc.r
		got, ok := End(&r, tc.why, tc.sh, tc.store, tc.durable)
		if !ok || got != tc.want || r != tc.after {
			t.Errorf("%s: %+v %v, run %+v; want %+v, run %+v", tc.name, got, ok, r, tc.want, tc.after)
		}
		if _, again := End(&r, tc.why, tc.sh, tc.store, tc.durable); again && !tc.want.Close {
			t.Errorf("%s: ended twice", tc.name)
		}
	}
}

// TestParked: once a parking run's record is down, what happened to the
// run meanwhile decides: let go when its place moved; the record taken
// along by a run that ended, kept by one let go; the ticket settled only
// by a record written; an operator's run-now or drop carried out; the
// timer armed otherwise.
func TestParked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      Run
		w      Wrote
		want   Parking
		record Record
	}{
		{"written", Run{Hand: HandParking}, WriteOK, Parking{Settle: true, Arm: true}, Written},
		{"not durable", Run{Hand: HandParking}, NotWritten, Parking{Arm: true}, NoRecord},
		{"failed", Run{Hand: HandParking}, WriteFailed, Parking{Arm: true}, Uncertain},
		{"not held", Run{Hand: HandParking}, WriteNotHeld, Parking{LetGo: true}, NoRecord},
		{"cancelled meanwhile", Run{Phase: Ended, Hand: HandParking}, WriteOK, Parking{Ended: true, DropRecord: true}, NoRecord},
		{"closing meanwhile", Run{Pos: Pos{Final: true}, Hand: HandParking}, WriteFailed, Parking{Ended: true, DropRecord: true}, NoRecord},
		{"closing meanwhile, its finally steps recorded", Run{Pos: Pos{Final: true}, Hand: HandParking, FinRecord: true, Handover: true},
			WriteOK, Parking{Ended: true}, NoRecord},
		{"let go meanwhile", Run{Phase: Stopped, Hand: HandParking}, WriteOK, Parking{Ended: true}, NoRecord},
		{"ended, nothing written", Run{Phase: Ended, Hand: HandParking}, NotWritten, Parking{Ended: true}, NoRecord},
		{"run now meanwhile", Run{Hand: HandNow}, WriteOK, Parking{Settle: true, Now: true}, Written},
		{"dropped meanwhile", Run{Hand: HandDrop}, WriteOK, Parking{Settle: true, Drop: true}, Written},
	} {
		r := tc.r
		if got := Parked(&r, tc.w); got != tc.want || r.Record != tc.record || r.Hand != NoHand {
			t.Errorf("%s: %+v, record %v, hand %v; want %+v, record %v, no hand", tc.name, got, r.Record, r.Hand, tc.want, tc.record)
		}
	}
}
