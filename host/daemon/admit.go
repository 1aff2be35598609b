package daemon

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq"
)

// errBusy refuses an event while the worker pool's queue is full: answered
// with 503 and Retry-After, so the client keeps it, rather than 202 and a
// trigger the pool then refuses.
var errBusy = errors.New("daemon: the worker queue is full; retry later")

// errBusDown refuses an event while this process's Redis bus subscription
// is down (Redis restarting): accepted, it would not reach its rules.
var errBusDown = errors.New("daemon: the bus subscription is down (Redis reconnecting); retry later")

// admissions hands journal entries from ingest to dispatch. On the
// in-process bus dispatch runs inside the publish; on Redis it runs when the
// subscription delivers the event back, so the entry waits here, by event
// id, oldest first (ids are the client's and may repeat).
type admissions struct {
	mu sync.Mutex
	m  map[string][]*admission
}

// admission is one journaled event on its way to its rules.
type admission struct {
	entry string   // the journal entry
	rules []string // the rules it was journaled for
	event *bus.Event
	// published is when its publish returned (zero before): on Redis, an
	// admission published before its subscription's resume and not taken
	// by then never will be (lostBefore).
	published time.Time
}

func (a *admissions) put(eventID string, x *admission) {
	a.mu.Lock()
	if a.m == nil {
		a.m = map[string][]*admission{}
	}
	a.m[eventID] = append(a.m[eventID], x)
	a.mu.Unlock()
}

// take removes and returns the oldest admission for eventID, or the one for
// entry when entry is not "" (nil when dispatch took it already).
func (a *admissions) take(eventID, entry string) *admission {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.m[eventID]
	i := 0
	if entry != "" {
		i = slices.IndexFunc(q, func(x *admission) bool { return x.entry == entry })
	}
	if i < 0 || i >= len(q) {
		return nil
	}
	x := q[i]
	if q = slices.Delete(q, i, i+1); len(q) == 0 {
		delete(a.m, eventID)
	} else {
		a.m[eventID] = q
	}
	return x
}

// markPublished notes when the publish of entry's event returned.
func (a *admissions) markPublished(eventID, entry string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, x := range a.m[eventID] {
		if x.entry == entry {
			x.published = at
		}
	}
}

// lostBefore removes and returns the admissions whose publish returned
// before t: told that everything published before t has been delivered or
// lost (bus.RedisConfig.Resumed), those still here were lost.
func (a *admissions) lostBefore(t time.Time) []*admission {
	a.mu.Lock()
	defer a.mu.Unlock()
	var lost []*admission
	for id, q := range a.m {
		keep := q[:0]
		for _, x := range q {
			if !x.published.IsZero() && x.published.Before(t) {
				lost = append(lost, x)
			} else {
				keep = append(keep, x)
			}
		}
		if len(keep) == 0 {
			delete(a.m, id)
		} else {
			a.m[id] = keep
		}
	}
	return lost
}

// durable reports whether a rule has a durable step: whether an event that
// triggers it is journaled before it is acknowledged.
func durable(s *seq.Sequence) bool {
	return slices.ContainsFunc(s.Rule.Steps, func(st rules.Step) bool { return st.Durable })
}

// source is where an event comes from, which decides what ingest does
// when it cannot take the event now.
type source uint8

const (
	// fromClient: an HTTP client, told "busy, retry later" (errBusy,
	// errBusDown) rather than made to wait.
	fromClient source = iota
	// fromInput: a file or a pipe (--events), which has no client to
	// tell: it waits for room; what the store or bus refuses, its reader
	// tries again.
	fromInput
	// fromPlugin: a step's publish, on a worker. It never waits for the
	// pool (a worker waiting for its own pool's room could wait forever),
	// and its triggers of durable rules are journaled like an HTTP
	// event's: kept from the moment the publishing step returns, whose
	// record covered it until then — a chain of durable rules loses no
	// link to a kill between them.
	fromPlugin
)

// ingest takes an accepted event onto the bus: from HTTP, the events file
// or a plugin's publish (from). An event that triggers a rule with a
// durable step is written to the journal first (package journal):
// acknowledged means kept, until each such rule has taken it. While the
// pool's queue has no room for the triggers it would submit, an event from
// a client is refused (errBusy) instead of accepted and then dropped, and
// one from an input waits for that room until the daemon stops.
func (d *Daemon) ingest(e *bus.Event, from source) error {
	if d.stopped.Load() {
		return errors.New("daemon: stopping")
	}
	if d.stream != nil {
		return d.acceptFleet(context.Background(), e)
	}
	triggered := d.ruleSnap().Index().Triggered(e.Topic)
	var keep []string
	if d.journal != nil {
		for _, s := range triggered {
			if durable(s) && !slices.Contains(keep, s.Rule.ID) {
				keep = append(keep, s.Rule.ID)
			}
		}
	}
	// A journaled trigger is submitted past the bound (Trigger.Done); the
	// others are refused by a full queue (a plain Trigger), so they need its room.
	need := 0
	for _, s := range triggered {
		if !slices.Contains(keep, s.Rule.ID) {
			need++
		}
	}
	if from != fromPlugin && d.busSub != nil && !d.busSub.Live() {
		// Redis is back, but this process's subscription is not yet: an
		// event published now would reach other subscribers (so Redis
		// counts it received) and not this process's rules.
		return errBusDown
	}
	if from != fromPlugin && len(triggered) > 0 && !d.pool.Fits(max(need, 1)) {
		if from == fromClient {
			d.busy.Add(1)
			return errBusy
		}
		if !d.pool.WaitRoom(max(need, 1), d.quit) {
			return errors.New("daemon: stopping")
		}
	}
	if from != fromPlugin {
		// Room was found for its triggers, and it is about to be
		// accepted: from here on none may be refused (fire's waited). The
		// in-process bus dispatches within Publish, on this goroutine.
		d.waited.Store(e, true)
		defer d.waited.Delete(e)
	}
	if len(keep) == 0 {
		return d.bus.Publish(context.Background(), e)
	}
	id, err := d.journal.Add(e, keep)
	if err != nil {
		d.log.Warn("refusing an event the journal cannot keep", "topic", e.Topic, "event", e.ID, "error", err)
		return err
	}
	d.adm.put(e.ID, &admission{entry: id, rules: keep, event: e})
	if err := d.bus.Publish(context.Background(), e); err != nil {
		if d.adm.take(e.ID, id) != nil { // never dispatched: not accepted after all
			d.journal.Forget(id)
			return err
		}
		// Dispatched all the same: Redis delivered it and went away before
		// it answered the publish. It runs, so it is accepted — refusing it
		// would have its sender send it again, and it would run twice.
		d.log.Info("an event whose publish failed was delivered all the same; accepted", "event", e.ID, "error", err)
	}
	d.adm.markPublished(e.ID, id, time.Now())
	return nil
}

// busResumed hears that the Redis bus subscription is back after a loss
// and settled (bus.RedisConfig.Resumed), on the subscription's goroutine:
// each journaled event published before that and not delivered was lost
// in the gap, and is dispatched now — by this process, not left in the
// journal for the next start.
func (d *Daemon) busResumed(channel string, before time.Time) {
	if channel != bus.RedisChannel || d.journal == nil {
		return
	}
	lost := d.adm.lostBefore(before)
	for _, x := range lost {
		d.dispatchAs(x.event, x, false)
	}
	if len(lost) > 0 {
		d.log.Info("bus: dispatched journaled events its subscription lost while it was down", "events", len(lost))
	}
}

// fire starts the triggered rules for e; those it was journaled for (x,
// or the admission waiting for e) let the journal go as they take it.
//
// waited says room was found in the pool for the event's triggers before
// it was accepted (ingest's check, or pool.WaitRoom for the events file
// and the Redis subscription): they are then never refused
// (seq.Trigger.Waited) — a step submitted meanwhile may have taken that
// room, and an accepted event must not lose a trigger to it.
func (d *Daemon) fire(e *bus.Event, triggered []*seq.Sequence, x *admission, waited bool) {
	if d.journal != nil && x == nil {
		x = d.adm.take(e.ID, "")
	}
	if x == nil {
		for _, s := range triggered {
			d.runner.Fire(seq.Trigger{Seq: s, Event: e, Waited: waited})
		}
		return
	}
	n := 0
	for _, s := range triggered {
		if slices.Contains(x.rules, s.Rule.ID) {
			n++
		}
	}
	done := d.journal.Waiter(x.entry, n)
	for _, s := range triggered {
		if slices.Contains(x.rules, s.Rule.ID) {
			d.runner.Fire(seq.Trigger{Seq: s, Event: e, Done: done})
		} else {
			d.runner.Fire(seq.Trigger{Seq: s, Event: e, Waited: waited})
		}
	}
}

// heldEvents lists, before Replay, which rule holds a pending record for
// which event: a journal entry whose rule wrote its record before the crash
// but whose deletion had not landed is not admitted twice. Before Replay,
// because a replayed step that comes due at once removes its record.
func heldEvents(recs []seq.Pending) map[string]bool {
	held := make(map[string]bool, len(recs))
	for _, p := range recs {
		held[p.Rule+"\x00"+p.EventID] = true
	}
	return held
}

// readmit fires what the journal still holds, each entry to the rules it
// was kept for that still exist, still trigger on its topic and hold no
// pending record for it. It runs after Replay and before the bus, as a
// replayed step does.
func (d *Daemon) readmit(held map[string]bool) {
	if d.journal == nil {
		return
	}
	entries, err := d.journal.Load()
	if err != nil {
		d.log.Error("cannot read the journal; its events wait for the next start", "error", err)
		return
	}
	snap := d.ruleSnap()
	fired := 0
	for _, en := range entries {
		e, err := en.Rebuild()
		if err != nil {
			d.log.Warn("dropping a journal entry whose event will not decode", "entry", en.ID, "error", err)
			d.journal.Ack(en.ID)
			continue
		}
		triggered := snap.Index().Triggered(en.Topic)
		var take []*seq.Sequence
		for _, s := range triggered {
			if slices.Contains(en.Rules, s.Rule.ID) && !held[s.Rule.ID+"\x00"+en.EventID] && !slices.Contains(take, s) {
				take = append(take, s)
			}
		}
		done := d.journal.Waiter(en.ID, len(take))
		for _, s := range take {
			d.runner.Fire(seq.Trigger{Seq: s, Event: e, Done: done})
		}
		fired += len(take)
	}
	d.readmitted = len(entries)
	if len(entries) > 0 {
		d.log.Info("re-admitted journaled events", "events", len(entries), "triggers", fired)
	}
}

// journalStatus is the journal's counters for Status.
func (d *Daemon) journalStatus() *api.JournalStatus {
	if d.journal == nil {
		return nil
	}
	st := d.journal.Stats()
	return &api.JournalStatus{Stats: st, Readmitted: d.readmitted, Busy: d.busy.Load()}
}
