package ingest

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/journal"
	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/ruleset"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/state"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/triggers"
	"github.com/ruled-dev/ruled/host/window"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// ErrBusy refuses an event while the worker pool's queue is full: answered
// with 503 and Retry-After, so the client keeps it, rather than 202 and a
// trigger the pool then refuses.
var ErrBusy = errors.New("daemon: the worker queue is full; retry later")

// ErrContended refuses an event in a fleet whose windows' series other
// members wrote each time this one tried to count it (MaxWindowTries):
// answered with 503, as ErrBusy is.
var ErrContended = errors.New("daemon: other members kept writing the windows this event counts in; retry later")

// ErrBusDown refuses an event while this process's Redis bus subscription
// is down (Redis restarting): accepted, it would not reach its rules.
var ErrBusDown = errors.New("daemon: the bus subscription is down (Redis reconnecting); retry later")

// ErrStopping refuses an event once Config.Stop is closed.
var ErrStopping = errors.New("daemon: stopping")

// Rules is the rule set as loaded now (ruleset.Loader).
type Rules interface {
	Current() *ruleset.Set
}

// Runner is what ingest needs of the sequencer (seq.Runner).
type Runner interface {
	Fire(seq.Trigger)
	CancelMatching(e *bus.Event) int
	// Deliver hands e to rule's runs waiting for it (wait-for); done is
	// called once they took it or passed it over.
	Deliver(rule string, e *bus.Event, done func()) int
	// Awaits reports whether any run of rule waits for an event now.
	Awaits(rule string) bool
	// TurnAway records that a rule started no run for e, and why (its
	// why-not: ruled log why).
	TurnAway(s *seq.Sequence, e *bus.Event, why string)
}

// Room is what ingest needs of the worker pool (pool.Pool): whether its
// queue has room for n jobs, and a wait for that room that ends early,
// false, when done is closed.
type Room interface {
	Fits(n int) bool
	WaitRoom(n int, done <-chan struct{}) bool
	// Free is how many more jobs the queue takes now (TakeAll's group
	// takes no more than that).
	Free() int
}

// Publisher is the bus (bus.Local, bus.Redis).
type Publisher interface {
	Publish(ctx context.Context, e *bus.Event) error
}

// Stream is fleet mode's ingest stream (store.RedisStream): the XADD is
// the acceptance.
type Stream interface {
	Append(ctx context.Context, eventID, topic string, at time.Time, hops int, raw []byte) (string, error)
	// AppendChange is Append with the event's entity's state, swapped for
	// the one before it, which the entry carries: the stream's order is
	// then each entity's (store.RedisStream.AppendChange).
	AppendChange(ctx context.Context, eventID, topic string, at time.Time, hops int, raw []byte,
		entity string, state []byte, maxEntities int, forgetAfter time.Duration, now time.Time, ops []store.TriggerOp) (string, error)
	// AppendEntry is AppendChange with the windows' compare-and-sets
	// (store.RedisStream.AppendEntry): on a conflict nothing is done.
	AppendEntry(ctx context.Context, en store.Entry) (string, store.WindowResult, error)
}

// FleetWindows are a fleet's windows as the append counts an event into
// them (engine.Engine's PlanWindows, over window.Shared).
type FleetWindows interface {
	PlanWindows(e *bus.Event) *window.Plan
}

// Config is what an Ingest is built from.
type Config struct {
	Rules  Rules
	Runner Runner
	Room   Room
	// Journal keeps accepted events until their durable rules take them;
	// nil in a fleet, whose ingest stream is its journal.
	Journal *journal.Journal
	// States hears every event dispatched: the entities' states
	// (state.Table); nil keeps none.
	States States
	// Windows counts events into windows; nil: none is kept (a fleet).
	Windows Windows
	// FleetWindows counts them in a fleet, in the stream's append; nil:
	// none.
	FleetWindows FleetWindows
	// Holds hears the events of change triggers with for: (hold.Holds);
	// nil: they begin none.
	Holds Holds
	// Fleet: events are accepted into the fleet's stream (Connect's), and
	// the bus's copy only cancels; the fleet's member triggers the rules.
	Fleet bool
	// Decoder decodes a plugin's events and the events file's lines.
	Decoder *bus.Decoder
	// Taps are told of each dispatch and of a plugin's publishes, while
	// someone watches; nil: no one can.
	Taps *observe.Taps
	// Now is the engine's clock, for the taps. default: time.Now.
	Now func() time.Time
	// Stop, closed, ends every wait and refuses what arrives after.
	Stop <-chan struct{}
	Log  hclog.Logger
}

// States keeps the entities' states (state.Table).
type States interface {
	Observe(e *bus.Event) state.Change
	// Crossed answers a threshold with hysteresis (state.Table.Crossed).
	Crossed(key string, t rules.Change, ch state.Change, view []byte) bool
	// Sync writes an entity's state now (state.Table.Sync); SyncAll
	// several in one write.
	Sync(id string) error
	SyncAll(ids []string) error
	// Entity is an event's entity, and false when it names none
	// (state.Table.Entity); MaxEntities the table's bound. A fleet's
	// stream keeps the states its change triggers watch under them.
	Entity(e *bus.Event) (string, bool)
	MaxEntities() int
	// ForgetAfter is how long an entity goes unreported before a full
	// table may forget it.
	ForgetAfter() time.Duration
}

// Windows counts events in the rule files' windows (engine.Engine's
// ObserveWindows, over host/window).
type Windows interface {
	// ObserveWindows counts e in the windows that hear it (its topic's, or
	// a change ch fires) and reports whether one did.
	ObserveWindows(e *bus.Event, ch state.Change) bool
	// SyncWindows writes what they counted, in one write; SyncWindowsSoon
	// within 10 ms, with what else they count meanwhile.
	SyncWindows() error
	SyncWindowsSoon()
}

// Holds hears the events on the topics of change triggers with for:
// (hold.Holds).
type Holds interface {
	Observe(rule string, i int, t rules.Change, ch state.Change, e *bus.Event)
	// Sync writes the holds' records queued so far (hold.Holds.Sync).
	Sync() error
}

// Source is where an event comes from, which decides what ingest does
// when it cannot take the event now.
type Source uint8

const (
	// FromClient: an HTTP client, told "busy, retry later" (ErrBusy,
	// ErrBusDown) rather than made to wait.
	FromClient Source = iota
	// FromInput: a file or a pipe (--events), which has no client to
	// tell: it waits for room; what the store or bus refuses, its reader
	// tries again.
	FromInput
	// FromPlugin: a step's publish, on a worker. It never waits for the
	// pool (a worker waiting for its own pool's room could wait forever),
	// and its triggers of durable rules are journaled like an HTTP
	// event's: kept from the moment the publishing step returns, whose
	// record covered it until then — a chain of durable rules loses no
	// link to a kill between them.
	FromPlugin
)

// Ingest takes events in. Build it with New, and Connect it to the bus
// once the bus is open.
type Ingest struct {
	cfg Config
	log hclog.Logger

	out    atomic.Pointer[outlets] // nil before Connect
	outbox atomic.Pointer[Outbox]  // nil: a step's publish goes onto the bus only
	adm    admissions              // journal entries on their way from ingest to dispatch
	counts bus.Counters            // HTTP and the events file
	warns  lograte.Limiter         // warnings an input triggers, folded to one a second per cause
	busy   atomic.Uint64           // events refused because the pool's queue was full
	loops  atomic.Uint64           // steps' publishes and fires refused at bus.MaxHops
	// readmitted is how many journal entries the start found and fired.
	readmitted atomic.Int64
	// repeats are the records the start found of events a step published
	// (Readmit), set before Connect and read-only after; repeated counts
	// the triggers they turned away.
	repeats map[HeldEvent]bool
	// absent are the journal's events a start kept for rules refused for
	// a problem of their files (ruleset.Set.Refused), each with the call
	// that tells the journal the rule took it: ReadmitAbsent gives them
	// to the rules once mended. Bounded by the journal at the start.
	absentMu sync.Mutex
	absent   []absentEntry
	repeated atomic.Uint64
}

// outlets are where accepted events go, known once the bus is open.
type outlets struct {
	bus    Publisher
	live   func() bool // the bus subscription is up; nil: always
	stream Stream      // fleet mode's ingest stream
	// inline: the bus is in-process (ConnectLocal), and Take dispatches
	// what it accepts itself, once the bus's subscribers have seen it.
	inline bool
}

// New returns an Ingest that can re-admit the journal (Readmit) and
// dispatch; it takes events once connected (Connect).
func New(cfg Config) *Ingest {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Taps == nil {
		cfg.Taps = &observe.Taps{}
	}
	return &Ingest{cfg: cfg, log: cfg.Log}
}

// Connect hands Ingest the bus it publishes on, once that is open: live
// reports whether this process's subscription is up (nil: always), and in
// a fleet stream is the ingest stream. Until then every Take is refused.
func (in *Ingest) Connect(b Publisher, live func() bool, stream Stream) {
	in.out.Store(&outlets{bus: b, live: live, stream: stream})
}

// ConnectLocal connects the in-process bus (bus.Local), which ingest does
// not subscribe to: Take publishes an accepted event to the bus's
// subscribers (watchers) and then dispatches it itself, on the index it
// planned the event on and with its journal entry in hand — one pass an
// event, where going through the bus and back handed both across in
// maps keyed by the event (issue 40). An event published on the bus by
// someone else is dispatched by whoever published it (Dispatch).
func (in *Ingest) ConnectLocal(b Publisher) {
	in.out.Store(&outlets{bus: b, inline: true})
}

// Redelivered reports whether a message of key (bus.Event.Key) was
// accepted into the journal lately (journal.Seen): a source that delivers
// again what it was not told was taken (MQTT after a kill or a broker
// restart) acknowledges it without taking it again. Without a journal,
// or for a message no durable rule took, it is taken again: such an event
// is at most once across a crash, and the repeat is all that is left.
func (in *Ingest) Redelivered(key string) bool {
	return in.cfg.Journal != nil && in.cfg.Journal.Seen(key)
}

// Counters are the HTTP and events-file ingest's counts (bus.Ingest's).
func (in *Ingest) Counters() *bus.Counters { return &in.counts }

// Status is the journal's counters; nil without a journal.
func (in *Ingest) Status() *status.JournalStatus {
	if in.cfg.Journal == nil {
		return nil
	}
	return &status.JournalStatus{Stats: in.cfg.Journal.Stats(), Readmitted: int(in.readmitted.Load()), Busy: in.busy.Load(),
		Repeats: in.repeated.Load()}
}

func (in *Ingest) stopping() bool {
	select {
	case <-in.cfg.Stop:
		return true
	default:
		return false
	}
}

// durable reports whether a rule has a durable step: whether an event that
// triggers it is journaled before it is acknowledged.
func durable(s *seq.Sequence) bool {
	return slices.ContainsFunc(s.Rule.Steps, func(st rules.Step) bool { return st.Keeps() })
}

// Take takes an accepted event onto the bus: from HTTP, the events file
// or a plugin's publish (from). An event that triggers a rule with a
// durable step is written to the journal first (package journal):
// acknowledged means kept, until each such rule has taken it. While the
// pool's queue has no room for the triggers it would submit, an event from
// a client is refused (ErrBusy) instead of accepted and then dropped, and
// one from an input waits for that room until Stop.
func (in *Ingest) Take(e *bus.Event, from Source) error {
	out := in.out.Load()
	if in.stopping() && from != FromPlugin {
		// A step still on a worker while the daemon stops publishes into
		// a bus that is up until the engine has stopped: its event is
		// taken (and journaled for a durable rule, which the next start
		// re-admits), rather than failing the step — a stop is nobody's
		// error (issue 37).
		return ErrStopping
	}
	if out == nil {
		// The bus opens before anything can send; a call made before
		// that (none should be) is told so, not a nil bus.
		return errors.New("the bus is not open yet") // StatusUnavailable
	}
	if in.cfg.Fleet {
		return in.acceptFleet(context.Background(), out, e)
	}
	ix := in.cfg.Rules.Current().Index()
	triggered, keep, need := in.plan(ix, e, from)
	if from != FromPlugin && out.live != nil && !out.live() {
		// Redis is back, but this process's subscription is not yet: an
		// event published now would reach other subscribers (so Redis
		// counts it received) and not this process's rules.
		return ErrBusDown
	}
	if from != FromPlugin && len(triggered) > 0 && !in.cfg.Room.Fits(max(need, 1)) {
		if from == FromClient {
			in.busy.Add(1)
			return ErrBusy
		}
		if !in.cfg.Room.WaitRoom(max(need, 1), in.cfg.Stop) {
			return ErrStopping
		}
	}
	// Room was found for its triggers (but a plugin's publish, which
	// never waits), and it is about to be accepted: from here on none may
	// be refused (fire's waited).
	waited := from != FromPlugin
	if len(keep) == 0 {
		err := out.bus.Publish(context.Background(), e)
		if err == nil && out.inline {
			in.dispatch(ix, e, nil, false, waited, nil)
		}
		return err
	}
	id, err := in.cfg.Journal.Add(e, keep)
	if err != nil {
		if folded, ok := in.warns.Allow("journal"); ok {
			in.log.Warn("refusing an event the journal cannot keep", "topic", e.Topic, "event", e.ID, "error", err,
				"folded", folded, "next-log-within", lograte.Every.String())
		}
		return err
	}
	x := &admission{entry: id, rules: keep, event: e}
	if out.inline {
		if err := out.bus.Publish(context.Background(), e); err != nil {
			in.cfg.Journal.Forget(id) // never dispatched: not accepted
			return err
		}
		in.dispatch(ix, e, x, false, waited, nil)
		return nil
	}
	in.adm.put(e.ID, x)
	if err := out.bus.Publish(context.Background(), e); err != nil {
		if in.adm.take(e.ID, id) != nil { // never dispatched: not accepted after all
			if from == FromPlugin && in.stopping() {
				// A step still on a worker while the daemon stops, its
				// bus's subscription closed already: the journal keeps the
				// event for every rule it triggers (plan), and the next
				// start re-admits it. Taken, as on the in-process bus.
				in.log.Debug("a step's publish kept in the journal for the next start: the bus is closing", "event", e.ID, "error", err)
				return nil
			}
			in.cfg.Journal.Forget(id)
			return err
		}
		// Dispatched all the same: Redis delivered it and went away before
		// it answered the publish. It runs, so it is accepted — refusing it
		// would have its sender send it again, and it would run twice.
		in.log.Info("an event whose publish failed was delivered all the same; accepted", "event", e.ID, "error", err)
	}
	in.adm.markPublished(e.ID, id, time.Now())
	return nil
}

// plan is what Take does with e: the rules it triggers, those that keep
// it in the journal, and how many of its triggers need room in the
// worker queue.
func (in *Ingest) plan(ix *triggers.Index[*seq.Sequence], e *bus.Event, from Source) (triggered []*seq.Sequence, keep []string, need int) {
	triggered = in.unrepeated(ix.Triggered(e.Topic), e, false)
	if in.cfg.Journal != nil {
		// While the daemon stops, a step's publish is journaled for every
		// rule it triggers: the runner is letting runs go, and the next
		// start re-admits it (Readmit) rather than losing it.
		stopping := from == FromPlugin && in.stopping()
		for _, s := range triggered {
			if (durable(s) || stopping) && !slices.Contains(keep, s.Rule.ID) {
				keep = append(keep, s.Rule.ID)
			}
		}
		// An event a run may be waiting for is kept until the waiting runs
		// have taken it (Runner.Deliver): a crash between its acceptance
		// and their records would lose it.
		// Only while a run waits: a sensor's every reading is not written.
		for _, s := range ix.Awaited(e.Topic) {
			if in.cfg.Runner.Awaits(s.Rule.ID) && !slices.Contains(keep, s.Rule.ID) {
				keep = append(keep, s.Rule.ID)
			}
		}
	}
	// A journaled trigger is submitted past the bound (Trigger.Done); the
	// others are refused by a full queue (a plain Trigger), so they need its room.
	for _, s := range triggered {
		if !slices.Contains(keep, s.Rule.ID) {
			need++
		}
	}
	return triggered, keep, need
}

// MaxGroup is the most events TakeAll journals in one write.
const MaxGroup = 256

// TakeAll takes es in order, as Take takes each (from a client or an
// input, not a plugin), and returns how many it took and the error that
// refused the next: an NDJSON body. The journal entries of a group of
// them (at most MaxGroup, as many as the worker queue has room for) are
// written together — one commit and fsync on bbolt, one command on Redis —
// instead of one an event (issue 39: ingest into a durable rule ran at
// 0.011× the same rule without). Each event is acknowledged, as with
// Take, only once its entry is in the store; they are dispatched in
// their order, after the group's write.
func (in *Ingest) TakeAll(es []*bus.Event, from Source) (int, error) {
	taken := 0
	// What the windows counted is written once for the body, before its
	// answer (one write a body of 1,000, not one a group of MaxGroup).
	counted := false
	defer func() {
		if counted {
			in.syncWindows()
		}
	}()
	for taken < len(es) {
		n, err := in.takeGroup(es[taken:], from, &counted)
		taken += n
		if err != nil {
			return taken, err
		}
	}
	return taken, nil
}

// takeGroup takes a group from the front of es (at least one event, or
// an error for the first) and returns how many it took.
func (in *Ingest) takeGroup(es []*bus.Event, from Source, counted *bool) (int, error) {
	one := func() (int, error) {
		if err := in.Take(es[0], from); err != nil {
			return 0, err
		}
		return 1, nil
	}
	out := in.out.Load()
	if len(es) == 1 || in.cfg.Fleet || in.cfg.Journal == nil || out == nil || from == FromPlugin || in.stopping() ||
		out.live != nil && !out.live() {
		return one() // Take says why, or takes the one
	}
	type planned struct {
		e    *bus.Event
		keep []string
	}
	ix := in.cfg.Rules.Current().Index()
	var group []planned
	var kept []*bus.Event
	var rules [][]string
	free := in.cfg.Room.Free() // the queue's room, taken by each event as Take asks it
	for _, e := range es[:min(len(es), MaxGroup)] {
		triggered, keep, need := in.plan(ix, e, from)
		if len(triggered) > 0 {
			if free < max(need, 1) {
				break // Take refuses it (a client) or waits for room (an input)
			}
			free -= max(need, 1)
		}
		group = append(group, planned{e, keep})
		if len(keep) > 0 {
			kept, rules = append(kept, e), append(rules, keep)
		}
	}
	if len(group) < 2 {
		return one()
	}
	var ids []string
	if len(kept) > 0 {
		var err error
		if ids, err = in.cfg.Journal.AddAll(kept, rules); err != nil {
			if folded, ok := in.warns.Allow("journal"); ok {
				in.log.Warn("refusing events the journal cannot keep", "events", len(kept), "error", err,
					"folded", folded, "next-log-within", lograte.Every.String())
			}
			return 0, err
		}
	}
	k := 0 // the next of ids
	// The holds the group's events began or ended, and the states only
	// holds watch, are written once, before the group's answer: a commit
	// each for a body of reports, not one a report
	// (BenchmarkHoldCost/hold-each-event).
	due := owed{counted: counted}
	defer in.pay(&due)
	for i, p := range group {
		// Room was found for its triggers, and it is accepted: none may be
		// refused (fire's waited).
		var err error
		switch {
		case out.inline:
			var x *admission
			if len(p.keep) > 0 {
				x = &admission{entry: ids[k], rules: p.keep, event: p.e}
			}
			// A publish refused leaves its entry, and those after it, to
			// be forgotten below: never dispatched, not accepted.
			if err = out.bus.Publish(context.Background(), p.e); err == nil {
				if x != nil {
					k++
				}
				in.dispatch(ix, p.e, x, false, true, &due)
			}
		case len(p.keep) == 0:
			err = out.bus.Publish(context.Background(), p.e)
		default:
			id := ids[k]
			k++
			in.adm.put(p.e.ID, &admission{entry: id, rules: p.keep, event: p.e})
			if err = out.bus.Publish(context.Background(), p.e); err != nil && in.adm.take(p.e.ID, id) == nil {
				// Dispatched all the same (Take): accepted.
				in.log.Info("an event whose publish failed was delivered all the same; accepted", "event", p.e.ID, "error", err)
				err = nil
			} else if err != nil {
				in.cfg.Journal.Forget(id)
			}
			if err == nil {
				in.adm.markPublished(p.e.ID, id, time.Now())
			}
		}
		if err != nil {
			for _, id := range ids[k:] { // journaled, never published: not accepted
				in.cfg.Journal.Forget(id)
			}
			return i, err
		}
	}
	return len(group), nil
}

// acceptFleet accepts an event into the fleet: the XADD is the
// acceptance. The pub/sub copy that follows (cancel-on, watchers) is best
// effort.
//
// An event whose entity's state a rule watches (a change trigger on its
// topic, previous.) is appended with that state (Stream.AppendChange): the
// member that routes it knows the state before it in the stream's order,
// whichever member accepted either report.
func (in *Ingest) acceptFleet(ctx context.Context, out *outlets, e *bus.Event) error {
	var err error
	var plan *window.Plan
	if in.cfg.FleetWindows != nil {
		plan = in.cfg.FleetWindows.PlanWindows(e)
	}
	if plan != nil {
		err = in.appendCounted(ctx, out, e, plan)
	} else if id, ops, ok := in.fleetEntity(e); ok {
		_, err = out.stream.AppendChange(ctx, e.ID, e.Topic, e.Time, e.Hops, e.Raw, id, state.StateOf(e), in.cfg.States.MaxEntities(),
			in.cfg.States.ForgetAfter(), in.cfg.Now(), ops)
	} else {
		_, err = out.stream.Append(ctx, e.ID, e.Topic, e.Time, e.Hops, e.Raw)
	}
	if err != nil {
		return err
	}
	if err := out.bus.Publish(ctx, e); err != nil && !errors.Is(err, bus.ErrNoSubscriber) {
		in.log.Debug("fleet: the pub/sub copy of an accepted event was not sent", "event", e.ID, "error", err)
	}
	return nil
}

// MaxWindowTries bounds how often an append retries its windows'
// compare-and-sets when other members wrote the same series meanwhile:
// past it the event is refused (a client retries it later).
const MaxWindowTries = 16

// appendCounted appends e with its counts in the fleet's windows (plan)
// and, when a rule watches it, its entity's state: when another member
// wrote one of the series since this one saw it, nothing is written, and
// the counts are worked out again from what is there now.
func (in *Ingest) appendCounted(ctx context.Context, out *outlets, e *bus.Event, plan *window.Plan) error {
	en := store.Entry{EventID: e.ID, Topic: e.Topic, At: e.Time, Hops: e.Hops, Raw: e.Raw, Now: in.cfg.Now()}
	if id, ops, ok := in.fleetEntity(e); ok {
		en.Entity, en.State, en.Ops = id, state.StateOf(e), ops
		en.MaxEntities, en.ForgetAfter = in.cfg.States.MaxEntities(), in.cfg.States.ForgetAfter()
	}
	for try := 0; ; try++ {
		en.Windows = en.Windows[:0]
		for _, op := range plan.Ops() {
			en.Windows = append(en.Windows, store.WindowOp(op))
		}
		_, res, err := out.stream.AppendEntry(ctx, en)
		if err != nil {
			return err
		}
		if res.Conflicts == nil {
			plan.Applied(res.Results)
			return nil
		}
		if try+1 >= MaxWindowTries {
			return ErrContended
		}
		for i, v := range res.Conflicts {
			plan.Conflict(i, v)
		}
		plan.Rebuild()
	}
}

// fleetEntity is e's entity when a rule it triggers watches its state —
// reads previous., or has a change trigger on e's topic —, and false
// when none does, no state is kept, or e names no entity. ops are the
// holds and thresholds with hysteresis on e's topic, with what the
// append script needs of e to run them (state.SigOf).
func (in *Ingest) fleetEntity(e *bus.Event) (string, []store.TriggerOp, bool) {
	if in.cfg.States == nil {
		return "", nil, false
	}
	watched := false
	var ops []store.TriggerOp
	for _, s := range unique(in.cfg.Rules.Current().Index().Triggered(e.Topic)) {
		watched = watched || s.Previous
		for _, c := range s.Rule.Changes {
			if !c.Topic.Match(e.Topic) {
				continue
			}
			watched = true
			if c.For <= 0 && c.Hysteresis <= 0 {
				continue // decided from the entry's prior state (state.ChangeOf)
			}
			sig := state.SigOf(c, e.View)
			ops = append(ops, store.TriggerOp{Key: state.TriggerKey(s.Rule.ID, c), Def: c.String(), Hold: c.For > 0, For: c.For,
				Value: sig.Value, Threshold: c.Threshold(), HasFrom: len(c.From) > 0, HasTo: len(c.To) > 0,
				In: sig.In, From: sig.From, Number: sig.Number, Rearmed: sig.Rearmed})
		}
	}
	if !watched {
		return "", nil, false
	}
	id, ok := in.cfg.States.Entity(e)
	return id, ops, ok
}

// Dispatch is the bus subscriber: cancels first (an event that both
// cancels a rule's runs and triggers it starts the new run after the old
// ones are gone), then triggers. It only queues work. On the in-process
// bus (ConnectLocal) Take dispatches what it accepts itself; Dispatch is
// for an event put on that bus by someone else.
func (in *Ingest) Dispatch(e *bus.Event) {
	in.dispatch(nil, e, nil, true, false, nil)
}

// DispatchWaiting is Dispatch for the Redis subscription. An event from
// pub/sub has no client to answer "busy, retry later": while the worker
// queue is full the subscription waits for room — Redis buffers what
// arrives meanwhile — rather than have the event's triggers refused.
// (Past Redis's client-output-buffer-limit for pub/sub it drops the
// subscriber: a loss the subscription logs, as for any lost connection;
// package bus.)
func (in *Ingest) DispatchWaiting(e *bus.Event) {
	ix := in.cfg.Rules.Current().Index()
	if !in.cfg.Fleet {
		if n := len(ix.Triggered(e.Topic)); n > 0 && !in.cfg.Room.Fits(n) {
			in.cfg.Room.WaitRoom(n, in.cfg.Stop)
		}
	}
	in.dispatch(ix, e, nil, true, true, nil)
}

// dispatch is Dispatch of an event whose admission is x — or, with
// lookup and x nil, the admission waiting for its id, if any — and which,
// if waited, came from a source that waited for room in the pool (fire).
// ix is the rule set's index the event was taken on (Take's: one snapshot
// an event, which decided its journaling too); nil, the current. With
// due, the holds e began or ended, and its entity's state when holds
// alone watch it, are written by the caller, which it tells so in due (a
// group's, once for all its events before their answer); nil, here.
func (in *Ingest) dispatch(ix *triggers.Index[*seq.Sequence], e *bus.Event, x *admission, lookup, waited bool, due *owed) {
	if in.cfg.Taps.Watching() { // the clock is read only for a recorder
		in.cfg.Taps.Dispatched(in.cfg.Now(), e)
	}
	var change state.Change
	if in.cfg.States != nil {
		change = in.cfg.States.Observe(e)
	}
	if in.cfg.Windows != nil && in.cfg.Windows.ObserveWindows(e, change) {
		// What a window counted is in the store before the event is
		// acknowledged: a kill after its 202 loses no count. An event the
		// Redis bus delivers (lookup) was answered when it was published:
		// its count is written within 10 ms, with others, as a state is.
		switch {
		case due != nil:
			due.windows = true
		case lookup:
			in.cfg.Windows.SyncWindowsSoon()
		default:
			in.syncWindows()
		}
	}
	if ix == nil {
		ix = in.cfg.Rules.Current().Index()
	}
	if len(ix.Cancelled(e.Topic)) > 0 {
		in.cfg.Runner.CancelMatching(e)
	}
	awaited := unique(ix.Awaited(e.Topic))
	if in.cfg.Fleet {
		// A fleet triggers rules from its ingest stream, not here; its
		// waiting runs hear the pub/sub copy, as its cancels do.
		for _, s := range awaited {
			in.cfg.Runner.Deliver(s.Rule.ID, e, nil)
		}
		return
	}
	triggered, unchanged := in.changed(unique(in.unrepeated(ix.Triggered(e.Topic), e, true)), e, change)
	in.syncWatched(append(slices.Clip(triggered), unchanged...), e, change, due)
	if change.Changed || change.Refused != "" {
		// A hold this event began or ended is in the store before the
		// event is acknowledged: a kill after its 202 neither loses a
		// door left open nor runs one closed in time.
		if due != nil {
			due.holds = true
		} else {
			in.syncHolds()
		}
	}
	in.fire(withPrior(e, triggered, change), triggered, awaited, unchanged, x, lookup, waited)
}

// withPrior is e with the state its entity had before it (bus.Event.Prior)
// when one of the rules it triggers reads it (previous.<path>): a copy, as
// an event is never modified. e itself for every other.
func withPrior(e *bus.Event, triggered []*seq.Sequence, ch state.Change) *bus.Event {
	if ch.Prev == nil || !slices.ContainsFunc(triggered, func(s *seq.Sequence) bool { return s.Previous }) {
		return e
	}
	c := *e
	c.Prior = ch.Prev.Raw
	return &c
}

// owed is what a group's dispatches left to write before its answer:
// the holds' records, and the states of entities holds alone watch.
type owed struct {
	holds   bool
	windows bool
	states  []string
	// counted, when set, is told of windows instead of their write: its
	// caller writes them once for several groups (TakeAll).
	counted *bool
}

// pay writes what due holds: the states, then the holds, each once for
// the group, before its answer. The holds' own writer may have written
// a record already (Holds.Observe wakes it): a kill before pay leaves a
// hold whose state a start finds older, and drops it — the group was
// not answered, so its sender sends it again, and the hold begins anew.
func (in *Ingest) pay(due *owed) {
	if len(due.states) > 0 {
		if err := in.cfg.States.SyncAll(due.states); err != nil {
			if folded, ok := in.warns.Allow("state sync"); ok {
				in.log.Warn("cannot write entities' states before their holds are acknowledged; written later", "entities", len(due.states),
					"error", err, "folded", folded, "next-log-within", lograte.Every.String())
			}
		}
	}
	if due.holds {
		in.syncHolds()
	}
	if due.windows {
		if due.counted != nil {
			*due.counted = true
		} else {
			in.syncWindows()
		}
	}
}

// syncWindows writes what the windows counted (Windows.SyncWindows).
func (in *Ingest) syncWindows() {
	if err := in.cfg.Windows.SyncWindows(); err != nil {
		if folded, ok := in.warns.Allow("window sync"); ok {
			in.log.Warn("cannot write the windows before their events are acknowledged; written with the next", "error", err,
				"folded", folded, "next-log-within", lograte.Every.String())
		}
	}
}

// syncHolds writes the holds' records queued so far (Holds.Sync).
func (in *Ingest) syncHolds() {
	if in.cfg.Holds == nil {
		return
	}
	if err := in.cfg.Holds.Sync(); err != nil {
		if folded, ok := in.warns.Allow("hold sync"); ok {
			in.log.Warn("cannot write a hold before its event is acknowledged; written later", "error", err,
				"folded", folded, "next-log-within", lograte.Every.String())
		}
	}
}

// syncWatched writes e's entity's state before its rules run when e
// changed what a change trigger or hold of one of them watches — its
// field, or the whole state for changes: true — (state.Table.Sync): what
// they decided is then what a restart finds. A change of another field
// (a counter every report moves) is written within the table's 10 ms,
// with others: a report each a store write's fsync was 25× the cost.
func (in *Ingest) syncWatched(seqs []*seq.Sequence, e *bus.Event, ch state.Change, due *owed) {
	if in.cfg.States == nil || !ch.Changed {
		return
	}
	held := false // a hold watches what changed: due pays it, unless a change trigger's sync does now
	for _, s := range seqs {
		for _, c := range s.Rule.Changes {
			if !c.Topic.Match(e.Topic) || c.Field != "" && ch.Prev != nil && state.SameAt(ch.Prev.View, e.View, c.Field) {
				continue
			}
			if c.For > 0 && due != nil {
				// A hold runs nothing now: its entity's state need only
				// be kept before its record, and both before the answer.
				held = true
				continue
			}
			if err := in.cfg.States.Sync(ch.Entity); err != nil {
				if folded, ok := in.warns.Allow("state sync"); ok {
					in.log.Warn("cannot write an entity's state before its change triggers run; written later", "entity", ch.Entity,
						"error", err, "folded", folded, "next-log-within", lograte.Every.String())
				}
			}
			return
		}
	}
	if held {
		due.states = append(due.states, ch.Entity)
	}
}

// changed splits triggered into the rules e triggers and those it does
// not: a rule that hears e's topic only through change triggers (on:
// {topic, changes}) is triggered when e's change of its entity's state
// fires one (state.Fires). Without a state table none fires, and each
// such rule is warned about once a second.
func (in *Ingest) changed(triggered []*seq.Sequence, e *bus.Event, ch state.Change) (fired, unchanged []*seq.Sequence) {
	fired = triggered
	for i, s := range triggered {
		if in.byChange(s, e, ch) {
			if unchanged != nil {
				fired = append(fired, s)
			}
			continue
		}
		if unchanged == nil {
			fired = append(make([]*seq.Sequence, 0, len(triggered)), triggered[:i]...)
		}
		unchanged = append(unchanged, s)
	}
	return fired, unchanged
}

// byChange reports whether e triggers s: by one of its topic patterns, or
// by a change trigger ch fires. A change trigger with for: fires nothing
// here: it hears every event on its topic (Holds), and its rule runs when
// a hold comes due.
func (in *Ingest) byChange(s *seq.Sequence, e *bus.Event, ch state.Change) bool {
	r := s.Rule
	if len(r.Changes) == 0 {
		return true
	}
	if in.cfg.States == nil {
		if !r.OnTopic(e.Topic) {
			in.cfg.Runner.TurnAway(s, e, whyNoState)
			if folded, ok := in.warns.Allow("no state " + r.ID); ok {
				in.log.Warn("a change trigger fires nothing: no entity state is kept (state.max-entities is -1)", "rule", r.ID,
					"folded", folded, "next-log-within", lograte.Every.String())
			}
		}
		return r.OnTopic(e.Topic)
	}
	fires := r.OnTopic(e.Topic)
	if ch.Refused != "" && !fires {
		// The table did not keep the entity's state: no change trigger
		// can tell, and a hold of it ends (Holds hears it below).
		in.cfg.Runner.TurnAway(s, e, whyRefused[ch.Refused])
	}
	for i, c := range r.Changes {
		switch {
		case !c.Topic.Match(e.Topic):
		case c.For > 0:
			if in.cfg.Holds != nil {
				in.cfg.Holds.Observe(r.ID, i, c, ch, e)
			}
		case c.Hysteresis > 0: // asked of every report: a dip re-arms it
			if in.cfg.States.Crossed(r.ID+"\x00"+strconv.Itoa(i), c, ch, e.View) {
				fires = true
			}
		case !fires:
			fires = state.Fires(c, ch, e.View)
		}
	}
	return fires
}

// Why-nots of change triggers (ruled log why), by the state table's
// refusal.
const whyNoState = "a change trigger needs entity state, which is kept off (state.max-entities -1)"

var whyRefused = map[state.Refusal]string{
	state.RefusedFull:  "the state table was full: the entity's state was not kept, and its change triggers cannot tell",
	state.RefusedBytes: "the state table was at its size: the entity's state was not kept, and its change triggers cannot tell",
	state.RefusedID:    "the event's key value names no entity (too long, or a control character)",
}

// readmitTo splits a re-admitted entry's rules (Readmit): those it runs,
// and those heard through holds alone, which the holds hear instead.
func (in *Ingest) readmitTo(take []*seq.Sequence, e *bus.Event, ch state.Change) (fired, held []*seq.Sequence) {
	for _, s := range take {
		r := s.Rule
		runs := len(r.Changes) == 0 || r.OnTopic(e.Topic)
		for i, c := range r.Changes {
			switch {
			case !c.Topic.Match(e.Topic):
			case c.For > 0:
				if in.cfg.Holds != nil && in.cfg.States != nil {
					in.cfg.Holds.Observe(r.ID, i, c, ch, e)
				}
			default:
				runs = true
			}
		}
		if runs {
			fired = append(fired, s)
		} else {
			held = append(held, s)
		}
	}
	return fired, held
}

// unrepeated is triggered without the rules that held a record of e at
// the start, when a step published e (Readmit's repeats). A step's event
// is named by the step's key (bus.StepEventID), so it is the same event
// when the step runs again. A kill after the event's durable rule wrote
// its record, and before the publishing step's own record was dropped,
// replays both: the rule's record runs e, and the step, run again,
// publishes e again. The rule is not given it a second time. Without the
// kill the step is not run again, and nothing is turned away. note counts
// and logs what is turned away: once an event, where it is dispatched.
func (in *Ingest) unrepeated(triggered []*seq.Sequence, e *bus.Event, note bool) []*seq.Sequence {
	if len(in.repeats) == 0 || e.Hops == 0 {
		return triggered
	}
	var out []*seq.Sequence
	for i, s := range triggered {
		if !in.repeats[HeldEvent{Rule: s.Rule.ID, EventID: e.ID}] {
			if out != nil {
				out = append(out, s)
			}
			continue
		}
		if out == nil {
			out = append(make([]*seq.Sequence, 0, len(triggered)), triggered[:i]...)
		}
		if !note {
			continue
		}
		in.repeated.Add(1)
		if folded, ok := in.warns.Allow("repeat " + s.Rule.ID); ok {
			in.log.Info("a step run again after a kill published an event its rule already held; not taken again",
				"rule", s.Rule.ID, "event", e.ID, "folded", folded, "next-log-within", lograte.Every.String())
		}
	}
	if out == nil {
		return triggered
	}
	return out
}

// unique is seqs without repeats (a rule under two matching patterns).
func unique(seqs []*seq.Sequence) []*seq.Sequence {
	var out []*seq.Sequence
	for _, s := range seqs {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Resumed hears that the Redis bus subscription is back after a loss
// and settled (bus.RedisConfig.Resumed), on the subscription's goroutine:
// each journaled event published before that and not delivered was lost
// in the gap, and is dispatched now — by this process, not left in the
// journal for the next start.
func (in *Ingest) Resumed(channel string, before time.Time) {
	if channel != bus.RedisChannel || in.cfg.Journal == nil {
		return
	}
	lost := in.adm.lostBefore(before)
	for _, x := range lost {
		in.dispatch(nil, x.event, x, false, false, nil)
	}
	if len(lost) > 0 {
		in.log.Info("bus: dispatched journaled events its subscription lost while it was down", "events", len(lost))
	}
}

// fire starts the triggered rules for e; those it was journaled for (x,
// or the admission waiting for e) let the journal go as they take it.
//
// waited says room was found in the pool for the event's triggers before
// it was accepted (Take's check, or pool.WaitRoom for the events file
// and the Redis subscription): they are then never refused
// (seq.Trigger.Waited) — a step submitted meanwhile may have taken that
// room, and an accepted event must not lose a trigger to it.
//
// unchanged are rules the event was journaled for whose change triggers
// it did not fire: they took it, so a start does not give it to them.
func (in *Ingest) fire(e *bus.Event, triggered, awaited, unchanged []*seq.Sequence, x *admission, lookup, waited bool) {
	if lookup && in.cfg.Journal != nil && x == nil {
		x = in.adm.take(e.ID, "")
	}
	if x == nil {
		for _, s := range awaited {
			in.cfg.Runner.Deliver(s.Rule.ID, e, nil)
		}
		for _, s := range triggered {
			in.cfg.Runner.Fire(seq.Trigger{Seq: s, Event: e, Waited: waited})
		}
		return
	}
	// Each rule the entry was kept for says when it took the event
	// (journal.Waiters): one that did is not given it again by a start.
	var names []string
	for _, s := range append(append(slices.Clip(unchanged), awaited...), triggered...) {
		if slices.Contains(x.rules, s.Rule.ID) {
			names = append(names, s.Rule.ID)
		}
	}
	dones := in.cfg.Journal.Waiters(x.entry, names)
	next := func() func() { d := dones[0]; dones = dones[1:]; return d }
	for _, s := range unchanged {
		if slices.Contains(x.rules, s.Rule.ID) {
			next()()
		}
	}
	// Waiting runs first: an event that both ends a wait and triggers the
	// rule is the waiting run's before it is a new run's.
	for _, s := range awaited {
		if slices.Contains(x.rules, s.Rule.ID) {
			in.cfg.Runner.Deliver(s.Rule.ID, e, next())
		} else {
			in.cfg.Runner.Deliver(s.Rule.ID, e, nil)
		}
	}
	for _, s := range triggered {
		if slices.Contains(x.rules, s.Rule.ID) {
			in.cfg.Runner.Fire(seq.Trigger{Seq: s, Event: e, Done: next()})
		} else {
			in.cfg.Runner.Fire(seq.Trigger{Seq: s, Event: e, Waited: waited})
		}
	}
}

// Held lists, before Replay, which rule holds a pending record for which
// event: a journal entry whose rule wrote its record before the crash but
// whose deletion had not landed is not admitted twice (Readmit). Before
// Replay, because a replayed step that comes due at once removes its
// record. The value says whether a step published the event (its Hops):
// Readmit keeps those to turn away a replayed step's publish of them
// (unrepeated).
//
// Each record is listed twice: under its event's id and time, which is
// how Readmit knows the entry it ran from, and under its id alone (Time
// 0), for what a step published (named by the step's key, dated anew
// when the step runs again) and for the holds. An id is not unique by
// itself: a client may send events that all say "id": "q1" (a device's
// name), and a record of the first held back every later one queued
// behind it at a kill (an outside tester's soak).
func Held(recs []seq.Pending) map[HeldEvent]bool {
	held := make(map[HeldEvent]bool, 2*len(recs))
	for _, p := range recs {
		held[HeldEvent{p.Rule, p.EventID, p.EventTime}] = p.Hops > 0
		held[HeldEvent{Rule: p.Rule, EventID: p.EventID}] = p.Hops > 0
	}
	return held
}

// HeldEvent is a rule holding a pending record of an event: its id, and
// its time (unix nanoseconds) or 0 for any (Held). Its strings are the
// records': a start of 100,000 records made as many joined strings to key
// them (issue 38).
type HeldEvent struct {
	Rule, EventID string
	Time          int64
}

// Readmit fires what the journal still holds, each entry to the rules it
// was kept for that still exist, still trigger on its topic and hold no
// pending record for it (held, from Held). It runs after Replay and before
// the bus, as a replayed step does, and returns the entries it found.
//
// What a rule holds at the start of an event a step published — a record
// of it, or its journal entry re-admitted to the rule — stays with Ingest
// (unrepeated) for as long as the process runs: the step that published
// it, replayed, publishes it again, maybe hours later. Their count is the
// records' and the journal's at the start, which their stores bound.
func (in *Ingest) Readmit(held map[HeldEvent]bool) int {
	for h, byStep := range held {
		if byStep && h.Time == 0 {
			in.repeat(h)
		}
	}
	j := in.cfg.Journal
	if j == nil {
		return 0
	}
	entries, err := j.Load()
	if err != nil {
		in.log.Error("cannot read the journal; its events wait for the next start", "error", err)
		return 0
	}
	snap := in.cfg.Rules.Current()
	fired := 0
	for _, en := range entries {
		e, err := en.Rebuild()
		if err != nil {
			in.log.Warn("dropping a journal entry whose event will not decode", "entry", en.ID, "error", err)
			j.Ack(en.ID)
			continue
		}
		var take, await []*seq.Sequence
		for _, s := range snap.Index().Triggered(en.Topic) {
			if _, ok := held[HeldEvent{s.Rule.ID, en.EventID, en.Time}]; !ok && slices.Contains(en.Rules, s.Rule.ID) && !slices.Contains(take, s) {
				take = append(take, s)
			}
		}
		// A run replayed waiting (wait-for) hears an event accepted before
		// the stop that it had not taken yet.
		for _, s := range unique(snap.Index().Awaited(en.Topic)) {
			if slices.Contains(en.Rules, s.Rule.ID) {
				await = append(await, s)
			}
		}
		// The entities' states hear it (the kill may have come before its
		// dispatch did). A rule the entry waits for had not taken it: a
		// change trigger runs (at least once: whether its dispatch found a
		// change is not known — the state may have it already), a hold's
		// begins if it is a change (Holds); a rule heard through holds
		// alone takes it now.
		var change state.Change
		if in.cfg.States != nil {
			change = in.cfg.States.Observe(e)
		}
		take, unchanged := in.readmitTo(take, e, change)
		if len(unchanged) > 0 {
			in.syncHolds() // the holds they began are kept before the entry lets them go
		}
		e = withPrior(e, take, change)
		var names []string
		for _, s := range append(append(slices.Clip(unchanged), await...), take...) {
			names = append(names, s.Rule.ID)
		}
		// A rule refused for a problem of its file keeps the entry: it is
		// given the event when mended (ReadmitAbsent), not lost to a typo
		// and a restart.
		var waiting []string
		for _, r := range en.Rules {
			if _, ok := held[HeldEvent{r, en.EventID, en.Time}]; !ok && snap.Refused(r) {
				waiting = append(waiting, r)
			}
		}
		dones := j.Waiters(en.ID, append(names, waiting...))
		if len(waiting) > 0 {
			in.absentMu.Lock()
			for i, r := range waiting {
				in.absent = append(in.absent, absentEntry{rule: r, entry: en, done: dones[len(names)+i]})
			}
			in.absentMu.Unlock()
			dones = dones[:len(names)]
		}
		for i := range unchanged {
			dones[i]()
		}
		dones = dones[len(unchanged):]
		for i, s := range await {
			in.cfg.Runner.Deliver(s.Rule.ID, e, dones[i])
		}
		for i, s := range take {
			if e.Hops > 0 { // a step's event: the step, replayed, may publish it again
				in.repeat(HeldEvent{Rule: s.Rule.ID, EventID: en.EventID})
			}
			in.cfg.Runner.Fire(seq.Trigger{Seq: s, Event: e, Done: dones[len(await)+i]})
		}
		fired += len(take)
	}
	in.readmitted.Store(int64(len(entries)))
	if len(entries) > 0 {
		in.log.Info("re-admitted journaled events", "events", len(entries), "triggers", fired)
	}
	return len(entries)
}

// absentEntry is a journal entry kept for a rule refused at the start.
type absentEntry struct {
	rule  string
	entry journal.Entry
	done  func()
}

// ReadmitAbsent gives the journal's events a start kept for rules refused
// then (Readmit) to those loaded now, after a reload of the rules: a rule
// triggered by the event's topic (or a change trigger of it) runs; a rule
// still refused keeps waiting; a rule no file refuses any more is gone,
// and the entry no longer waits for it. It returns how many it fired.
func (in *Ingest) ReadmitAbsent() int {
	in.absentMu.Lock()
	kept := in.absent
	in.absent = nil
	in.absentMu.Unlock()
	if len(kept) == 0 {
		return 0
	}
	snap := in.cfg.Rules.Current()
	fired := 0
	var still []absentEntry
	for _, a := range kept {
		s := snap.Rule(a.rule)
		switch {
		case s == nil && snap.Refused(a.rule):
			still = append(still, a)
			continue
		case s == nil:
			a.done() // the rule is gone: the entry waits for it no more
			continue
		}
		e, err := a.entry.Rebuild()
		if err != nil {
			a.done()
			continue
		}
		// As Readmit would have: its waiting runs (resumed by the reload,
		// seq.Runner.ReplayAbsent) hear it first, then it triggers.
		awaits, trig := awaitedBy(s.Rule, e.Topic), triggeredBy(s.Rule, e.Topic)
		done := a.done
		if awaits && trig {
			done = after(2, a.done)
		}
		if awaits {
			in.cfg.Runner.Deliver(a.rule, e, done)
		}
		switch {
		case trig:
			in.cfg.Runner.Fire(seq.Trigger{Seq: s, Event: e, Done: done})
			fired++
		case !awaits:
			a.done()
		}
	}
	in.absentMu.Lock()
	in.absent = append(in.absent, still...)
	in.absentMu.Unlock()
	if fired > 0 {
		in.log.Info("journaled events given to rules loaded again", "triggers", fired)
	}
	return fired
}

// awaitedBy reports whether a wait-for step of r listens on topic.
func awaitedBy(r *rules.Rule, topic string) bool {
	return slices.ContainsFunc(r.Steps, func(st rules.Step) bool { return st.Wait != nil && st.Wait.Pattern.Match(topic) })
}

// after is done once it has been called n times.
func after(n int32, done func()) func() {
	var left atomic.Int32
	left.Store(n)
	return func() {
		if left.Add(-1) == 0 {
			done()
		}
	}
}

// triggeredBy reports whether r runs on an event of topic: one of its
// on: topics, or a change trigger without a hold (what it would make of
// the change is not known any more: at least once).
func triggeredBy(r *rules.Rule, topic string) bool {
	if r.OnTopic(topic) {
		return true
	}
	for _, c := range r.Changes {
		if c.For == 0 && c.Topic.Match(topic) {
			return true
		}
	}
	return false
}

// repeat notes that a rule holds an event a step published (Readmit).
func (in *Ingest) repeat(h HeldEvent) {
	if in.repeats == nil {
		in.repeats = make(map[HeldEvent]bool)
	}
	in.repeats[h] = true
}

// ReadEvents ingests NDJSON events from r (the events file, --events) to
// its end or until ctx ends or Stop. A file or a pipe has no client to
// tell "busy, retry later": while the worker queue is full it waits for
// room, and while the store or the bus refuses an event it tries again, so
// every line is read and none is dropped — back-pressure on the writer of
// a pipe, never an early end.
func (in *Ingest) ReadEvents(ctx context.Context, r io.Reader) {
	ok, bad, err := bus.ReadNDJSON(ctx, r, in.cfg.Decoder, func(e *bus.Event) error {
		if err := in.TakeWaiting(ctx, e); err != nil {
			return err
		}
		in.counts.Accept()
		return nil
	}, func(line int, err error) {
		reason := bus.ReasonOf(err)
		in.counts.Reject(reason)
		// A file of garbage wrote a warning a line: folded to one a
		// second per reason; the count of rejected lines keeps every one.
		if folded, ok := in.warns.Allow("rejected " + string(reason)); ok {
			in.log.Warn("event rejected", "line", line, "error", err, "folded", folded, "next-log-within", lograte.Every.String())
		}
	})
	in.log.Info("events input done", "accepted", ok, "rejected", bad, "error", err)
}

// TakeWaiting is Take for an input with no client to retry (the events
// file, an MQTT broker): it waits for room in the worker queue, and
// retries what the store or the bus refused (backing off to 2 s, logging
// the first refusal of each spell and its end), until the event is taken,
// ctx ends or Stop.
func (in *Ingest) TakeWaiting(ctx context.Context, e *bus.Event) error {
	_, err := in.TakeAllWaiting(ctx, []*bus.Event{e})
	return err
}

// TakeAllWaiting is TakeAll for an input, waiting and retrying as
// TakeWaiting does, until every event of es is taken (in order), ctx ends
// or Stop: then it returns how many it took and ErrStopping. An MQTT
// client hands it the messages that came while the last group was
// written, so their journal entries share a write.
func (in *Ingest) TakeAllWaiting(ctx context.Context, es []*bus.Event) (int, error) {
	taken := 0
	wait, refused := time.Duration(0), false
	for taken < len(es) {
		n, err := in.TakeAll(es[taken:], FromInput)
		taken += n
		switch {
		case err == nil:
			if refused {
				in.log.Info("events input: taken after a refusal", "event", es[taken-1].ID)
				refused, wait = false, 0
			}
			continue
		case in.stopping() || ctx.Err() != nil:
			return taken, ErrStopping
		}
		if !refused {
			e := es[taken]
			in.log.Warn("events input: the event was refused; trying it again", "event", e.ID, "topic", e.Topic, "error", err)
			refused = true
		}
		wait = min(max(2*wait, 50*time.Millisecond), 2*time.Second)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		case <-in.cfg.Stop:
		}
	}
	return taken, nil
}
