package hold

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/state"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// DefaultMax bounds the holds running at once: one an entity and hold
// trigger, and the state table holds 10,000 entities by default.
const DefaultMax = 10_000

// Store keeps the holds (host/store's Bolt and Redis).
type Store interface {
	HGetAll(key string) (map[string]string, error)
	// HSetDel sets fields to values and deletes del in one write (one
	// commit: a flush of many holds costs one fsync).
	HSetDel(key string, fields []string, values [][]byte, del []string) error
}

// Clock is the daemon's clock and its timers (sched.Scheduler, sched.Virtual).
type Clock = sched.Clock

// Config is a Holds'.
type Config struct {
	Store Store
	Clock Clock
	// Fire starts the rule's run with the event that began the hold; done
	// is called, once, when the run's fate no longer depends on this
	// process's memory (seq.Trigger.Done). It may be called before Fire
	// returns. False: no run started (the rule's trigger was edited since
	// the hold began), counted as dropped, not fired.
	Fire func(d Due, done func()) bool
	// Entity is an entity's state as the state table has it now, for the
	// check at a start.
	Entity func(id string) (state.Entity, bool)
	// Window is how long past due a hold found at a start may still run
	// (the replay window); 0: any.
	Window time.Duration
	// Max bounds the holds running at once; 0 is DefaultMax.
	Max int
	// Refused, when set, reports whether a rule not loaded now was refused
	// for a problem of its file (a typo, a plugin missing): Restore keeps
	// its holds in the store for a start that loads it, rather than drop
	// them as a gone rule's.
	Refused func(rule string) bool
	Log     hclog.Logger
}

// Due is a hold that came due: the run it starts.
type Due struct {
	Rule    string
	Trigger int    // the change trigger's index among the rule's
	Def     string // the trigger as it was when the hold began (rules.Change.String)
	Entity  string
	Event   *bus.Event
	Began   time.Time
	// At is when it came due (its due time; a hold found overdue at a
	// start, that time too).
	At time.Time
}

// Stats are the holds' counts. Fired counts the holds that started
// their rule's run; Dropped those that came due for a trigger edited
// since they began, and those a start found stale.
type Stats struct {
	Running   int    `json:"running"`
	Began     uint64 `json:"began"`
	Fired     uint64 `json:"fired"`
	Cancelled uint64 `json:"cancelled"`
	Dropped   uint64 `json:"dropped"`
	Refused   uint64 `json:"refused"`
}

// Holds are the holds running. Safe for concurrent use.
type Holds struct {
	cfg   Config
	log   hclog.Logger
	warns lograte.Limiter

	mu      sync.Mutex
	m       map[string]*hold // by key (rule, trigger, entity)
	stopped bool
	st      Stats

	// The records' writes, in order per record, on the writer's
	// goroutine (or Sync's caller's): never under mu, a runner's lock (a
	// run's done) or the timers' goroutine. wmu guards pend; a nil value
	// deletes. fmu is held for a whole flush, so that two never write at
	// once, out of order.
	fmu   sync.Mutex
	wmu   sync.Mutex
	pend  map[string][]byte
	order []string
	kick  chan struct{}
	quit  chan struct{}
	done  chan struct{}
}

// hold is one hold running.
type hold struct {
	key, field string // field: its record's field in the store
	rec        record
	view       []byte // the event's view: what keeps holding is compared with it
	trigger    rules.Change
	timer      *sched.Timer
}

// record is a hold as the store keeps it.
type record struct {
	Rule    string          `json:"rule"`
	Trigger int             `json:"trigger"`
	Def     string          `json:"def"` // the trigger as written (rules.Change.String)
	Entity  string          `json:"entity"`
	Began   int64           `json:"began"` // unix nanoseconds
	Due     int64           `json:"due"`
	EventID string          `json:"event-id"`
	Topic   string          `json:"topic"`
	Time    int64           `json:"time"` // the event's, unix nanoseconds
	Hops    int             `json:"hops,omitempty"`
	Event   json.RawMessage `json:"event"`
	// Prior is the entity's state before the event (bus.Event.Prior):
	// what the hold's run reads as previous.
	Prior json.RawMessage `json:"prior,omitempty"`
}

// New returns Holds with none running; Restore reads back the store's.
func New(cfg Config) *Holds {
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	h := &Holds{cfg: cfg, log: cfg.Log, m: map[string]*hold{}, pend: map[string][]byte{},
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	h.warns.Now = cfg.Clock.Now
	go h.writer()
	return h
}

// deleted marks a pending delete in pend.
var deleted = []byte(nil)

// write queues a record's write (value nil: its removal) for the writer.
// A removal of a record whose write is still queued drops both: it was
// never in the store.
func (h *Holds) write(field string, value []byte) {
	h.wmu.Lock()
	prev, queued := h.pend[field]
	switch {
	case value == nil && queued && prev != nil:
		delete(h.pend, field) // its entry in order is skipped
	default:
		if !queued {
			h.order = append(h.order, field)
		}
		h.pend[field] = value
	}
	h.wmu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// writer writes what write queued, in order, until Close; a write the
// store refused is tried again a second later, unless a later one for
// the record replaced it.
func (h *Holds) writer() {
	defer close(h.done)
	for {
		select {
		case <-h.kick:
		case <-h.quit:
			h.flush()
			return
		}
		for !h.flush() {
			select {
			case <-time.After(time.Second):
			case <-h.quit:
				h.flush()
				return
			}
		}
	}
}

// Sync writes what is queued now and what the writer is writing, on the
// caller's goroutine, before it returns: ingest calls it before an event
// that may have begun or ended a hold is acknowledged, so that a kill
// after the acknowledgement finds the hold in the store. Cheap when
// nothing is queued. The error is the store's (the write is tried again
// by the writer).
func (h *Holds) Sync() error {
	h.wmu.Lock()
	idle := len(h.order) == 0
	h.wmu.Unlock()
	if idle && h.fmu.TryLock() {
		h.fmu.Unlock() // nothing queued, and no flush under way
		return nil
	}
	if !h.flush() {
		return errors.New("hold: the store refused a hold's record; written later")
	}
	return nil
}

// flush writes the queued records and removals; false when the store
// refused one (it and those after it wait for the next try).
func (h *Holds) flush() bool {
	h.fmu.Lock()
	defer h.fmu.Unlock()
	h.wmu.Lock()
	order, pend := h.order, h.pend
	h.order, h.pend = nil, map[string][]byte{}
	h.wmu.Unlock()
	var fields, del []string
	var values [][]byte
	seen := make(map[string]bool, len(order))
	for _, f := range order {
		v, ok := pend[f]
		switch {
		case !ok || seen[f]:
			// written and removed before the writer came to it, or queued
			// again after that: one write of its last value
		case v == nil:
			seen[f] = true
			del = append(del, f)
		default:
			seen[f] = true
			fields, values = append(fields, f), append(values, v)
		}
	}
	if len(fields) == 0 && len(del) == 0 {
		return true
	}
	if err := h.cfg.Store.HSetDel(keyspace.Holds, fields, values, del); err != nil {
		if folded, ok := h.warns.Allow("write"); ok {
			h.log.Warn("cannot write a hold's record; tried again in a second (a restart meanwhile finds the store as it was)",
				"error", err, "folded", folded, "next-log-within", lograte.Every.String())
		}
		h.requeue(order, pend)
		return false
	}
	return true
}

// requeue puts back what a refused flush did not write, behind nothing
// newer: a record queued again since keeps its newer value.
func (h *Holds) requeue(order []string, pend map[string][]byte) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	var back []string
	for _, f := range order {
		v, ok := pend[f]
		if _, newer := h.pend[f]; !ok || newer {
			continue
		}
		h.pend[f] = v
		back = append(back, f)
	}
	h.order = append(back, h.order...)
}

func keyOf(rule string, trigger int, entity string) string {
	return rule + "\x00" + strconv.Itoa(trigger) + "\x00" + entity
}

// Observe hears an event on a topic of rule's change trigger i (t, with
// For above 0) and its entity's change ch: a hold running for the entity
// goes on while the event keeps the value it began with, and is cancelled
// when it does not; a change that fires the trigger begins one.
func (h *Holds) Observe(rule string, i int, t rules.Change, ch state.Change, e *bus.Event) {
	if ch.Entity == "" {
		return // no entity: its key value named none (state.RefusedID)
	}
	key := keyOf(rule, i, ch.Entity)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	if ch.Refused != "" {
		// The table could not keep the entity's new state: whether the
		// value still holds is not known, so a hold of it ends (a closing
		// door's report refused at the table's size must not leave its
		// hold to run).
		if cur := h.m[key]; cur != nil {
			h.endLocked(cur)
			h.st.Cancelled++
		}
		return
	}
	if cur := h.m[key]; cur != nil {
		if cur.trigger.Equal(t) && keeps(cur, e.View) {
			return
		}
		h.endLocked(cur)
		h.st.Cancelled++
	}
	if !state.Fires(t, ch, e.View) {
		return
	}
	if len(h.m) >= h.cfg.Max {
		h.st.Refused++
		if folded, ok := h.warns.Allow("max " + rule); ok {
			h.log.Warn("a hold is refused: as many run as the bound allows", "rule", rule, "entity", ch.Entity,
				"max", h.cfg.Max, "folded", folded, "next-log-within", lograte.Every.String())
		}
		return
	}
	now := h.cfg.Clock.Now()
	rec := record{Rule: rule, Trigger: i, Def: t.String(), Entity: ch.Entity, Began: now.UnixNano(), Due: now.Add(t.For).UnixNano(),
		EventID: e.ID, Topic: e.Topic, Time: e.Time.UnixNano(), Hops: e.Hops, Event: e.Raw}
	if ch.Prev != nil {
		rec.Prior = ch.Prev.Raw
	}
	hd := &hold{key: key, field: key + "\x00" + strconv.FormatInt(rec.Began, 10), rec: rec, view: e.View, trigger: t}
	b, err := json.Marshal(rec)
	if err != nil { // a Raw the decoder accepted is JSON
		h.log.Error("cannot encode a hold", "rule", rule, "entity", ch.Entity, "error", err)
		return
	}
	h.write(hd.field, b)
	h.m[key] = hd
	h.st.Began++
	h.armLocked(hd, t.For)
}

// keeps reports whether an event's view keeps the hold (state.Keeps).
func keeps(hd *hold, view []byte) bool { return state.Keeps(hd.trigger, hd.view, view) }

// armLocked sets the hold's timer to d from now.
func (h *Holds) armLocked(hd *hold, d time.Duration) {
	hd.timer = h.cfg.Clock.AfterFunc(max(d, 0), func() { h.due(hd) })
}

// endLocked stops a hold and removes its record.
func (h *Holds) endLocked(hd *hold) {
	if hd.timer != nil {
		hd.timer.Stop()
	}
	delete(h.m, hd.key)
	h.forget(hd.field)
}

// forget queues the removal of a hold's record.
func (h *Holds) forget(field string) { h.write(field, deleted) }

// due runs a hold that came due: its rule's run starts, and its record
// goes once the run has taken it.
func (h *Holds) due(hd *hold) {
	h.mu.Lock()
	if h.stopped || h.m[hd.key] != hd {
		h.mu.Unlock()
		return // cancelled, or stopping: the record stays for the next start
	}
	delete(h.m, hd.key)
	h.mu.Unlock()
	fired := h.fire(hd)
	h.mu.Lock()
	if fired {
		h.st.Fired++
	} else {
		h.st.Dropped++
	}
	h.mu.Unlock()
}

func (h *Holds) fire(hd *hold) bool {
	e, err := bus.Rebuild(hd.rec.EventID, hd.rec.Topic, time.Unix(0, hd.rec.Time), hd.rec.Event)
	if err != nil {
		if folded, ok := h.warns.Allow("decode"); ok {
			h.log.Warn("dropping a hold whose event will not decode", "rule", hd.rec.Rule, "entity", hd.rec.Entity, "error", err,
				"folded", folded, "next-log-within", lograte.Every.String())
		}
		h.forget(hd.field)
		return false
	}
	e.Hops = hd.rec.Hops
	if len(hd.rec.Prior) > 0 {
		e.Prior = hd.rec.Prior
	}
	var once sync.Once
	return h.cfg.Fire(Due{Rule: hd.rec.Rule, Trigger: hd.rec.Trigger, Def: hd.rec.Def, Entity: hd.rec.Entity, Event: e, Began: time.Unix(0, hd.rec.Began), At: time.Unix(0, hd.rec.Due)},
		func() { once.Do(func() { h.forget(hd.field) }) })
}

// Trigger is a rule's change trigger as loaded now, for Restore.
type Trigger func(rule string, i int) (rules.Change, bool)

// Taken reports whether a rule holds a pending record of an event, known
// by its id and its time at (unix nanoseconds): a hold whose run took it
// before a kill (its record written) and whose removal had not landed is
// not run again (ingest.Held). nil: none.
type Taken func(rule, eventID string, at int64) bool

// Restore reads the holds back at a start: each whose rule still has
// the trigger it began under, and whose entity's state still has the
// value it began with, waits out the rest of its time, or runs now if it
// came due while the process was down (within Config.Window); the others
// are dropped, each with its reason. It returns how many it restored.
//
// The state checked is the table's, written within 10 ms of a change: a
// state last changed before the hold began is one the hold's own change
// did not reach (a kill in those milliseconds), and does not drop it.
func (h *Holds) Restore(trigger Trigger, taken Taken) (int, error) {
	all, err := h.cfg.Store.HGetAll(keyspace.Holds)
	if err != nil {
		return 0, fmt.Errorf("hold: reading %s: %w", keyspace.Holds, err)
	}
	fields := make([]string, 0, len(all))
	for f := range all {
		fields = append(fields, f)
	}
	sort.Strings(fields) // per key, the latest began last: it wins
	now := h.cfg.Clock.Now()
	var due []*hold
	restored := 0
	dropped, kept := map[string]int{}, map[string]int{}
	drop := func(field, why string) {
		dropped[why]++
		h.forget(field)
	}
	h.mu.Lock()
	for _, f := range fields {
		var rec record
		if err := json.Unmarshal([]byte(all[f]), &rec); err != nil {
			drop(f, "unreadable")
			continue
		}
		t, ok := trigger(rec.Rule, rec.Trigger)
		if !ok && h.cfg.Refused != nil && h.cfg.Refused(rec.Rule) {
			kept[rec.Rule]++ // left in the store: a start that loads its rule restores it
			continue
		}
		if !ok || t.String() != rec.Def || t.For <= 0 {
			drop(f, "trigger changed or gone")
			continue
		}
		e, err := bus.Rebuild(rec.EventID, rec.Topic, time.Unix(0, rec.Time), rec.Event)
		if err != nil {
			drop(f, "unreadable")
			continue
		}
		hd := &hold{key: keyOf(rec.Rule, rec.Trigger, rec.Entity), field: f, rec: rec, view: e.View, trigger: t}
		if taken != nil && taken(rec.Rule, rec.EventID, rec.Time) {
			drop(f, "its run had taken it")
			continue
		}
		if h.cfg.Entity != nil {
			if cur, ok := h.cfg.Entity(rec.Entity); ok && cur.Changed.UnixNano() >= rec.Began && !keeps(hd, cur.View) {
				drop(f, "the state changed")
				continue
			}
		}
		if old := h.m[hd.key]; old != nil { // an older record of the key: the newer wins
			if old.timer != nil {
				old.timer.Stop()
			}
			delete(h.m, old.key)
			restored--
			drop(old.field, "a newer hold")
		}
		late := now.Sub(time.Unix(0, rec.Due))
		if late > 0 && h.cfg.Window > 0 && late > h.cfg.Window {
			drop(f, "past the replay window")
			continue
		}
		h.m[hd.key] = hd
		restored++
		if late >= 0 {
			due = append(due, hd) // run below, once the lock is let go
			continue
		}
		// A clock set back while down would have it wait past its own
		// length: it waits at most that (its for:) from the start.
		h.armLocked(hd, min(-late, t.For))
	}
	h.st.Dropped += uint64(sum(dropped))
	h.mu.Unlock()
	if n := sum(dropped); n > 0 {
		var why []string
		for k, v := range dropped {
			why = append(why, fmt.Sprintf("%s: %d", k, v))
		}
		sort.Strings(why)
		h.log.Info("dropped holds found at the start", "dropped", n, "why", strings.Join(why, ", "))
	}
	if len(kept) > 0 {
		h.log.Warn("holds of rules refused for a problem of their files are kept for a start that loads them: mend the files, then restart",
			"rules", slices.Sorted(maps.Keys(kept)), "holds", sum(kept))
	}
	for _, hd := range due {
		h.due(hd)
	}
	if restored > 0 {
		h.log.Info("restored holds", "holds", restored, "due-now", len(due))
	}
	return restored, nil
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Stats are the holds' counts.
func (h *Holds) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.st
	st.Running = len(h.m)
	return st
}

// Close stops every hold's timer, writes what is queued, and stops the
// writer; the holds' records stay for the next start. Safe to call twice.
func (h *Holds) Close() {
	h.mu.Lock()
	h.stopped = true
	for _, hd := range h.m {
		if hd.timer != nil {
			hd.timer.Stop()
		}
	}
	h.mu.Unlock()
	select {
	case <-h.quit:
	default:
		close(h.quit)
	}
	<-h.done
}
