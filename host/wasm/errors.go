package wasm

import (
	"fmt"
	"time"

	"github.com/ruled-dev/ruled/abi"
)

// Cause says why a call failed.
type Cause uint8

const (
	// CausePlugin: the plugin returned an error (its text is in the
	// CallError). The instance is fine and goes back to the pool.
	CausePlugin Cause = iota + 1
	// CauseConfig: the plugin refused a config.
	CauseConfig
	// CauseDeadline: the call ran past its deadline and was stopped.
	CauseDeadline
	// CauseFuel: the call used up its fuel budget.
	CauseFuel
	// CauseMemory: the guest ran out of memory under its page cap.
	CauseMemory
	// CauseTrap: the guest trapped (panic, unreachable, out-of-bounds
	// access, stack overflow) or exited.
	CauseTrap
	// CauseABI: the guest broke the ABI (a result outside its memory, a
	// result over the size limit, an unknown handle).
	CauseABI
)

var causeNames = [...]string{"", "plugin error", "config refused", "deadline exceeded",
	"fuel exhausted", "memory limit", "trap", "abi violation"}

func (c Cause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return fmt.Sprintf("cause %d", c)
}

// CallError is a failed call into a plugin. Every failure a caller sees is
// one, so a rule's error handling can tell a plugin's "no" (CausePlugin)
// from a plugin that misbehaved.
type CallError struct {
	Plugin   string
	Function string
	Cause    Cause
	Status   abi.Status // the status the guest returned, for CausePlugin/CauseConfig
	Text     string     // the guest's error text, or what went wrong
	// Overrun is how long a call stopped for CauseDeadline kept running
	// after the host told it to stop (the deadline timer's own latency
	// comes on top).
	Overrun time.Duration
	Err     error // the runtime's error, for traps
}

func (e *CallError) Error() string {
	where := "plugin " + e.Plugin
	if e.Function != "" {
		where += ": " + e.Function
	}
	switch e.Cause {
	case CausePlugin, CauseConfig:
		return where + ": " + e.Text
	}
	s := where + ": " + e.Cause.String()
	if e.Text != "" {
		s += ": " + e.Text
	}
	return s
}

func (e *CallError) Unwrap() error { return e.Err }

// Permanent reports whether the plugin said a retry would fail the same
// way (abi.StatusPermanent): the runner does not retry the step.
func (e *CallError) Permanent() bool {
	return e.Cause == CausePlugin && e.Status == abi.StatusPermanent
}

// poisons reports whether the instance a call failed on must be replaced.
func (e *CallError) poisons() bool {
	switch e.Cause {
	case CausePlugin, CauseConfig:
		return false
	}
	return true
}

// stageError is a failed call during loading (start-up, handshake,
// describe). It prints without the plugin's name, which the load error
// around it already gives, and unwraps to the CallError.
type stageError struct {
	stage string
	ce    *CallError
}

func (e *stageError) Error() string {
	s := e.stage + ": " + e.ce.Cause.String()
	if e.ce.Text != "" {
		s += ": " + e.ce.Text
	}
	return s
}

func (e *stageError) Unwrap() error { return e.ce }

// atStage names the loading stage an error happened in.
func atStage(stage string, err error) error {
	if ce, ok := err.(*CallError); ok {
		return &stageError{stage, ce}
	}
	return fmt.Errorf("%s: %w", stage, err)
}

// NotGrantedError refuses a module at load that needs a capability its
// grant (Options.Grant) lacks: an import of a host function, or a
// function whose description says it Needs one. The caller knows how its
// operator grants one (a flag, a config file) and says so.
type NotGrantedError struct {
	Capability abi.Capability
	// What needs it: "imports ruled.publish" or `function "alarm"`.
	What string
}

func (e *NotGrantedError) Error() string {
	return fmt.Sprintf("%s, which needs the %q capability: not granted to the plugin", e.What, e.Capability)
}
