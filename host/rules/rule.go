package rules

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Rule is one rule as its file declares it, checked and with defaults filled
// in. It is immutable once loaded: the sequencer and the daemon share it.
type Rule struct {
	ID          string
	Description string
	Pos         Pos // where the rule starts in its file
	// Source is the rule's text as its file has it (the lines from its
	// first key to its last value, comments between them kept): what an
	// operator's console shows as its definition. Not part of what the
	// rule does (a fingerprint or the engine's definition hash).
	Source string

	// On lists the topics that trigger the rule. A pattern matches topic
	// segments (split at '.'): `*` matches exactly one segment and `>`, only
	// as the last segment, one or more. No pattern matches a reserved
	// `ruled.` topic.
	On []Pattern
	// Schedules are the rule's triggers on the clock (on: {schedule} or
	// {every}), beside or instead of topics.
	Schedules []Schedule
	// Changes are the rule's triggers on a change of an entity's state
	// (on: {topic, changes, from, to}), beside or instead of topics.
	Changes []Change
	// Closes are the rule's triggers on a tumbling window's close (on:
	// {window, closed: true}): its event carries the period's aggregates.
	Closes []WindowClose
	// When is the rule-level condition, nil when the rule has none.
	When *Call

	Mode Mode
	// Max bounds the runs a key may have, as Home Assistant counts them:
	// for ModeQueue the runs live and waiting together (max: 2 is one
	// running and one queued), for ModeParallel the runs at once.
	// default 10.
	Max int
	// MaxKeys bounds the keys that hold something of the rule at once —
	// their runs, queued or throttled triggers, a cooldown, a debounced
	// trigger —, because whoever sends the events chooses the keys
	// (184,000 debounce keys took a device to 561 MB). A trigger of a new
	// key past it is refused, counted and logged. default DefaultMaxKeys.
	MaxKeys int
	// Cooldown suppresses triggers for this long after a run of the same key
	// starts. 0: none.
	Cooldown time.Duration
	// Debounce holds a key's triggers until they stop coming (For without
	// another), then starts one run with the last (Inngest's trailing
	// edge); MaxWait, when set, starts it at the latest that long after
	// the first. The zero value: none.
	Debounce Debounce
	// Throttle bounds how often a key's runs start: Limit every Per, Burst
	// at once after a quiet time (default Limit); a trigger past it waits
	// its turn (Drop false, default) or is dropped. The zero value: none.
	Throttle Throttle
	// Repeat runs the steps again: Passes times in all (default 1), waiting
	// Interval between the end of one pass and the start of the next.
	Repeat Repeat
	// CancelOn lists the events that end the rule's live runs.
	CancelOn []Cancel
	// Priority is the rule's band: 0 is served first, higher bands after.
	Priority int
	// Key is what concurrency, cooldown and fairness count by: "" for the
	// whole rule, or an event field path such as "vehicle".
	Key string
	// OnPluginChange says what a step that waited across a change of its
	// plugin's module does when it comes due: PluginPin (default) runs the
	// module it was scheduled with, PluginUpgrade the new one, PluginDrop
	// drops the step.
	OnPluginChange PluginChange
	// Once completes the rule (its task) after its first successful run.
	Once bool
	// OnError is the rule's error budget: its task fails after Max errors
	// within Within, and sleeps Sleep after each error below that. Zero
	// fields take the defaults (8 within 4h, sleep 10m).
	OnError ErrorBudget
	// OnPause is what a trigger does while the rule is paused or asleep:
	// dropped (counted as refused, logged), or held until the rule runs
	// again, up to its bound. default: held (up to DefaultHold) for a rule
	// with a durable step — its events are acknowledged as kept — or a
	// schedule — its occurrences were due —, dropped for any other.
	OnPause PauseTriggers
	// Retry is the rule's default for its steps (a step's own retry:
	// replaces it whole); the zero value does not retry.
	Retry Retry
	// Vars are the rule's variables (vars:), a JSON object whose strings
	// are templates over the trigger (abi/tmpl: "{{data.zone}}" keeps the
	// value's type, longer strings splice text in): worked out once when a
	// run starts, and read by its steps as vars.<name>. VarNames are their
	// names, in the file's order. nil: none.
	Vars     json.RawMessage
	VarNames []string
	// States are the entities' states the rule reads (states:), each
	// read when a call is made; nil: none.
	States []StateRead
	// WindowAggs are the aggregates its conditions and templates read of
	// the windows among States (states.<name>.<aggregate>), for the
	// directory's check of what each window keeps (CheckWindows).
	WindowAggs []WindowAgg
	// ReadsPrevious says a condition or template of the rule reads
	// previous.<path>, the trigger's entity's state before it: its runs
	// keep that state from their start.
	ReadsPrevious bool
	// Warnings are what the rule does that is allowed but likely a
	// mistake, found as it was read (Warnings reports them with the set's).
	Warnings []*Error
	// ReadsSun says a condition or template of the rule reads sun.<field>
	// (SunFields): its calls carry the sun's place when they are made.
	ReadsSun bool

	Steps []Step
	// Finally are the steps that run, in order, when a run ends for any
	// reason — done, failed, cancelled (cancel-on, a restart), dropped (its
	// rule killed or removed) — so that a device is left safe. Each runs whatever the one
	// before did; none waits (no after, durable or retry). A run keeps its
	// key's slot until they are done. Not when the process stops: a run
	// let go then goes on after the restart (a durable one) and its
	// finally steps run when it ends. A durable run's are recorded while
	// they run, and run again after a crash.
	Finally []Step
}

// Throttle is a rule's throttle: setting.
type Throttle struct {
	Limit int
	Per   time.Duration
	Burst int
	Drop  bool // excess: drop; default queue
}

// DefaultMaxKeys is a rule's MaxKeys when it says none: a device's
// vehicles, rooms or sensors fit many times over; an attacker's made-up
// keys cost at most ~2 MB a rule. MaxMaxKeys is the most a rule may say.
const (
	DefaultMaxKeys = 10_000
	MaxMaxKeys     = 1_000_000
)

// MaxThrottled bounds the triggers a key's throttle queues; one past it
// is refused.
const MaxThrottled = 1000

// Debounce is a rule's debounce: setting.
type Debounce struct {
	For, MaxWait time.Duration
}

// Retry is how often a failed step is tried again and how long it waits
// in between. Attempts counts every try, the first included, as
// Temporal's maximum attempts does: 1 (or 0) does not retry. The wait
// before attempt n (n ≥ 2) is Backoff × Factor^(n-2), at most MaxBackoff,
// less up to Jitter of itself (Delay).
type Retry struct {
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
	Factor     float64
	Jitter     float64
}

// The retry settings a retry: leaves out.
const (
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = 5 * time.Minute
	DefaultFactor     = 2.0
	DefaultJitter     = 0.2
	// MaxAttempts bounds attempts: River's 25 is the most any anchor
	// defaults to, and a step that fails a hundred times is not going to
	// succeed on the next try.
	MaxAttempts = 100
)

// Delay is the wait before attempt n (n ≥ 2) of a step; u in [0, 1)
// picks the jitter, so that a caller can make it the same for the same
// attempt (the runner hashes the attempt's identity): a replayed or
// re-judged wait is the one first written.
func (r Retry) Delay(n int, u float64) time.Duration {
	d := float64(r.Backoff)
	for i := 2; i < n && d < float64(r.MaxBackoff); i++ {
		d *= r.Factor
	}
	d = min(d, float64(r.MaxBackoff))
	return time.Duration(d * (1 - r.Jitter*u))
}

// PauseTriggers is a rule's on-pause setting.
type PauseTriggers struct {
	// Hold keeps the triggers that arrive while the rule is paused or
	// asleep, in arrival order, and starts them when it runs again.
	Hold bool
	// Max bounds the triggers held; one past it is dropped. Set when Hold.
	Max int
}

// DefaultHold is how many triggers `on-pause: hold` keeps.
const DefaultHold = 1000

// ErrorBudget is a rule's on-error setting.
type ErrorBudget struct {
	Max    int
	Within time.Duration
	Sleep  time.Duration
}

// Pos is a place in a rule file.
type Pos struct {
	File      string
	Line, Col int
}

// Call names a plugin function and the config it is configured with.
type Call struct {
	Plugin   string
	Function string
	// With is the config as canonical JSON (keys sorted, no insignificant
	// space), so equal configs compare equal byte for byte; "{}" when the
	// rule gives none.
	With []byte
	// Pos is where the function is named (the do: value, or the shorthand
	// condition string); WithPos where its config is (the with: value, or
	// Pos when there is none), so a config the plugin refuses is reported
	// where it is written.
	Pos, WithPos Pos
	// Expr is the expression of a string when: (when: battery < 20),
	// which the host evaluates itself (exprcheck.Program); "" for a
	// plugin's call. Plugin, Function and With still say expr.expr and
	// the expression, so its fingerprint is what it always was.
	Expr string
}

// Native reports whether the host runs c itself: a string when:.
func (c *Call) Native() bool { return c != nil && c.Expr != "" }

// Step is one step of a rule.
type Step struct {
	// Name identifies the step across edits of its rule; an unnamed step is
	// called by its index ("0", "1", ...).
	Name  string
	Index int
	Do    Call
	When  *Call
	// After delays the step: it is submitted this long after the step before
	// it (or the start of the pass) finished.
	After time.Duration
	// Durable keeps the waiting step in the store, so it survives a restart.
	// Only a step with After can be durable.
	Durable bool
	// ContinueOnError (`on-error: continue`) goes on to the next step when
	// this one fails (its condition or its action); the default, `stop`,
	// ends the run as failed. The failure still counts against the rule's
	// error budget and shows in the run's tree.
	ContinueOnError bool
	// Retry says how a failed action is tried again (the rule's retry:
	// unless the step has its own). A condition's error is not retried: a
	// condition sees only the event, so it would fail the same way.
	Retry Retry
	// Wait, when set, makes the step wait for an event instead of calling
	// an action (wait-for:); Do is then empty.
	Wait *Wait
	Pos  Pos
}

// Wait is a wait-for step: the run waits, without a worker or a goroutine,
// for an event on a topic matching Pattern whose Match paths equal its
// trigger's (as cancel-on correlates) and for which When, if set, holds —
// When sees the awaited event as its event, and the run's context. At most
// Timeout; then the run goes on (Continue, on-timeout: continue, the
// default) or ends there (on-timeout: stop). The event that came is
// steps.<name>.event to the steps after it; a timeout is
// steps.<name>.timeout, true. The wait is durable: a restart keeps
// waiting out what is left of it.
type Wait struct {
	Pattern  Pattern
	Match    []string
	When     *Call
	Timeout  time.Duration
	Continue bool
}

// Keeps reports whether the step keeps its wait in the store: a durable
// after, or a wait-for (always, as a retry's wait is). A rule with such a
// step has its triggers journaled and holds them while paused.
func (s *Step) Keeps() bool { return s.Durable || s.Wait != nil }

// MaxWaitTimeout bounds a wait-for's timeout.
const MaxWaitTimeout = 366 * 24 * time.Hour

// waitKeys are what a wait-for says; waitStepRefused what a wait-for step
// does not take beside it.
var (
	waitKeys         = []string{"topic", "match", "when", "timeout", "on-timeout"}
	waitStepRefused  = []string{"do", "with", "after", "durable", "retry", "on-error"}
	waitTimeoutNames = [...]string{"stop", "continue"}
)

// stepOnErrorNames are a step's on-error values, in ContinueOnError's
// order (false, true).
var stepOnErrorNames = [...]string{"stop", "continue"}

// Mode is what a trigger does while the rule (for its key) has a live run.
type Mode uint8

const (
	// ModeSingle ignores the trigger.
	ModeSingle Mode = iota
	// ModeRestart cancels the live run's tail and starts a new run.
	ModeRestart
	// ModeQueue starts the run after the live ones finish, up to Max waiting.
	ModeQueue
	// ModeParallel starts another run, up to Max at once.
	ModeParallel
)

var modeNames = [...]string{"single", "restart", "queue", "parallel"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "mode?"
}

// Repeat is a rule's repetition.
type Repeat struct {
	Passes   int
	Interval time.Duration
}

// Cancel is one cancel-on entry: events on Pattern end the rule's live
// runs; with Match, only runs whose trigger had the same values at those
// event paths as the cancelling event (e.g. the same vehicle).
type Cancel struct {
	Pattern Pattern
	Match   []string
}

// PluginChange is a rule's on-plugin-change policy.
type PluginChange uint8

const (
	PluginPin PluginChange = iota
	PluginUpgrade
	PluginDrop
)

var pluginChangeNames = [...]string{"pin", "upgrade", "drop"}

func (p PluginChange) String() string {
	if int(p) < len(pluginChangeNames) {
		return pluginChangeNames[p]
	}
	return "?"
}

// Fingerprint identifies what a call was configured to do: its function and
// canonical config.
func (c *Call) Fingerprint() string {
	if c == nil {
		return ""
	}
	h := sha256.New()
	h.Write([]byte(c.Plugin + "." + c.Function + "\x00"))
	h.Write(c.With)
	return hex.EncodeToString(h.Sum(nil))
}

// Fingerprint identifies what a step was configured to do: its function,
// canonical config, delay, durability and condition. A pending record
// carries it, so that a record written for a step is never fired by
// whatever the rule holds under that name after an edit.
func (s *Step) Fingerprint() string {
	h := sha256.New()
	h.Write([]byte(s.Do.Fingerprint()))
	var b [9]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(s.After))
	if s.Durable {
		b[8] = 1
	}
	h.Write(b[:])
	h.Write([]byte(s.When.Fingerprint()))
	if w := s.Wait; w != nil {
		fmt.Fprintf(h, "wait:%s|%q|%s|%d|%v", w.Pattern, w.Match, w.When.Fingerprint(), w.Timeout, w.Continue)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// finallyKeys are what a finally step may say: no after, durable, retry
// or on-error, since finally steps run at once, each whatever the one
// before did.
var finallyKeys = []string{"name", "do", "with", "when"}

// StepByName returns the step called name.
func (r *Rule) StepByName(name string) (*Step, bool) {
	for i := range r.Steps {
		if r.Steps[i].Name == name {
			return &r.Steps[i], true
		}
	}
	return nil, false
}
