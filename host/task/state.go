package task

import (
	"errors"
	"fmt"
	"time"
)

// StateCode is the actual state key. The State struct adds additional
// metadata related to certain StateCodes.
type StateCode string

const (
	Runnable  StateCode = "runnable"  // Scheduled
	Sleeping  StateCode = "sleeping"  // Scheduled, not running until time has elapsed
	Completed StateCode = "completed" // Terminal, not scheduled
	Killed    StateCode = "killed"    // Terminal, not scheduled
	Failed    StateCode = "failed"    // Terminal, not scheduled
	Fault     StateCode = "fault"     // Scheduled, in error handling / retry logic
	Paused    StateCode = "paused"    // Scheduled, not running
)

// States lists every state, in the seed's order.
var States = []StateCode{Runnable, Sleeping, Completed, Killed, Failed, Fault, Paused}

// Terminal reports whether nothing leaves the state through the table (only
// an operator's reset does).
func (s StateCode) Terminal() bool { return s == Completed || s == Killed || s == Failed }

// MessageCode is the symbolic name of a state transition.
type MessageCode string

const (
	Run        MessageCode = "run"
	Sleep      MessageCode = "sleep"
	Pause      MessageCode = "pause"
	Kill       MessageCode = "kill"
	Error      MessageCode = "error"
	Complete   MessageCode = "complete"
	Checkpoint MessageCode = "checkpoint"
	// Special event which triggers state machine to exit without
	// transitioning between states.
	Release MessageCode = "release"
)

// ResetEvent names an operator's reset (Reset) in errors and in a rule's
// History; it is not one of the seed's messages, and Apply refuses it.
const ResetEvent MessageCode = "reset"

// Messages lists every message, in the seed's order.
var Messages = []MessageCode{Run, Sleep, Pause, Kill, Error, Complete, Checkpoint, Release}

func (m MessageCode) String() string { return string(m) }

// Message is an event that causes a state transition. Until and Err are
// used by the Sleep and Error messages respectively.
type Message struct {
	Code MessageCode `json:"message"`
	// Until is when the statemachine should transition from sleeping to
	// runnable.
	Until *time.Time `json:"until,omitempty"`
	// Err is the error that caused this Error message.
	Err error `json:"error,omitempty"`
	// By is who sent an operator's command ("uid 1000", "token ops"),
	// kept in the hops it makes: not stored with the state.
	By string `json:"by,omitempty"`
}

func RunMessage() *Message        { return &Message{Code: Run} }
func PauseMessage() *Message      { return &Message{Code: Pause} }
func KillMessage() *Message       { return &Message{Code: Kill} }
func CompleteMessage() *Message   { return &Message{Code: Complete} }
func CheckpointMessage() *Message { return &Message{Code: Checkpoint} }
func ReleaseMessage() *Message    { return &Message{Code: Release} }

// SleepMessage is a simpler helper for creating sleep messages from a time.
func SleepMessage(t time.Time) *Message { return &Message{Code: Sleep, Until: &t} }

// ErrorMessage is a simpler helper for creating error messages from an
// error.
func ErrorMessage(err error) *Message { return &Message{Code: Error, Err: err} }

// State represents the current state of a rule. Until and Errors are extra
// state used by the Sleeping and Fault states respectively; Errors is kept
// (trimmed by the error handler) across them, since the error rate is
// counted over time. Since is when the rule entered the state.
type State struct {
	Code   StateCode  `json:"state"`
	Until  *time.Time `json:"until,omitempty"`
	Errors []Err      `json:"errors,omitempty"`
	Since  time.Time  `json:"since"`
	// Reason says why a rule is failed when it was not its errors (a state
	// that would not decode, for one).
	Reason string `json:"reason,omitempty"`
}

// Err represents an error that occurred while a rule was running.
//
// NewErr preserves the underlying error, so that Err can be converted back
// with errors.As: an error handler can inspect what failed (a plugin's trap,
// a timeout) and decide accordingly. A stored Err has only the text.
type Err struct {
	Time time.Time `json:"timestamp"`
	Err  string    `json:"error"`
	err  error
}

// NewErr records err at t.
func NewErr(err error, t time.Time) Err {
	e := Err{Time: t, err: err}
	if err != nil {
		e.Err = err.Error()
	}
	return e
}

func (e Err) Error() string { return e.Err }

// Unwrap returns the underlying error, nil for one loaded from a store.
func (e Err) Unwrap() error { return e.err }

var (
	MissingUntilError  = errors.New("sleeping state missing deadline")
	MissingErrorsError = errors.New("fault state has no errors")
	ReleasableError    = errors.New("network error, release and retry")
)

// ExceededErrorRate is returned by error handlers in an Error Message when
// retry logic has been exhausted for a rule and it should transition to
// Failed.
var ExceededErrorRate = errors.New("exceeded error rate")

// Transition represents a state machine transition from one state to
// another given an event message.
type Transition struct {
	Event MessageCode
	From  StateCode
	To    StateCode
}

func (t Transition) String() string { return fmt.Sprintf("%v---%v--->%v", t.From, t.Event, t.To) }

// Rules is the state transition table.
var Rules = [...]Transition{
	{Event: Checkpoint, From: Runnable, To: Runnable},
	{Event: Release, From: Runnable, To: Runnable},
	{Event: Sleep, From: Runnable, To: Sleeping},
	{Event: Complete, From: Runnable, To: Completed},
	{Event: Kill, From: Runnable, To: Killed},
	{Event: Error, From: Runnable, To: Fault},
	{Event: Pause, From: Runnable, To: Paused},
	{Event: Run, From: Runnable, To: Runnable},

	{Event: Checkpoint, From: Sleeping, To: Sleeping},
	{Event: Release, From: Sleeping, To: Sleeping},
	{Event: Sleep, From: Sleeping, To: Sleeping},
	{Event: Run, From: Sleeping, To: Runnable},
	{Event: Kill, From: Sleeping, To: Killed},
	{Event: Pause, From: Sleeping, To: Paused},
	{Event: Error, From: Sleeping, To: Fault},

	{Event: Sleep, From: Fault, To: Sleeping},
	{Event: Error, From: Fault, To: Failed},

	{Event: Checkpoint, From: Paused, To: Paused},
	{Event: Release, From: Paused, To: Paused},
	{Event: Run, From: Paused, To: Runnable},
	{Event: Sleep, From: Paused, To: Sleeping},
	{Event: Kill, From: Paused, To: Killed},
	{Event: Pause, From: Paused, To: Paused},
}
