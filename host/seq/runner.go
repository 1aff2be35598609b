package seq

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/seq/core"
)

// Runner walks sequences: the driver around its machine. It owns the
// lock, the pool, the plugins' calls, the store's writes and the timers'
// callbacks; every change to the machine's state goes through apply, and
// the machine's moves run under the lock and never wait (machine.go).
// In-flight runs are registered under their rule name, which is the
// handle anything acting on a whole rule needs.
type Runner struct {
	*world
	m    *machine
	mu   sync.Mutex
	pool Pool
	ctx  context.Context
	// logValue bounds what a log node keeps (RunnerConfig.LogValue),
	// and what WhyNot shows.
	logValue int
	// traceOf is RunnerConfig.StepTrace.
	traceOf func(run, parent string, node int) string
	// releaseWaits, when a test sets it, hears that ReleaseWhere has let
	// its runs go and waits for n steps of theirs on workers.
	releaseWaits func(n int)
	// beforeOver, when a test sets it, runs once a step's end has been
	// carried out and before the step counts as off its worker (stepOver):
	// the moment the next step, handed on already, may begin.
	beforeOver func()

	resolver   Resolver
	onError    func(rule string, err error)
	onComplete func(rule string)
	obs        Observer
	clockOK    ClockCheck
	clockPoll  time.Duration
}

// ruleState is what the runner knows of one rule.
type ruleState struct {
	stats RuleStats
	keys  map[string]*keyState
	// debounce are the triggers held by the rule's debounce, by key.
	debounce map[string]*debounced
	// waiting are the triggers that arrived while the rule was paused or
	// asleep, held for when it runs again (rules.Rule.OnPause), oldest
	// first.
	waiting []*heldTrigger
	// whyNot are the triggers it started no run for, by reason (WhyNot).
	whyNot map[string]*notRing
	// swept is when keyRoomLocked last forgot idle keys.
	swept time.Time
}

// heldTrigger is a trigger held while its rule is paused or asleep.
type heldTrigger struct {
	seq           *Sequence // as it was when the trigger came
	event         *bus.Event
	runID, parent string
	tk            *ticket
}

// keyState is one concurrency key of a rule: its live runs, and its
// cooldown; the rest (keyMore) only when it has any.
type keyState struct {
	live          []*run
	cooldownUntil int64 // unix nanoseconds on the scheduler's clock
	m             *keyMore
}

// keyMore is what few keys have, kept apart so that a key — one a
// vehicle, 100,000 of them on a device (issue 38) — is 48 bytes, not
// 128: its closing runs, its queue, its throttle.
type keyMore struct {
	// closing are the runs that ended and run their finally steps: they
	// hold the key's slot (a new run of mode single, restart or queue
	// waits for them) but a cancel no longer finds them.
	closing []*run
	queue   []*trigger
	// throttled are triggers waiting for the rule's throttle, oldest
	// first; throttle is its state (core.Cell, the generic cell rate algorithm's
	// theoretical arrival time, unix nanoseconds) and throttleTimer
	// releases the oldest when its turn comes.
	throttled     []*trigger
	throttle      core.Cell
	throttleTimer *sched.Timer
}

// more is ks's rare part, made when first written.
func (ks *keyState) more() *keyMore {
	if ks.m == nil {
		ks.m = &keyMore{}
	}
	return ks.m
}

// few is ks's rare part to read: the zero one when it has none. Never
// write through it (more).
func (ks *keyState) few() *keyMore {
	if ks.m == nil {
		return &noMore
	}
	return ks.m
}

var noMore keyMore

type trigger struct {
	seq   *Sequence
	event *bus.Event
	tk    *ticket // the caller's (Trigger.Done), carried until the trigger's run takes it
	// runID is the id the caller gave the run (Trigger.RunID): a trigger
	// that waits its turn keeps it, so a schedule's occurrence is known by
	// it whenever it starts.
	runID string
}

// run is one execution of a rule: a few words, a timer while it waits.
// Where it is and how it stands is plain data (core.Run); the rest is
// what it needs of the world.
type run struct {
	core.Run
	id    string
	seq   *Sequence
	event *bus.Event
	key   string
	timer *sched.Timer
	// tk is the caller's ticket (Trigger.Done) until the run has written its first pending
	// record or ended; then nil.
	tk *ticket
	// parked is the step the run is parked for, as it was when parked
	// (waitingFor).
	parked *CompiledStep
	// cx is what its steps see beside the event (runContext); nil until
	// it has an output or variables, so that a run of a rule without
	// costs one word for it.
	cx *runContext
	// rare is what few runs have (runRare); nil until one is set.
	rare *runRare

	// For the execution log (Tracer): when the run started, the last
	// node number used, the delay node it waits in.
	started int64 // unix nanoseconds: a time.Time is 16 bytes more a run
	nodes   atomic.Int64
	delay   delayNode
}

// runRare is what few runs have, kept apart so that a run — 100,000 of
// them parked on a device (issue 38) — is a size class of 192 bytes, not
// 416.
type runRare struct {
	// override replaces the next step's compiled form once: the step pinned
	// to the module its record was written with.
	override *CompiledStep
	// digest is the module the run's record names when it is not its
	// parked step's (a replayed record scheduled on an older module);
	// pinned says it is set.
	digest string
	pinned bool
	// dueAt is when a held step came due.
	dueAt time.Time
	// failErr fails the run's next step for good: its variables came out
	// past the bound a run keeps (VarsError), or its trigger could not be
	// read back from its record (RereadError).
	failErr error
	// unread says r's trigger is a placeholder: its record could not be
	// read back (warmLocked). For good: no record is written from it
	// (triggerJSON), and it is not read back again.
	unread bool
	// For the execution log: the run that fired it, the runs fired by the
	// step running now, and why it ended.
	parent   string
	children []string
	// by is who acted on the run's open delay by hand (setBy): kept for
	// its node, and cleared when the delay closes.
	by      string
	reason  string
	errText string
	// trace is the trigger's traceparent while r is cold (freezeLocked).
	trace string
}

// stepTrace is the traceparent r's step sends on while it runs in node
// seq: "" when no trace is sent.
func (rn *Runner) stepTrace(r *run, seq int) string {
	if rn.traceOf == nil {
		return ""
	}
	return rn.traceOf(r.id, r.traceParent(), seq)
}

// traceParent is r's trigger's traceparent (bus.Event.Trace), warm or
// cold: the log's nodes carry it, and the spans of a step.
func (r *run) traceParent() string {
	if t := r.few().trace; t != "" { // a cold run's, kept when its trigger went (and when a placeholder came back)
		return t
	}
	if r.event != nil {
		return r.event.Trace
	}
	return ""
}

// startedAt is when r started, on the scheduler's clock.
func (r *run) startedAt() time.Time { return time.Unix(0, r.started) }

// more is r's rare part, made when first set.
func (r *run) more() *runRare {
	if r.rare == nil {
		r.rare = &runRare{}
	}
	return r.rare
}

// few is r's rare part to read: the zero one when it has none. Never
// write through it (more).
func (r *run) few() *runRare {
	if r.rare == nil {
		return &noRare
	}
	return r.rare
}

var noRare runRare

// freezeLocked lets go of what r's trigger holds in memory while r is
// parked with its record written. Over a store that reads a record back
// on the device (PendingStore.Rereads: the embedded one), r goes cold:
// the trigger stays in the record only (r.event is nil) and is read back
// when r wakes (warmLocked). Elsewhere its view goes, which warmLocked
// builds again. 100,000 runs replayed at a start kept 250 bytes each of
// triggers nothing read until they came due, and 150 of views (issue
// 38). A run of a rule with cancel-on stays warm: every event of a
// cancel topic is matched against each of its runs' triggers, and a
// read of each record under the lock would stall the runner. Under the
// runner's lock.
func (sm *machine) freezeLocked(r *run) {
	if sm.store != nil && r.Record == core.Written && len(r.seq.Rule.CancelOn) == 0 && sm.store.Rereads() {
		if r.event.Trace != "" { // the log's nodes carry it while r is cold (traceParent)
			r.more().trace = r.event.Trace
		}
		r.event = nil
		return
	}
	r.event.View = nil
}

// warmLocked gives r its trigger back, read from its record if r is cold,
// and the trigger's view: before anything reads them — a step's call
// (submitLocked), a wait's key (awaitLocked), matching an event against
// it (Deliver, catch-up, cancel-on), a record or a run entry written from
// it (record, execOf). Under the runner's lock, which orders it before
// the worker that runs the step.
//
// A record that is gone or does not decode leaves r an empty trigger
// (unread, for good), and a trigger that does not decode (a replay takes
// them unread: resolve) its view unbuilt; either way r's next step fails
// with a RereadError whatever its on-error says: the run ends visibly,
// and not by running its steps on a trigger that is not its own. Its
// finally steps still run, on the empty trigger: they are what the rule
// promised whatever happened, and its key is still known.
//
// The trigger's view is set once, whole: a worker may read r.event (a
// finally step's call) while another warmLocked, of a cancel, looks.
func (sm *machine) warmLocked(r *run) {
	if r.few().unread {
		return
	}
	var err error
	if r.event == nil {
		var p Pending
		if p, err = sm.store.Get(r.id); err == nil {
			r.event, err = eventOf(p)
		}
		if err != nil {
			r.event = &bus.Event{Raw: []byte("{}"), View: emptyView}
			r.more().unread = true
		}
	}
	if err == nil && r.event.View == nil && len(r.event.Raw) > 0 {
		var v []byte
		if v, err = abi.AppendJSONView(nil, r.event.Raw, false); err == nil {
			r.event.View = v
		}
	}
	if err != nil {
		sm.warn.folded("a parked run's trigger cannot be read back from its record; the run ends at its next step", r.seq.Rule.ID, "",
			"run", r.id, "error", err)
		r.more().failErr = &RereadError{Err: err}
	}
}

// emptyView is the view of {}: an unread run's placeholder trigger's.
var emptyView = func() []byte {
	v, err := abi.AppendJSONView(nil, []byte("{}"), false)
	if err != nil {
		panic(err)
	}
	return v
}()

// triggerJSON is r's trigger as a record keeps it: nil for a placeholder
// (unread), which the store refuses to write rather than keep {} as if
// it were the run's trigger.
func (r *run) triggerJSON() json.RawMessage {
	if r.few().unread {
		return nil
	}
	return json.RawMessage(r.event.Raw)
}

// RereadError is a cold run's trigger that could not be read back from its
// pending record (freezeLocked): the run's next step fails with it.
type RereadError struct{ Err error }

func (e *RereadError) Error() string {
	return "the run's trigger cannot be read back from its pending record: " + e.Err.Error()
}

func (e *RereadError) Unwrap() error { return e.Err }

// Permanent reports that a retry would fail the same way.
func (e *RereadError) Permanent() bool { return true }

// takeChildren returns the runs fired by r's step that ran, and forgets
// them: its node has them now.
func (r *run) takeChildren() []string {
	if r.rare == nil {
		return nil
	}
	c := r.rare.children
	r.rare.children = nil
	return c
}

// waitingFor is the step r is parked for, as it was when parked.
func (r *run) waitingFor() waitFor {
	if r.parked == nil {
		return waitFor{}
	}
	w := waitFor{name: r.parked.Name, fingerprint: r.parked.Fingerprint, digest: r.parked.Digest}
	if r.rare != nil && r.rare.pinned {
		w.digest = r.rare.digest
	}
	return w
}

// shape is what core's moves read of the run's rule.
func (r *run) shape() core.Shape {
	return core.ShapeOf(r.seq.Rule, len(r.seq.Steps), len(r.seq.Finally))
}

// RuleStats counts actual run starts (including replay) and
// evaluation/action errors. It does not count triggers suppressed by
// cooldown, single mode or a throttle's drop in Started; those are
// Suppressed. Triggers refused — by the rule's lifecycle state (paused or
// asleep with on-pause: drop, killed, failed, completed), by a full
// on-pause hold, or by max (parallel and queue modes alike: Home
// Assistant's max_exceeded) — are Refused: a different story for an
// operator, as each is a trigger dropped rather than declined by design.
type RuleStats struct {
	Started    uint64 `json:"started"`
	Completed  uint64 `json:"completed"`
	Failed     uint64 `json:"failed"`
	Cancelled  uint64 `json:"cancelled"`
	Errors     uint64 `json:"errors"`
	Suppressed uint64 `json:"suppressed"`
	Refused    uint64 `json:"refused"`
	// RefusedKeys counts the triggers of a new key refused because the
	// rule held MaxKeys keys; Keys is how many it holds now.
	RefusedKeys uint64 `json:"refused_by_max_keys"`
	Keys        int    `json:"keys"`
	// Dropped counts runs whose waiting step was dropped when it came due
	// (its rule or step gone or changed meanwhile).
	Dropped uint64 `json:"dropped"`
	// Debounced counts the triggers a later one of their key replaced
	// while the rule's debounce held them (the last one runs).
	Debounced uint64 `json:"debounced"`
	// Throttled is how many triggers wait for the rule's throttle now.
	Throttled int `json:"throttled"`
	Active    int `json:"active"`
	// HeldTriggers is how many triggers wait for the rule to run again
	// (paused or asleep, on-pause: hold).
	HeldTriggers int `json:"held_triggers"`
}

// RunnerConfig is everything a Runner is built from: what it needs (Pool,
// Scheduler, Log), and what it may be told (the rest; each nil or zero
// leaves its part out). It is read once, by NewRunner: a runner does not
// change how it is wired while runs are live.
type RunnerConfig struct {
	// Pool runs steps; Scheduler parks a step's after delay.
	Pool      Pool
	Scheduler Scheduler
	// Store records the steps that are waiting, so a restart mid-wait can
	// pick them up again; nil keeps everything in memory.
	Store *PendingStore
	Log   Logger
	// Resolver makes waiting steps follow rule and plugin reloads
	// (ARCHITECTURE.md, "Fingerprints"). Without one, a run keeps the
	// sequence it started with.
	Resolver Resolver
	// Gate is asked before starting runs and running due steps.
	Gate Gate
	// OnError is told of every error a rule's run meets (a condition or
	// an action failing), besides the rule's error count.
	OnError func(rule string, err error)
	// OnComplete is told when a run of a rule completes successfully.
	OnComplete func(rule string)
	// OnEnd is told when a run of a rule ends, for any cause but a stop,
	// with the runner's lock held: it must only queue work.
	OnEnd func(rule string)
	// Tracer turns the execution log on; Observer is told every step's
	// time, for metrics.
	Tracer   Tracer
	Observer Observer
	// StepTrace is the traceparent a step of run sends on while it runs
	// in node (0 with no Tracer), its trigger's traceparent being parent
	// (Call.Trace): host/traces' Exporter.StepParent, the step's own
	// span; or the trigger's, passed on unchanged when no span is sent;
	// nil: steps send none.
	StepTrace func(run, parent string, node int) string
	// ClockCheck makes Replay wait until it trusts the clock, asking it
	// again every ClockPoll (on the Scheduler) until it does. Meanwhile the
	// records' runs are live (Active, holding their slots) but nothing is
	// judged, fired or dropped.
	ClockCheck ClockCheck
	ClockPoll  time.Duration
	// Placement says which runs are this runner's to decide
	// (Placement.Owns; its HashOf is the store's). The zero value: all.
	Placement Placement
	// MaxOutput is the largest output a step may return for the run's
	// later steps (OutputError past it); 0 is DefaultMaxOutput.
	MaxOutput int
	// States are the entities' states a rule's states: reads; nil: a rule
	// that reads them finds none.
	States StateReader
	// Windows are the windows a rule's window reads see; nil: they read
	// nothing.
	Windows WindowReader
	// Sun is the sun's place at a time as a JSON object (sun.<field>);
	// nil: the daemon has no location, and a rule that reads it finds
	// nothing.
	Sun func(at time.Time) []byte
	// LogValue is the largest trigger, step input, step output or
	// condition values a node of the execution log keeps (a larger one is
	// only measured); 0 is runlog.MaxOutput.
	LogValue int
}

// NewRunner returns a Runner wired as cfg says.
func NewRunner(cfg RunnerConfig) *Runner {
	w := &world{sch: cfg.Scheduler, store: cfg.Store, log: cfg.Log, warn: newWarnings(cfg.Log, cfg.Scheduler.Now),
		owns: cfg.Placement.Owns, gate: cfg.Gate, onEnd: cfg.OnEnd, maxOutput: cmp.Or(cfg.MaxOutput, DefaultMaxOutput),
		states: cfg.States, windows: cfg.Windows, sun: cfg.Sun}
	rn := &Runner{world: w, pool: cfg.Pool, ctx: context.Background(),
		resolver: cfg.Resolver, onError: cfg.OnError, onComplete: cfg.OnComplete,
		obs: cfg.Observer, clockOK: cfg.ClockCheck, clockPoll: cfg.ClockPoll,
		logValue: cmp.Or(cfg.LogValue, runlog.MaxOutput), traceOf: cfg.StepTrace}
	if cfg.Tracer != nil {
		w.book = &logbook{tracer: cfg.Tracer, clock: cfg.Scheduler, limit: rn.logValue}
	}
	rn.m = &machine{world: w, drv: rn, rules: map[string]*ruleState{}, runs: map[string]*run{}, parking: make(chan struct{}, MaxParking)}
	if rn.book != nil {
		rn.book.warm = rn.m.warmLocked
	}
	return rn
}

func (sm *machine) rule(id string) *ruleState {
	rs := sm.rules[id]
	if rs == nil {
		rs = &ruleState{keys: map[string]*keyState{}}
		sm.rules[id] = rs
	}
	return rs
}

func (rs *ruleState) key(k string) *keyState {
	ks := rs.keys[k]
	if ks == nil {
		ks = &keyState{}
		rs.keys[k] = ks
	}
	return ks
}

// keyRoomLocked reports whether r may take a trigger of key: one it
// holds something of already, or a new one within r.MaxKeys (the keys
// with runs, queued or throttled triggers or a cooldown, and apart the
// keys with a debounced trigger). At the bound, keys that hold nothing
// any more are forgotten first — at most every keySweepEvery, so a flood
// of new keys does not walk them all at each trigger.
func (sm *machine) keyRoomLocked(r *rules.Rule, key string) bool {
	rs := sm.rule(r.ID)
	if _, ok := rs.keys[key]; ok {
		return true
	}
	if _, ok := rs.debounce[key]; ok {
		return true
	}
	limit := cmp.Or(r.MaxKeys, rules.DefaultMaxKeys)
	full := func() bool { return len(rs.keys) >= limit || r.Debounce.For > 0 && len(rs.debounce) >= limit }
	if !full() {
		return true
	}
	now := sm.sch.Now()
	if now.Sub(rs.swept) >= keySweepEvery || now.Before(rs.swept) {
		rs.swept = now
		n := now.UnixNano()
		for k, ks := range rs.keys {
			if ks.idle(n) {
				delete(rs.keys, k)
			}
		}
	}
	return !full()
}

// without is runs less r. Runs mostly end in the order they started, so
// the first is taken off the front for nothing: deleting in place moved
// every run after it, and a key with thousands of runs in flight (a rule
// without key, mode: parallel, a high max) spent 15% of a saturated
// daemon's CPU moving them (issue 39).
func without(runs []*run, r *run) []*run {
	if len(runs) > 0 && runs[0] == r {
		runs[0] = nil
		return runs[1:]
	}
	if i := slices.Index(runs, r); i >= 0 {
		return slices.Delete(runs, i, i+1)
	}
	return runs
}

// keySweepEvery is how often a rule at its MaxKeys looks for keys that
// hold nothing any more.
const keySweepEvery = 100 * time.Millisecond

// idle reports whether the key holds nothing at now (unix nanoseconds):
// no run, no queued or throttled trigger, no cooldown, no throttle state
// in the future. Forgetting it changes nothing.
func (ks *keyState) idle(now int64) bool {
	m := ks.few()
	return len(ks.live) == 0 && len(m.closing) == 0 && len(m.queue) == 0 && len(m.throttled) == 0 &&
		m.throttleTimer == nil && ks.cooldownUntil <= now && m.throttle.TAT <= now
}

// keyOf is the value the rule's key names in the event: "" for a rule keyed
// by itself or an event without the field.
// KeyOf is the concurrency key of r's run for e: the value at the rule's
// key path, "" without one. Runs are placed by it (Placement), so that one
// key's runs are decided in one place.
func KeyOf(r *rules.Rule, e *bus.Event) string { return keyOf(r, e) }

func keyOf(r *rules.Rule, e *bus.Event) string {
	if r.Key == "" {
		return ""
	}
	v, err := abi.ParseView(e.View)
	if err != nil {
		return ""
	}
	x, ok := v.Find(r.Key)
	if !ok {
		return ""
	}
	switch x.Kind() {
	case abi.ValueString:
		b, _ := x.Str()
		return string(b)
	case abi.ValueInt:
		n, _ := x.Int()
		return strconv.FormatInt(n, 10)
	case abi.ValueFloat:
		f, _ := x.Float()
		return strconv.FormatFloat(f, 'g', -1, 64)
	case abi.ValueBool:
		b, _ := x.Bool()
		return strconv.FormatBool(b)
	}
	return ""
}

// fairKey is the pool's fairness key for a rule's key: runs of one vehicle
// take turns with runs of another, within the rule's group (the pool's
// Job.Group is the rule: rules share the workers by the time their jobs
// take, so a rule with a slow plugin queues behind itself).
func fairKey(r *rules.Rule, key string) string { return r.ID + "\x00" + key }

// Trigger is one event for one rule, and what the caller asks of its fate.
// The zero value of each field past Event asks nothing: a plain trigger,
// which the pool may refuse when its queue is full (the pool counts it).
type Trigger struct {
	Seq   *Sequence
	Event *bus.Event
	// RunID names the run before it exists ("" picks one): a plugin's fire
	// host call answers with the id. If the trigger is not admitted, no run
	// gets the id. Parent is the run whose step fired it (the fire host
	// call): the execution log shows the new run under that step.
	RunID, Parent string
	// Waited: the caller waited for room in the pool itself before it
	// fired (an input with no client to retry: pool.WaitRoom), so the
	// trigger is never refused — a step a worker submits meanwhile cannot
	// take the room the caller waited for and have the trigger dropped.
	// The queue may then hold a few jobs past its capacity: the triggers of
	// one event per such caller.
	Waited bool
	// Note and By, for a trigger an operator sent (a rerun), are what its
	// run's trigger node says of how it came and who asked; they need a
	// RunID.
	Note, By string
	// Done is for an event kept in a journal until the rule has taken it:
	// it is called once, when the trigger's fate no longer depends on this
	// process's memory — its rule refused it, its condition said no or
	// failed, its mode or cooldown suppressed it, its run wrote its first
	// pending record, or its run ended. It is not called when the runner
	// stops first (the journal keeps the event, and the next start admits
	// it again), nor for a run ended by Stop. It runs with the runner's
	// lock held: it must not block or call back into the runner. A trigger
	// with Done is never refused: whoever journals events bounds them
	// before acknowledging (the daemon's ingest answers 503 while the queue
	// is full), and refusing one already acknowledged would lose it.
	Done func()
	// Live and Lost are for a caller that may give up on the trigger and
	// must then learn whether it was taken: exactly one of Done and Lost is
	// called. Lost means the trigger's fate will not be settled here — Live
	// was done before a worker admitted it, or its run or queued trigger
	// was let go (ReleaseWhere, Stop) before its first pending record — and
	// the caller may hand the event to someone else. A fleet's executor
	// gives up when the item's place is let go; the place's next holder
	// admits the event again. (If the pool is stopped with the admission
	// still queued, neither is called: the caller's own stop signal covers
	// that.) A trigger with Live is never held while its rule is paused:
	// it is the place's, which may move.
	Live context.Context
	Lost func()
	// Put, when not nil, writes the run's first pending record instead of
	// the store (PendingStore.PutWith): a fleet writes it and marks the
	// item done in one script, so no crash can leave a recorded run whose
	// item is still to be admitted again. A Put answering ErrNotHeld ends
	// the run unrecorded and calls Lost.
	Put func(hash, field string, value []byte) error
}

// Fire starts a run of t.Seq triggered by t.Event, or does whatever the
// rule's concurrency policy says to do about a run that is already live.
// It returns as soon as the admission is queued, so the caller, which is
// the goroutine reading the bus, is never held for the length of a
// sequence — or even of the rule's condition, which runs on a pool worker.
func (rn *Runner) Fire(t Trigger) {
	var tk *ticket
	if t.Waited || t.Done != nil || t.Lost != nil || t.Put != nil {
		tk = &ticket{done: t.Done, lost: t.Lost, put: t.Put}
	}
	if t.Parent != "" {
		rn.NoteChild(t.Parent, t.RunID)
	}
	if t.Note != "" && t.RunID != "" {
		rn.apply(func(*effects) { rn.book.note(t.RunID, t.Note, t.By) })
	}
	rn.fire(t.Live, t.Seq, t.Event, t.RunID, t.Parent, tk)
}

// ticket is a caller's interest in its trigger (Trigger.Done, Lost, Put):
// done is called once the trigger's fate is settled here, lost once it
// never will be. Whoever holds the trigger holds the ticket: the admission,
// then its run or the queue it waits in, under the runner's lock. put, when
// set, writes the run's first pending record. A trigger with a ticket is
// never refused by the pool.
type ticket struct {
	done, lost func()
	put        func(hash, field string, value []byte) error
	// debounced: the trigger comes out of its rule's debounce (its quiet
	// period is over) and is not held again.
	debounced bool
}

// isDebounced reports whether the trigger comes out of a debounce; a nil
// ticket's does not.
func (t *ticket) isDebounced() bool { return t != nil && t.debounced }

// ErrNotHeld is a put's answer when the trigger is no longer this
// runner's to record (its place was taken over): the run ends
// unrecorded, and its ticket is lost.
var ErrNotHeld = errors.New("seq: the trigger is no longer this process's to record")

// settle calls done, once; a nil ticket does nothing.
func (t *ticket) settle() {
	if t != nil && t.done != nil {
		f := t.done
		t.done, t.lost = nil, nil
		f()
	}
}

// abandon calls lost, once, and forgets done.
func (t *ticket) abandon() {
	if t == nil {
		return
	}
	f := t.lost
	t.done, t.lost = nil, nil
	if f != nil {
		f()
	}
}

// fire queues the admission of a trigger; live, when not nil, is the
// caller's interest in it (Trigger.Live).
func (rn *Runner) fire(live context.Context, s *Sequence, e *bus.Event, runID, parent string, tk *ticket) {
	var stopped bool
	rn.view(func() { stopped = rn.m.stopped })
	if stopped {
		return
	}
	if rn.gate != nil && !rn.gate.Admits(s.Rule.ID) {
		// Paused or asleep, it runs again later: a rule that holds its
		// triggers keeps this one for then (its ticket unsettled, so a
		// journaled event stays in the journal across a restart). In a
		// fleet (live) the trigger is the place's, which may move: it is
		// dropped, as it always was.
		paused, _ := rn.gate.Due(s.Rule.ID)
		rn.apply(func(fx *effects) { rn.m.gatedLocked(s, e, runID, parent, tk, paused, live != nil, fx) })
		return
	}
	key := keyOf(s.Rule, e)
	job := pool.Job{Band: s.Rule.Priority, Group: s.Rule.ID, Key: fairKey(s.Rule, key),
		Run: func() { rn.admit(live, s, e, key, runID, parent, tk) }}
	if tk != nil {
		rn.submit(job)
	} else {
		rn.trySubmit(job)
	}
}

// gatedLocked holds or refuses a trigger of s's rule, which its gate
// does not admit (paused when it runs again later; inPlace when the
// trigger is a fleet place's).
func (sm *machine) gatedLocked(s *Sequence, e *bus.Event, runID, parent string, tk *ticket, paused, inPlace bool, fx *effects) {
	why := awayPaused
	rs := sm.rule(s.Rule.ID)
	switch op := s.Rule.OnPause; {
	case paused && op.Hold && !inPlace && len(rs.waiting) < op.Max:
		rs.waiting = append(rs.waiting, &heldTrigger{seq: s, event: e, runID: runID, parent: parent, tk: tk})
		sm.notStartedLocked(s, e, keyOf(s.Rule, e), awayHeld)
		sm.warn.turnedAway(s.Rule.ID, awayHeld)
		return
	case paused && op.Hold && !inPlace:
		why = awayHoldFull
	case !paused:
		why = "" // killed, failed, completed: the operator's doing, said where it was done
	}
	rs.stats.Refused++
	tk.settle()
	sm.notStartedLocked(s, e, keyOf(s.Rule, e), cmp.Or(why, whyStopped))
	if why != "" {
		sm.warn.turnedAway(s.Rule.ID, why)
	}
}

// admit runs on a worker: the rule's condition first, then the mode and
// cooldown decision. A trigger whose condition fails takes no slot and
// starts no cooldown.
func (rn *Runner) admit(live context.Context, s *Sequence, e *bus.Event, key, runID, parent string, tk *ticket) {
	if live != nil && live.Err() != nil {
		tk.abandon() // the caller gave up on it (Trigger.Live)
		return
	}
	if runID == "" && rn.book != nil {
		runID = NewRunID() // named now: a failing condition is logged as its run
	}
	var cond *condTrace // only when tracing: a telemetry topic asks every event
	var c0 []byte       // the context the condition saw
	if s.When != nil {
		start := rn.sch.Now()
		c := callFor(s, e, nil, "", 0)
		c.Context = rn.triggerContext(s, e)
		c0 = c.Context
		ok, err := s.When.When(rn.ctx, c)
		if rn.book != nil && (ok || err != nil) { // a no is not a run (WhyNot)
			cond = rn.book.newCondTrace(s, c, start)
			cond.end = rn.sch.Now()
		}
		if err != nil {
			rn.errored(s.Rule.ID, err)
			rn.warn.folded("rule condition failed", s.Rule.ID, "", "event", e.ID, "error", err)
			if cond != nil {
				rn.book.traceRefused(s, runID, key, &eventRef{e.Topic, e.ID, parent, e.Trace, e.Raw}, *cond, err)
			}
			rn.apply(func(*effects) { tk.settle() })
			return
		}
		if !ok {
			var saw json.RawMessage // what it read beside the event, for ruled log why
			if c.Context != nil {
				saw, _ = boundedTo(rn.logValue, "values", render(s.WhenValues, c))
			}
			rn.apply(func(*effects) {
				tk.settle()
				rn.m.notStartedSawLocked(s, e, key, whyFalse, saw)
			})
			return
		}
	}
	var pre *preVars
	if s.Vars != nil && readsState(s) {
		// Its variables read states: rendered here, not under the
		// runner's lock, from the context its condition saw, if any.
		ctx := c0
		if ctx == nil {
			ctx = rn.triggerContext(s, e)
		}
		pre = new(preVars)
		pre.vars, pre.err = varsOf(s, e, ctx, rn.m.maxOutput)
	}
	var held *debounced
	rn.apply(func(fx *effects) { held = rn.m.admitLocked(live, s, e, key, runID, parent, tk, cond, pre, fx) })
	if held != nil {
		rn.writeDebounce(s.Rule.ID, held)
	}
}

// admitLocked is admit's decision once the rule's condition said yes (its
// trace cond, when tracing): the trigger is abandoned (its place moved),
// turned away (its rule's max-keys), held by the rule's debounce (the
// trigger to record), held or passed by its throttle (write keeps the
// throttle's state), then decided by mode and cooldown (decideLocked). It
// returns the debounced trigger to record, if any.
func (sm *machine) admitLocked(live context.Context, s *Sequence, e *bus.Event, key, runID, parent string, tk *ticket,
	cond *condTrace, pre *preVars, fx *effects) *debounced {
	if sm.owns != nil && !sm.owns(s.Rule.ID, key) || live != nil && live.Err() != nil {
		tk.abandon() // the key's place moved: its new holder admits it
		return nil
	}
	if sm.stopped {
		return nil
	}
	if !tk.isDebounced() && !sm.keyRoomLocked(s.Rule, key) {
		// (A debounced trigger was taken within the bound when it came.)
		sm.rule(s.Rule.ID).stats.RefusedKeys++
		tk.settle()
		sm.notStartedLocked(s, e, key, awayKeys)
		sm.warn.turnedAway(s.Rule.ID, awayKeys)
		return nil
	}
	if s.Rule.Debounce.For > 0 && !tk.isDebounced() {
		return sm.debounceLocked(s, e, key, tk) // held until the key's triggers stop: then admitted again
	}
	if s.Rule.Throttle.Limit > 0 {
		if held, why := sm.throttleLocked(s, e, key, runID, tk, fx); held {
			if why != "" {
				sm.warn.turnedAway(s.Rule.ID, why)
			}
			return nil
		}
	}
	started, drops, away := sm.decideLocked(s, e, key, runID, tk, pre, fx)
	fx.drop(drops...)
	if away != "" {
		sm.warn.turnedAway(s.Rule.ID, away)
	}
	if started != nil {
		if parent != "" {
			started.more().parent = parent
		}
		if cond != nil {
			started.started = cond.start.UnixNano()
		}
		sm.book.traceStart(started, cond, "")
		sm.scheduleLocked(started, fx)
	}
	return nil
}

// decideLocked applies the rule's cooldown and mode to an admitted trigger.
// It returns the run it started, if any, for the caller to schedule once the
// lock is released, the pending records of runs it ended (restart), and why
// it turned the trigger away, for the caller's log ("" when it did not, or
// for a cooldown, which is the rule doing what it says).
//
// tk (the caller's) goes with the trigger: to its run, to the queue it waits
// in, or is settled here when the trigger is turned away.
//
// max counts as Home Assistant's does: in queue mode the runs live and
// queued together (max: 2 is one running and one waiting), in parallel
// mode the runs live.
func (sm *machine) decideLocked(s *Sequence, e *bus.Event, key, runID string, tk *ticket, pre *preVars, fx *effects) (*run, []string, string) {
	rs := sm.rule(s.Rule.ID)
	ks := rs.key(key)
	d := core.Admit(s.Rule, core.Key{Live: len(ks.live), Closing: len(ks.few().closing), Queued: len(ks.few().queue),
		Cooling: sm.sch.Now().UnixNano() < ks.cooldownUntil})
	var drops []string
	switch d.Verdict {
	case core.Suppress:
		rs.stats.Suppressed++
		tk.settle()
		sm.notStartedLocked(s, e, key, d.Why)
		if d.Why == core.WhyCooldown {
			return nil, nil, "" // not a turn-away the log counts: the cooldown is the rule's own
		}
		return nil, nil, d.Why
	case core.Refuse:
		sm.refused.Add(1)
		rs.stats.Refused++
		tk.settle()
		sm.notStartedLocked(s, e, key, d.Why)
		return nil, nil, d.Why
	case core.Enqueue:
		m := ks.more()
		m.queue = append(m.queue, &trigger{s, e, tk, runID})
		return nil, nil, ""
	case core.Restart:
		for len(ks.live) > 0 {
			drops = append(drops, sm.endLocked(ks.live[0], core.Restarted)...)
		}
		if len(ks.few().closing) > 0 {
			// The runs it restarts run their finally steps first: the new
			// run starts after them (startQueuedLocked), the newest
			// trigger winning as restart's always does.
			for _, old := range ks.m.queue {
				rs.stats.Suppressed++
				old.tk.settle()
			}
			ks.m.queue = append(ks.m.queue[:0], &trigger{s, e, tk, runID})
			return nil, drops, ""
		}
	}
	started := sm.startLocked(s, e, key, runID, 0, 0, pre)
	started.tk = tk
	rs.stats.Started++
	fx.keepCooldown(s.Rule, key, ks.cooldownUntil)
	return started, drops, ""
}

// preVars are a run's variables rendered before its start (admit), and
// the error that rendering met: a rule whose variables read states reads
// them outside the runner's lock.
type preVars struct {
	vars []byte
	err  error
}

// startLocked registers a run; the caller schedules it once the lock is
// released, and counts the start. A replayed run passes its id, step and
// pass; a new one passes "". pre, when not nil, are its variables,
// rendered already.
func (sm *machine) startLocked(s *Sequence, e *bus.Event, key, id string, step, pass int, pre *preVars) *run {
	if id == "" {
		id = NewRunID()
	}
	r := &run{Run: core.Run{Pos: core.Pos{Step: step, Pass: pass}}, id: id, seq: s, event: e, key: key, started: sm.sch.Now().UnixNano()}
	if pre == nil {
		var ctx []byte
		if s.Vars != nil {
			ctx = sm.triggerContext(s, e)
		}
		pre = new(preVars)
		pre.vars, pre.err = varsOf(s, e, ctx, sm.maxOutput)
	}
	if vars, err := pre.vars, pre.err; vars != nil || err != nil {
		r.dataFor().vars = vars
		if err != nil {
			r.more().failErr = err
		}
	}
	if s.Previous && len(e.Prior) > 0 {
		r.dataFor().previous = e.Prior
	}
	if hasWait(s) { // its waits may take events from now on (recent)
		if r.cx == nil {
			r.cx = &runContext{}
		}
		r.cx.after = sm.recentSeq
	}
	rs := sm.rule(s.Rule.ID)
	ks := rs.key(key)
	ks.live = append(ks.live, r)
	sm.runs[id] = r
	if s.Rule.Cooldown > 0 {
		ks.cooldownUntil = sm.sch.Now().Add(s.Rule.Cooldown).UnixNano()
	}
	return r
}

// Parked is how many active runs are waiting on a timer now: an after, or
// the gap between two repeat passes.
func (rn *Runner) Parked() (n int) {
	rn.view(func() {
		for _, r := range rn.m.runs {
			if r.timer != nil {
				n++
			}
		}
	})
	return n
}

func (rn *Runner) RuleStats(name string) (st RuleStats) {
	rn.view(func() { st = rn.m.ruleStatsLocked(name) })
	return st
}

// ruleStatsLocked is RuleStats under the lock.
func (sm *machine) ruleStatsLocked(name string) RuleStats {
	rs := sm.rules[name]
	if rs == nil {
		return RuleStats{}
	}
	st := rs.stats
	now := sm.sch.Now().UnixNano()
	for _, ks := range rs.keys {
		st.Active += len(ks.live) + len(ks.few().closing)
		st.Throttled += len(ks.few().throttled)
		if !ks.idle(now) {
			st.Keys++
		}
	}
	st.Keys += len(rs.debounce)
	st.HeldTriggers = len(rs.waiting)
	return st
}

// callFor builds a plugin call for a run's step (st nil: the rule's condition).
func callFor(s *Sequence, e *bus.Event, st *CompiledStep, runID string, pass int) *Call {
	info := abi.CallInfo{Pass: uint32(pass), Time: e.Time.UnixNano(), Topic: e.Topic, Rule: s.Rule.ID, Run: runID}
	if st != nil {
		info.Step = st.Name
		info.Key = runID + "/" + st.Name + "/" + strconv.Itoa(pass)
	}
	return &Call{Info: info, View: e.View, Raw: e.Raw, Hops: e.Hops, Chain: e.Chain}
}
