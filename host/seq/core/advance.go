package core

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// Outcome is how a run ended.
type Outcome uint8

const (
	Completed Outcome = iota
	Failed
	Cancelled
	Restarted
	Stop    // let go of: the runner stopped, or the run's place moved
	Dropped // a waiting step dropped when it came due, or by an operator
)

var outcomeNames = [...]string{"completed", "failed", "cancelled", "restarted", "stopped", "dropped"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "?"
}

// OutcomeOf is the outcome a record of finally steps names: any but a
// stop, which ends no run for good.
func OutcomeOf(s string) (Outcome, bool) {
	for i, n := range outcomeNames {
		if n == s && Outcome(i) != Stop {
			return Outcome(i), true
		}
	}
	return 0, false
}

// Shape is what a move reads of a rule: how many steps, passes and
// finally steps it has, and the gap between two passes.
type Shape struct {
	Steps   int
	Passes  int // 0 reads as 1
	Finally int
	Gap     time.Duration
}

// ShapeOf is r's shape, for a sequence of steps and finally steps.
func ShapeOf(r *rules.Rule, steps, finally int) Shape {
	return Shape{Steps: steps, Passes: r.Repeat.Passes, Finally: finally, Gap: r.Repeat.Interval}
}

func (sh Shape) passes() int { return max(sh.Passes, 1) }

// MoveKind is what comes after a step.
type MoveKind uint8

const (
	// Next: the run goes on at Move.To, a step of the same pass (or the
	// next finally step).
	Next MoveKind = iota
	// NextPass: the run goes on at Move.To, the first step of its next
	// pass, after Move.Gap.
	NextPass
	// Complete: the run's steps are done; it completes.
	Complete
	// Fail: the step failed for good; the run fails.
	Fail
	// Closed: the run's finally steps are done; it ends with the outcome
	// it ended with (Run.Why).
	Closed
)

// Move is what a run does after a step.
type Move struct {
	Kind MoveKind
	To   Pos
	Gap  time.Duration
}

// Advance is the move of a run whose step at p is done (failed: it failed
// for good — not tried again, and not on-error: continue). A finally
// step's failure does not stop the finally steps after it: the run's
// outcome says it (the driver's).
func Advance(p Pos, sh Shape, failed bool) Move {
	switch {
	case p.Final && p.Step+1 < sh.Finally:
		return Move{Kind: Next, To: Pos{Step: p.Step + 1, Pass: p.Pass, Final: true}}
	case p.Final:
		return Move{Kind: Closed}
	case failed:
		return Move{Kind: Fail}
	case p.Step+1 < sh.Steps:
		return Move{Kind: Next, To: Pos{Step: p.Step + 1, Pass: p.Pass}}
	case p.Pass+1 < sh.passes():
		return Move{Kind: NextPass, To: Pos{Pass: p.Pass + 1}, Gap: sh.Gap}
	}
	return Move{Kind: Complete}
}

// Reads reports whether a step after p may read the output of the step at
// p: a later step of the pass, a later pass (which sees its own pass's
// outputs only, but its finally steps see the last pass's), a finally
// step. The driver bounds an output only when one may.
func Reads(p Pos, sh Shape) bool {
	if p.Final {
		return p.Step+1 < sh.Finally
	}
	return p.Step+1 < sh.Steps || p.Pass+1 < sh.passes() || sh.Finally > 0
}

// Past is what happens to the record of a run let go of while its step at
// p ran (its process stopping, its place moved), once the step succeeded.
type Past uint8

const (
	// PastKeep: the record stays as it is: the next start runs the step
	// again (at least once). A run with another pass or finally steps to
	// go is here: their position is not one a record of a step can name.
	PastKeep Past = iota
	// PastMove: the record is written again for the step after p (MovePast's Pos).
	PastMove
	// PastDrop: the run's steps are done; its record goes.
	PastDrop
)

// MovePast is what becomes of a let-go run's record once its step at p
// succeeded: written again for the next step (at the Pos returned), kept,
// or dropped.
func MovePast(p Pos, sh Shape) (Past, Pos) {
	switch {
	case p.Final:
		return PastKeep, p
	case p.Step+1 < sh.Steps:
		return PastMove, Pos{Step: p.Step + 1, Pass: p.Pass}
	case p.Pass+1 < sh.passes() || sh.Finally > 0:
		return PastKeep, p
	}
	return PastDrop, p
}

// Retry says whether attempt (from 1) of a step with retry rt, having
// failed, is tried again and after how long (0: not), and what the
// execution log says of it. permanent: the plugin said a retry would fail
// the same way. jitter draws the backoff's jitter in [0, 1); it is asked
// only for a wait there will be (Jitter is the driver's).
func Retry(rt rules.Retry, attempt int, permanent bool, jitter func() float64) (time.Duration, string) {
	switch {
	case rt.Attempts <= 1:
		return 0, ""
	case permanent:
		return 0, fmt.Sprintf("attempt %d of %d; not retried: the plugin says a retry would fail the same way", attempt, rt.Attempts)
	case attempt >= rt.Attempts:
		return 0, fmt.Sprintf("attempt %d of %d, the last", attempt, rt.Attempts)
	}
	d := rt.Delay(attempt+1, jitter())
	return max(d, time.Millisecond), fmt.Sprintf("attempt %d of %d; tried again in %v", attempt, rt.Attempts, d.Round(time.Millisecond))
}

// Jitter is a retry's jitter draw in [0, 1): a hash of the attempt's
// identity rather than a random number, so that the wait is the same
// however often it is worked out, and a scenario test on the virtual
// clock sees the same times on every run.
func Jitter(run, step string, pass, attempt int) float64 {
	h := fnv.New64a()
	var b []byte
	b = append(b, run...)
	b = append(b, '/')
	b = append(b, step...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(pass), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(attempt), 10)
	h.Write(b)
	return float64(h.Sum64()>>11) / (1 << 53)
}
