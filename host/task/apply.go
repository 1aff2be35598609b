package task

import (
	"errors"
	"fmt"
	"time"
)

const (
	// DefaultErrLifetime is how far back errors count towards the rate.
	DefaultErrLifetime = -4 * time.Hour
	// DefaultErrMax errors within DefaultErrLifetime fail a rule.
	DefaultErrMax = 8
	// DefaultSleep is how long a rule sleeps after an error below the rate.
	DefaultSleep = 10 * time.Minute
)

// ErrHandler decides what an error does to a rule: given its errors (the
// newest last) and the time, it returns a Sleep message (back off) or an
// Error message (fail), and the errors to keep. Either ErrHandler and/or
// StateStore should trim the error slice to keep it from growing without
// bound.
type ErrHandler func(rule string, errs []Err, now time.Time) (*Message, []Err)

// Limits are a rule's error budget.
type Limits struct {
	Max    int           // errors within Within that fail the rule. default: DefaultErrMax
	Within time.Duration // default: 4h
	Sleep  time.Duration // the back-off after an error. default: DefaultSleep
}

// Handler returns the error handler for l: fail after Max errors within
// Within, otherwise sleep for Sleep. It keeps only the errors within the
// window (at most Max of them).
func (l Limits) Handler() ErrHandler {
	if l.Max <= 0 {
		l.Max = DefaultErrMax
	}
	if l.Within <= 0 {
		l.Within = -DefaultErrLifetime
	}
	if l.Sleep <= 0 {
		l.Sleep = DefaultSleep
	}
	return func(_ string, errs []Err, now time.Time) (*Message, []Err) {
		cutoff := now.Add(-l.Within)
		kept := errs[:0:0]
		for _, e := range errs {
			if !e.Time.Before(cutoff) {
				kept = append(kept, e)
			}
		}
		if len(kept) > l.Max {
			kept = kept[len(kept)-l.Max:]
		}
		if len(kept) >= l.Max {
			return ErrorMessage(ExceededErrorRate), kept
		}
		return SleepMessage(now.Add(l.Sleep)), kept
	}
}

// DefaultErrHandler returns a Fail message if 8 errors have occurred in 4
// hours. Otherwise it enters the Sleep state for 10 minutes before trying
// again.
func DefaultErrHandler(rule string, errs []Err, now time.Time) (*Message, []Err) {
	return Limits{}.Handler()(rule, errs, now)
}

// IllegalError is a message the transition table does not allow in a state.
type IllegalError struct {
	Event MessageCode
	State StateCode
}

func (e *IllegalError) Error() string {
	if e.Event == ResetEvent {
		return fmt.Sprintf("task: reset is not allowed while %s (it is for a failed, killed or completed rule)", e.State)
	}
	return fmt.Sprintf("task: %s is not allowed while %s", e.Event, e.State)
}

// Lookup finds the table's transition for an event from a state.
func Lookup(event MessageCode, from StateCode) (Transition, bool) {
	for _, t := range Rules {
		if t.Event == event && t.From == from {
			return t, true
		}
	}
	return Transition{}, false
}

// Apply returns the state a message moves s to at now, or an error when
// the table has no such transition (an *IllegalError) or the message lacks
// what it needs (MissingUntilError). It does not modify s.
//
// An Error message goes through Fault: the error joins the rule's errors,
// the error handler rules on them, and its Sleep (back off) or Error (fail)
// message is applied from Fault at once, so a rule is never left in Fault.
// A Release leaves the state as it is, as the table says.
func Apply(s State, m *Message, now time.Time, eh ErrHandler, rule string) (State, error) {
	next, _, err := Walk(s, m, now, eh, rule)
	return next, err
}

// Hop is one transition of the table a message made: an Error message
// makes two (into Fault, and out of it by the error handler's verdict).
type Hop struct {
	Time  time.Time   `json:"time"`
	Event MessageCode `json:"event"`
	From  StateCode   `json:"from"`
	To    StateCode   `json:"to"`
	By    string      `json:"by,omitempty"` // an operator's command: who sent it
}

func (h Hop) String() string { return fmt.Sprintf("%v---%v--->%v", h.From, h.Event, h.To) }

// Walk is Apply that also returns the hops the message made, in order, so
// that a rule passing through Fault is seen doing so (Tasks.History).
func Walk(s State, m *Message, now time.Time, eh ErrHandler, rule string) (State, []Hop, error) {
	return walk(s, m, now, eh, rule, nil)
}

func walk(s State, m *Message, now time.Time, eh ErrHandler, rule string, hops []Hop) (State, []Hop, error) {
	t, ok := Lookup(m.Code, s.Code)
	if !ok {
		return s, nil, &IllegalError{Event: m.Code, State: s.Code}
	}
	hops = append(hops, Hop{Time: now, Event: m.Code, From: s.Code, To: t.To})
	next := State{Code: t.To, Errors: s.Errors, Since: s.Since, Reason: s.Reason}
	if t.To != s.Code {
		next.Since, next.Reason = now, ""
	}
	switch m.Code {
	case Sleep:
		if m.Until == nil {
			return s, nil, MissingUntilError
		}
		u := *m.Until
		next.Until = &u
	case Error:
		if eh == nil {
			eh = DefaultErrHandler
		}
		if t.To == Failed { // the error handler's verdict, from Fault
			// The verdict is not one more error of the rule's: the errors
			// that led to it stay as they were counted, and it becomes the
			// reason the rule failed.
			next.Reason = ExceededErrorRate.Error()
			if m.Err != nil {
				next.Reason = m.Err.Error()
			}
			if !errors.Is(m.Err, ExceededErrorRate) {
				next.Errors = append(append([]Err(nil), s.Errors...), NewErr(m.Err, now))
			}
			return next, hops, nil
		}
		errs := append(append([]Err(nil), s.Errors...), NewErr(m.Err, now))
		next.Errors = errs
		verdict, kept := eh(rule, errs, now)
		next.Errors = kept
		if len(next.Errors) == 0 {
			return s, nil, MissingErrorsError
		}
		return walk(next, verdict, now, eh, rule, hops)
	case Run:
		next.Until = nil
	}
	if t.To == Sleeping && m.Code != Sleep {
		next.Until = s.Until // Checkpoint or Release while sleeping
	}
	return next, hops, nil
}

// Reset brings a failed, killed or completed rule back to runnable with its
// errors cleared: the seed's table has no way out of a terminal state, and
// an operator who fixed a plugin needs one.
func Reset(s State, now time.Time) (State, error) {
	if !s.Code.Terminal() {
		return s, &IllegalError{Event: ResetEvent, State: s.Code} // only out of a terminal state
	}
	return State{Code: Runnable, Since: now}, nil
}
