package task

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/golden"
)

// seedTable is the seed's transition table, copied by hand from Metafora's statemachine (ARCHITECTURE.md, "Where the design came from") —
// not generated from Rules — so that the test can catch an edit to Rules.
var seedTable = []struct{ event, from, to string }{
	{"checkpoint", "runnable", "runnable"},
	{"release", "runnable", "runnable"},
	{"sleep", "runnable", "sleeping"},
	{"complete", "runnable", "completed"},
	{"kill", "runnable", "killed"},
	{"error", "runnable", "fault"},
	{"pause", "runnable", "paused"},
	{"run", "runnable", "runnable"},
	{"checkpoint", "sleeping", "sleeping"},
	{"release", "sleeping", "sleeping"},
	{"sleep", "sleeping", "sleeping"},
	{"run", "sleeping", "runnable"},
	{"kill", "sleeping", "killed"},
	{"pause", "sleeping", "paused"},
	{"error", "sleeping", "fault"},
	{"sleep", "fault", "sleeping"},
	{"error", "fault", "failed"},
	{"checkpoint", "paused", "paused"},
	{"release", "paused", "paused"},
	{"run", "paused", "runnable"},
	{"sleep", "paused", "sleeping"},
	{"kill", "paused", "killed"},
	{"pause", "paused", "paused"},
}

func seedTo(event MessageCode, from StateCode) (string, bool) {
	for _, r := range seedTable {
		if r.event == string(event) && r.from == string(from) {
			return r.to, true
		}
	}
	return "", false
}

func TestRulesAreTheSeedsTable(t *testing.T) {
	if len(Rules) != len(seedTable) {
		t.Fatalf("%d rules; the seed has %d", len(Rules), len(seedTable))
	}
	for i, r := range Rules {
		s := seedTable[i]
		if string(r.Event) != s.event || string(r.From) != s.from || string(r.To) != s.to {
			t.Errorf("rule %d is %v; the seed's is %s---%s--->%s", i, r, s.from, s.event, s.to)
		}
	}
}

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// TestTransitions runs testdata/transitions.txt: all 8 events × 7 states.
// Each block's expectation is checked twice: against the script, and
// against the seed's table held literally above.
func TestTransitions(t *testing.T) {
	seen := map[string]bool{}
	golden.RunScript(t, "testdata/transitions.txt", func(b golden.Block) string {
		from, event := StateCode(b.Args["from"]), MessageCode(b.Args["event"])
		seen[string(from)+"/"+string(event)] = true
		s := State{Code: from, Since: t0}
		if from == Sleeping {
			u := t0.Add(time.Hour)
			s.Until = &u
		}
		m := &Message{Code: event}
		switch event {
		case Sleep:
			u := t0.Add(30 * time.Minute)
			m.Until = &u
		case Error:
			m.Err = errors.New("plugin trapped")
		}
		next, err := Apply(s, m, t0.Add(time.Minute), nil, "r")
		want, allowed := seedTo(event, from)
		switch {
		case err != nil && allowed:
			t.Errorf("%s from %s: %v; the seed allows it (to %s)", event, from, err, want)
		case err == nil && !allowed:
			t.Errorf("%s from %s: allowed; the seed's table has no such transition", event, from)
		case err == nil && event != Error && string(next.Code) != want:
			t.Errorf("%s from %s: %s; the seed says %s", event, from, next.Code, want)
		}
		if err != nil {
			return "error: " + err.Error()
		}
		return describe(next, t0)
	})
	if len(seen) != len(States)*len(Messages) {
		t.Errorf("the script covers %d pairs; want all %d", len(seen), len(States)*len(Messages))
	}
}

// describe prints a state relative to base.
func describe(s State, base time.Time) string {
	out := string(s.Code)
	if s.Until != nil {
		out += fmt.Sprintf(" until=+%v", s.Until.Sub(base))
	}
	if s.Reason != "" {
		out += fmt.Sprintf(" reason=%q", s.Reason)
	}
	if len(s.Errors) > 0 {
		var es []string
		for _, e := range s.Errors {
			es = append(es, fmt.Sprintf("+%v:%s", e.Time.Sub(base), e.Err))
		}
		out += " errors=[" + strings.Join(es, " ") + "]"
	}
	return out
}

// TestErrorHandler runs testdata/errors.txt: a rule's errors over time
// against the default budget and against a per-rule one.
func TestErrorHandler(t *testing.T) {
	var s State
	var eh ErrHandler
	golden.RunScript(t, "testdata/errors.txt", func(b golden.Block) string {
		at := t0
		if v := b.Args["at"]; v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatal(err)
			}
			at = t0.Add(d)
		}
		var err error
		switch b.Cmd {
		case "new":
			s, eh = State{Code: Runnable, Since: t0}, DefaultErrHandler
			if b.Args["max"] != "" {
				var l Limits
				fmt.Sscan(b.Args["max"], &l.Max)
				l.Within, _ = time.ParseDuration(b.Args["within"])
				l.Sleep, _ = time.ParseDuration(b.Args["sleep"])
				eh = l.Handler()
			}
		case "error":
			s, err = Apply(s, ErrorMessage(errors.New(b.Args["err"])), at, eh, "r")
		case "wake":
			s, err = Apply(s, RunMessage(), at, eh, "r")
		case "reset":
			s, err = Reset(s, at)
		default:
			t.Fatalf("unknown command %q", b.Cmd)
		}
		if err != nil {
			return "error: " + err.Error()
		}
		return describe(s, t0)
	})
}

func TestSleepNeedsADeadline(t *testing.T) {
	_, err := Apply(State{Code: Runnable}, &Message{Code: Sleep}, t0, nil, "r")
	if !errors.Is(err, MissingUntilError) {
		t.Errorf("got %v; want MissingUntilError", err)
	}
}

func TestErrKeepsTheUnderlyingError(t *testing.T) {
	type trap struct{ error }
	cause := trap{errors.New("unreachable")}
	s, err := Apply(State{Code: Runnable}, ErrorMessage(cause), t0, nil, "r")
	if err != nil {
		t.Fatal(err)
	}
	var got trap
	if !errors.As(s.Errors[0], &got) || got != cause {
		t.Errorf("errors.As lost the cause: %#v", s.Errors[0])
	}
}
