package seq

import (
	"context"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
)

// Call is what a condition or an action is given: the call's description
// and the event, as the ABI hands them to a plugin. It has the shape of
// wasm.Call, so the daemon, which wires a plugin's handle in as an Action,
// converts one pointer to the other for nothing; this package does not
// know that plugins are wasm.
type Call struct {
	Info abi.CallInfo
	// View is the event as abi.ViewBuilder built it, without its raw
	// section.
	View []byte
	// Raw is the event's JSON.
	Raw []byte
	// Context is the view of the run's context (abi.CallInput.Context):
	// the outputs of its steps so far, its variables, the states its rule
	// reads and its trigger's previous state; nil when it has none.
	Context []byte
	// Effects, when not nil, is told what the call did beyond its answer,
	// one line each, for the execution log: the events it published and
	// the kv keys it wrote or deleted, at most MaxEffects lines.
	Effects *[]string
	// Hops and Chain are the run's trigger's (bus.Event): an event the
	// call publishes or fires is one hop further, for the host's bound on
	// loops of rules. Not part of the ABI.
	Hops  int
	Chain string
	// Owed, when not nil, takes what the call's services still owe it when
	// it returns: a write they queued (a publish into the MQTT outbox)
	// that must be in the store before the call's result counts. Its
	// caller runs each (each waits, and returns the write's error) before
	// it acts on the result, and may do so on a goroutine other than the
	// worker's, so that the writes of the calls after it share one
	// commit. With Owed nil a service waits itself, inside the host call.
	Owed *[]func() error
	// Published counts the events the call has published so far (its
	// publisher names them by it). Not part of the ABI.
	Published int
	// Trace is the traceparent of the step's span (host/traces), "" when
	// no trace is sent: an outbound request carries it, and an event the
	// step publishes or fires. Not part of the ABI.
	Trace string
}

// Action does a step.
type Action interface {
	Act(ctx context.Context, c *Call) ([]byte, error)
}

// Condition decides.
type Condition interface {
	When(ctx context.Context, c *Call) (bool, error)
}

// Sequence is a rule with every step built into a runnable action.
type Sequence struct {
	Rule *rules.Rule
	When Condition // the rule-level condition; nil when the rule has none
	// WhenDo (plugin.function) and WhenDigest (its module) name When in
	// the execution log.
	WhenDo     string
	WhenDigest string
	Steps      []CompiledStep
	// Finally run when a run ends for any cause but Stop (rules.Rule.Finally).
	Finally []CompiledStep
	// Vars renders the rule's variables from the trigger when a run starts
	// (rules.Rule.Vars); nil when it has none.
	Vars *tmpl.Template
	// States are the entities' states its calls read (rules.Rule.States),
	// each when the call is made.
	States []StateRead
	// Previous says its calls read the trigger's previous state
	// (rules.Rule.ReadsPrevious): a run keeps it from its start.
	Previous bool
	// Sun says its calls read the sun's place (rules.Rule.ReadsSun), as
	// it is when each is made.
	Sun bool
	// WhenValues renders, for the execution log and Runner.WhyNot, what
	// each path the rule's condition reads held (an expression's); nil
	// when the host cannot know what the condition reads. WhenInput is a
	// condition plugin's config as rendered for the trigger instead.
	WhenValues, WhenInput *tmpl.Template
}

// CompiledStep is one step ready to submit. When is nil for a step with no
// condition of its own. After is zero for a step that runs as soon as it is
// reached; a step with After greater than zero parks on a timer for that
// long before it is submitted. Durable, which only a step with After can be,
// puts that pending fire in the datastore so a restart during the wait can
// pick it up again. Fingerprint identifies what the step was configured to
// do, so a record written for it can be told apart from a record written for
// whatever now sits under the same name; Digest is the module it calls.
type CompiledStep struct {
	Name    string
	Do      string // plugin.function, for the execution log
	Action  Action
	When    Condition
	After   time.Duration
	Durable bool
	// ContinueOnError goes on to the next step when this one fails.
	ContinueOnError bool
	// Retry is how a failed action is tried again (rules.Step.Retry).
	Retry       rules.Retry
	Fingerprint string
	Digest      string
	// Wait makes the step a wait-for (rules.Wait): no Action.
	Wait *Wait
	// Input renders the step's config as its call sees it and WhenValues
	// what its condition's paths held, for the execution log; nil when
	// there is nothing to show (Sequence.WhenValues).
	Input, WhenValues *tmpl.Template
}

// Pool is what the runner submits to (host/pool.Pool). Only TrySubmit may
// refuse; it is used for admissions alone.
type Pool interface {
	TrySubmit(pool.Job) bool
	Submit(pool.Job)
}

// Scheduler parks callbacks (host/sched.Scheduler, or sched.Virtual in
// tests). Now is the wall clock pending records are dated by.
type Scheduler = sched.Clock

// Logger is the runner's log: go-hclog's methods, so an hclog.Logger is one.
type Logger interface {
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}
