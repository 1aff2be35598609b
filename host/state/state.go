package state

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// Bounds, the defaults of Config's. An event of 10,000 distinct entities
// a second fills the table within a second and then costs a map lookup:
// the table does not grow past its bounds.
const (
	// DefaultMaxEntities is how many entities a table keeps.
	DefaultMaxEntities = 10_000
	// DefaultMaxBytes bounds the table's states, ids and topics
	// together, each entity counted with EntryOverhead.
	DefaultMaxBytes = 8 << 20
	// MaxIDBytes bounds an entity's id: a key field's value longer than
	// that is no entity's.
	MaxIDBytes = 256
	// EntryOverhead is what an entity is counted beyond its bytes: the
	// map's entry, the Entity and its slices' headers.
	EntryOverhead = 160
	// DefaultForgetAfter is how long an entity goes unreported before a
	// full table forgets it for a new one: a burst of made-up entities
	// fills the table for a day, not for good.
	DefaultForgetAfter = 24 * time.Hour
	// sweepEvery is how often a full table looks for entities to forget
	// at most: a scan of the table, not one an event.
	sweepEvery = time.Second
)

// Write timing: a change waits this long for others to share its write;
// a report that changed nothing moves its "last seen" in the store this
// late at most.
const (
	FlushAfter = 10 * time.Millisecond
	SeenEvery  = 30 * time.Second
	// retryAfter is how long a write the store refused waits before the
	// next try.
	retryAfter = time.Second
)

// Store keeps the table (host/store's Bolt and Redis).
type Store interface {
	HGetAll(key string) (map[string]string, error)
	HSetDel(key string, fields []string, values [][]byte, del []string) error
}

// KeyRule makes each event of a topic matching Topics the state of the
// entity <topic>/<value of Field>. An event without the field is its
// topic's entity.
type KeyRule struct {
	Topics rules.Pattern
	Field  string
}

// ParseKeyRule reads "<pattern>=<field>" (the config's state.keys).
func ParseKeyRule(s string) (KeyRule, error) {
	pat, field, ok := strings.Cut(s, "=")
	if !ok || field == "" {
		return KeyRule{}, fmt.Errorf("state key %q: want <topic pattern>=<field>, such as scooter.telemetry=vehicle", s)
	}
	p, err := rules.ParsePattern(pat)
	if err != nil {
		return KeyRule{}, fmt.Errorf("state key %q: %w", s, err)
	}
	if msg := rules.CheckPath(field); msg != "" {
		return KeyRule{}, fmt.Errorf("state key %q: %q is not a field path: %s", s, field, msg)
	}
	return KeyRule{Topics: p, Field: field}, nil
}

// Config is a Table's.
type Config struct {
	// Store keeps the table across restarts; nil keeps it in memory.
	Store Store
	// MaxEntities and MaxBytes bound the table; 0 is the default.
	MaxEntities int
	MaxBytes    int
	// Keys name the entities of topics that carry many (KeyRule); the
	// first that matches a topic decides.
	Keys []KeyRule
	// ForgetAfter is how long an entity goes unreported before a full
	// table may forget it to make room for a new one; 0 is
	// DefaultForgetAfter.
	ForgetAfter time.Duration
	Now         func() time.Time
	Log         hclog.Logger
}

// Entity is one entity's state. An Entity a Table hands out is a copy:
// its slices are shared and must not be modified.
type Entity struct {
	ID      string
	Topic   string
	EventID string
	// Raw is the latest event's JSON, View its view (abi.View).
	Raw  []byte
	View []byte
	// Changed is when its state last changed, Seen when it was last
	// reported (the same or later).
	Changed time.Time
	Seen    time.Time
}

// Change is what an event did to its entity's state.
type Change struct {
	// Entity is the event's entity; "" when its key value named none
	// (RefusedID).
	Entity string
	// Prev is the entity's state before the event; nil when it had none.
	Prev *Entity
	// Changed says the state is not the one before (a first state is a
	// change).
	Changed bool
	Refused Refusal
}

// Refusal is why an event's state was not kept.
type Refusal string

const (
	RefusedFull  Refusal = "full"  // a new entity past MaxEntities
	RefusedBytes Refusal = "bytes" // a state past MaxBytes
	RefusedID    Refusal = "id"    // an id over MaxIDBytes, or a key value with a control character
)

// Stats are a table's counts, for status.
type Stats struct {
	Entities int               `json:"entities"`
	Bytes    int               `json:"bytes"`
	Max      int               `json:"max_entities"`
	MaxBytes int               `json:"max_bytes"`
	Changes  uint64            `json:"changes"`
	Reports  uint64            `json:"reports"`
	Refused  map[string]uint64 `json:"refused,omitempty"`
	// Writes are the store writes, Unwritten the entities whose change
	// waits for one, WriteFailed the writes the store refused.
	Writes      uint64 `json:"writes"`
	Unwritten   int    `json:"unwritten"`
	WriteFailed uint64 `json:"write_failed"`
	// Forgot counts entities a full table forgot, unreported lately.
	Forgot uint64 `json:"forgot"`
}

// Table is the entities' states. It is safe for concurrent use.
type Table struct {
	cfg   Config
	log   hclog.Logger
	warns lograte.Limiter

	mu       sync.Mutex
	m        map[string]*entry
	bytes    int
	dirty    map[string]bool // id → its state changed (true) or only its seen
	changes  uint64
	reports  uint64
	refused  map[Refusal]uint64
	writes   uint64
	failed   uint64
	forgot   uint64
	swept    time.Time // the last look for entities to forget
	kickSent bool
	// writing names the entities a write is carrying to the store (Sync's
	// or the writer's), and wrote signals when one is done. An entity
	// has one write at a time: a later one waits, then carries its later
	// state. Two at once could commit in either order, and the store would
	// keep the older state over the newer (or bring back one forgotten).
	writing map[string]bool
	wrote   sync.Cond

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// entry is one entity in the table: its state as it last changed (never
// modified once stored: Observe hands it out as Prev) and the time it was
// last seen.
type entry struct {
	cur  *Entity
	seen time.Time
	size int
	// disarmed names the thresholds with hysteresis (rule and trigger)
	// that fired on this entity and wait for its number to come back
	// across their line (Crossed); kept with the state.
	disarmed map[string]bool
}

// New reads the table back from cfg.Store and starts the goroutine that
// writes its changes (Close stops it). Entities past the bounds — which
// a smaller configuration can leave — are dropped from the store.
func New(cfg Config) (*Table, error) {
	if cfg.MaxEntities <= 0 {
		cfg.MaxEntities = DefaultMaxEntities
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ForgetAfter <= 0 {
		cfg.ForgetAfter = DefaultForgetAfter
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	t := &Table{cfg: cfg, log: cfg.Log, m: map[string]*entry{}, dirty: map[string]bool{}, refused: map[Refusal]uint64{},
		writing: map[string]bool{}, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	t.wrote.L = &t.mu
	t.warns.Now = cfg.Now
	if cfg.Store != nil {
		if err := t.load(); err != nil {
			return nil, err
		}
		go t.run()
	} else {
		close(t.done)
	}
	return t, nil
}

// record is an entity as the store keeps it.
type record struct {
	Topic   string          `json:"topic"`
	EventID string          `json:"event-id,omitempty"`
	Changed int64           `json:"changed"` // unix milliseconds
	Seen    int64           `json:"seen"`
	Event   json.RawMessage `json:"event"`
	// Disarmed are the thresholds with hysteresis waiting to be armed
	// again (entry.disarmed).
	Disarmed []string `json:"disarmed,omitempty"`
}

func (t *Table) load() error {
	all, err := t.cfg.Store.HGetAll(keyspace.State)
	if err != nil {
		return fmt.Errorf("state: reading %s: %w", keyspace.State, err)
	}
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	sort.Strings(ids) // which are kept past a bound does not depend on a map's order
	var drop []string
	for _, id := range ids {
		var r record
		err := json.Unmarshal([]byte(all[id]), &r)
		var view []byte
		if err == nil {
			view, err = abi.AppendJSONView(nil, r.Event, false)
		}
		if err != nil {
			t.log.Warn("dropping an entity's state that will not decode", "entity", id, "error", err)
			drop = append(drop, id)
			continue
		}
		e := &Entity{ID: id, Topic: r.Topic, EventID: r.EventID, Raw: r.Event, View: view,
			Changed: time.UnixMilli(r.Changed), Seen: time.UnixMilli(r.Seen)}
		size := sizeOf(e)
		if len(t.m) >= t.cfg.MaxEntities || t.bytes+size > t.cfg.MaxBytes {
			drop = append(drop, id)
			continue
		}
		en := &entry{cur: e, seen: e.Seen, size: size}
		for _, k := range r.Disarmed {
			if en.disarmed == nil {
				en.disarmed = map[string]bool{}
			}
			en.disarmed[k] = true
		}
		t.m[id] = en
		t.bytes += size
	}
	if len(drop) > 0 {
		t.log.Warn("dropped entities' states past the table's bounds or unreadable", "dropped", len(drop),
			"kept", len(t.m), "max-entities", t.cfg.MaxEntities, "max-bytes", t.cfg.MaxBytes)
		if err := t.cfg.Store.HSetDel(keyspace.State, nil, nil, drop); err != nil {
			return fmt.Errorf("state: dropping %d entities: %w", len(drop), err)
		}
	}
	return nil
}

func sizeOf(e *Entity) int {
	return len(e.ID) + len(e.Topic) + len(e.EventID) + len(e.Raw) + len(e.View) + EntryOverhead
}

// EntityOf is the id of e's entity under keys, and false when its key
// value is too long to name one.
func EntityOf(keys []KeyRule, e *bus.Event) (string, bool) {
	for _, k := range keys {
		if !k.Topics.Match(e.Topic) {
			continue
		}
		v, _ := abi.ParseView(e.View)
		x, ok := v.Find(k.Field)
		if !ok {
			return e.Topic, true
		}
		key, ok := KeyValue(x)
		switch {
		case !ok: // null, an object, an array: no key
			return e.Topic, true
		case !Printable(key):
			return "", false // it would be printed to an operator's terminal as it is
		}
		id := e.Topic + "/" + key
		return id, len(id) <= MaxIDBytes
	}
	return e.Topic, true
}

// KeyValue is a key field's value as a key: a string as it is, a number
// or a boolean as JSON writes it (5 and "5" are one); false for null, an
// object or an array.
func KeyValue(x abi.Value) (string, bool) {
	switch x.Kind() {
	case abi.ValueString:
		s, _ := x.Str()
		return string(s), true
	case abi.ValueInt:
		n, _ := x.Int()
		return strconv.FormatInt(n, 10), true
	case abi.ValueFloat:
		f, _ := x.Float()
		return strconv.FormatFloat(f, 'g', -1, 64), true
	case abi.ValueBool:
		b, _ := x.Bool()
		return strconv.FormatBool(b), true
	}
	return "", false
}

// Printable reports whether a key holds no control character (nor a
// line or paragraph separator): an operator's terminal prints it as it is.
func Printable(key string) bool {
	return !strings.ContainsFunc(key, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' })
}

// report are the members that name a report, not its state: left out of
// the state kept (an event from the Redis bus has them written in).
var report = []bus.Member{{Name: "id"}, {Name: "time"}}

// StateOf is e's JSON as its entity's state: without the members that
// name the report ("id", "time"). Only an event that has one is copied.
func StateOf(e *bus.Event) []byte {
	v, _ := abi.ParseView(e.View)
	_, id := v.Find("id")
	_, at := v.Find("time")
	if !id && !at {
		return e.Raw
	}
	if b, ok := bus.WithMembers(e.Raw, report...); ok {
		return b
	}
	return e.Raw
}

// Observe makes e its entity's state, and says what that changed.
func (t *Table) Observe(e *bus.Event) Change {
	id, ok := EntityOf(t.cfg.Keys, e)
	now := t.cfg.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reports++
	if !ok {
		return t.refuseLocked(RefusedID, e.Topic)
	}
	old := t.m[id]
	if old != nil && Same(old.cur.View, e.View) {
		prev := *old.cur
		prev.Seen = old.seen
		old.seen = now
		if _, ok := t.dirty[id]; !ok {
			t.dirty[id] = false
		}
		return Change{Entity: id, Prev: &prev}
	}
	cur := &Entity{ID: id, Topic: e.Topic, EventID: e.ID, Raw: StateOf(e), View: e.View, Changed: now, Seen: now}
	size := sizeOf(cur)
	grow := size
	if old != nil {
		grow -= old.size
	}
	if old == nil && len(t.m) >= t.cfg.MaxEntities {
		t.forgetIdleLocked(now)
	}
	switch {
	case old == nil && len(t.m) >= t.cfg.MaxEntities:
		c := t.refuseLocked(RefusedFull, id)
		c.Entity = id
		return c
	case t.bytes+grow > t.cfg.MaxBytes:
		c := t.refuseLocked(RefusedBytes, id)
		c.Entity = id
		return c
	}
	en := &entry{cur: cur, seen: now, size: size}
	if old != nil {
		en.disarmed = old.disarmed
	}
	t.m[id] = en
	t.bytes += grow
	t.changes++
	t.dirty[id] = true
	t.kickLocked()
	c := Change{Entity: id, Changed: true}
	if old != nil {
		prev := *old.cur
		prev.Seen = old.seen
		c.Prev = &prev
	}
	return c
}

// Entity is e's entity under the table's keys (EntityOf).
func (t *Table) Entity(e *bus.Event) (string, bool) { return EntityOf(t.cfg.Keys, e) }

// MaxEntities is the table's bound on entities.
func (t *Table) MaxEntities() int { return t.cfg.MaxEntities }

// ForgetAfter is how long an entity goes unreported before a full table
// may forget it.
func (t *Table) ForgetAfter() time.Duration { return t.cfg.ForgetAfter }

// ChangeOf is the change an event (its view) made to its entity's state
// as a fleet's ingest stream ordered it (store.RedisStream.AppendChange):
// prior is the state before it, nil when there was none; refused says
// the fleet kept none (its bound). A prior that does not decode is none.
func ChangeOf(entity string, prior []byte, refused bool, view []byte) Change {
	switch {
	case refused:
		return Change{Entity: entity, Refused: RefusedFull}
	case prior == nil:
		return Change{Entity: entity, Changed: true}
	}
	pv, err := abi.AppendJSONView(nil, prior, false)
	if err != nil {
		return Change{Entity: entity, Changed: true}
	}
	return Change{Entity: entity, Prev: &Entity{ID: entity, Raw: prior, View: pv}, Changed: !Same(pv, view)}
}

// forgetIdleLocked forgets the entities not reported for ForgetAfter, at
// most once every sweepEvery: a full table makes room for new entities
// out of those nobody reports any more.
func (t *Table) forgetIdleLocked(now time.Time) {
	if now.Sub(t.swept) < sweepEvery {
		return
	}
	t.swept = now
	n := 0
	for id, en := range t.m {
		if now.Sub(en.seen) >= t.cfg.ForgetAfter {
			delete(t.m, id)
			t.bytes -= en.size
			t.dirty[id] = true // flush removes what is gone from the map
			n++
		}
	}
	if n > 0 {
		t.forgot += uint64(n)
		t.kickLocked()
		t.log.Info("the state table was full: forgot entities not reported lately", "forgot", n,
			"not-reported-for", t.cfg.ForgetAfter.String(), "entities", len(t.m))
	}
}

// refuseLocked counts and logs an event whose state is not kept.
func (t *Table) refuseLocked(why Refusal, name string) Change {
	t.refused[why]++
	if folded, ok := t.warns.Allow(string(why)); ok {
		msg := map[Refusal]string{
			RefusedFull:  "the state table is full: a new entity's state is not kept",
			RefusedBytes: "the state table is at its size: a state is not kept",
			RefusedID:    "an event's key value is too long, or has a control character, to name an entity: its state is not kept",
		}[why]
		t.log.Warn(msg, "entity", truncate(name, 80), "entities", len(t.m), "max-entities", t.cfg.MaxEntities,
			"bytes", t.bytes, "max-bytes", t.cfg.MaxBytes, "folded", folded, "next-log-within", lograte.Every.String())
	}
	return Change{Refused: why}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// kickLocked wakes the writer for a change, once until it writes.
func (t *Table) kickLocked() {
	if t.cfg.Store == nil || t.kickSent {
		return
	}
	t.kickSent = true
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// Sync writes the entity id's state now, before its caller goes on: a
// change a change trigger or a hold hears is kept before its rule runs
// (and before the event's 202, on the in-process bus), so a kill cannot
// leave the table with the state before it — a close lost that way made
// the next open look like a repeat (a crash soak's finding). Writes that
// arrive together share a commit (the store's group commit).
func (t *Table) Sync(id string) error { return t.SyncAll([]string{id}) }

// SyncAll is Sync of several entities in one write: a group of reports
// whose holds alone watch them (ingest's TakeAll) costs one commit.
func (t *Table) SyncAll(ids []string) error {
	if t.cfg.Store == nil || len(ids) == 0 {
		return nil
	}
	// Each id once, in order: a write waits for another's of an entity
	// while it holds its own, and two that took theirs in different
	// orders would wait for each other.
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	t.mu.Lock()
	taken := make(map[string]bool, len(ids)) // id → its state changed
	var fields, del []string
	var values [][]byte
	var err error
	for _, id := range ids {
		for t.writing[id] {
			t.wrote.Wait() // the write before this one goes first
		}
		changed, dirty := t.dirty[id]
		if !dirty {
			continue
		}
		delete(t.dirty, id)
		t.writing[id] = true
		taken[id] = changed
		en := t.m[id]
		if en == nil { // forgotten: its record goes
			del = append(del, id)
			continue
		}
		var b []byte
		if b, err = json.Marshal(recordOf(en)); err != nil {
			break // a Raw the decoder accepted is JSON: cannot be
		}
		fields, values = append(fields, id), append(values, b)
	}
	t.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	if err == nil {
		err = t.cfg.Store.HSetDel(keyspace.State, fields, values, del)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	again := false
	for id, changed := range taken {
		delete(t.writing, id)
		if err != nil {
			if now, ok := t.dirty[id]; !ok || (changed && !now) {
				t.dirty[id] = changed
			}
		}
		if _, ok := t.dirty[id]; ok {
			again = true
		}
	}
	t.wrote.Broadcast()
	if err != nil {
		t.failed++
		t.kickLocked()
		return err
	}
	t.writes++
	if again {
		t.kickLocked() // changed while written; the writer passed it over
	}
	return nil
}

// recordOf is an entity as the store keeps it.
func recordOf(en *entry) record {
	rec := record{Topic: en.cur.Topic, EventID: en.cur.EventID, Changed: en.cur.Changed.UnixMilli(),
		Seen: en.seen.UnixMilli(), Event: en.cur.Raw}
	for k := range en.disarmed {
		rec.Disarmed = append(rec.Disarmed, k)
	}
	sort.Strings(rec.Disarmed)
	return rec
}

// Crossed reports whether an event fires the threshold tr, one with
// hysteresis, of the trigger named key (its rule and index), its entity
// having changed as ch says (Observe's answer for it): the number is past
// the line and the trigger is armed — it has not fired on this entity
// since the number was last back across the line by the hysteresis (or
// ever). Firing disarms it; coming back arms it. Kept with the state, so
// a restart does not fire it again.
func (t *Table) Crossed(key string, tr rules.Change, ch Change, view []byte) bool {
	if ch.Entity == "" || ch.Refused != "" {
		return false
	}
	x, ok := number(view, tr.Field)
	if !ok {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	en := t.m[ch.Entity]
	if en == nil {
		return false
	}
	fired := false
	switch disarmed := en.disarmed[key]; {
	case disarmed && tr.Rearmed(x):
		delete(en.disarmed, key)
	case !disarmed && tr.InRange(x):
		if en.disarmed == nil {
			en.disarmed = map[string]bool{}
		}
		en.disarmed[key] = true
		fired = true
	default:
		return false
	}
	t.dirty[ch.Entity] = true // the flag is kept with the state
	t.kickLocked()
	return fired
}

// Forget removes the entity id's state (ruled state rm): a sensor taken
// away, renamed, or reporting garbage. Its next report is a first one
// (a change of every field); the store loses it with the next write, or
// at once with Sync. false: the table has no such entity.
func (t *Table) Forget(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	en := t.m[id]
	if en == nil {
		return false
	}
	delete(t.m, id)
	t.bytes -= en.size
	t.dirty[id] = true // flush removes what is gone from the map
	t.kickLocked()
	return true
}

// Get is the state of the entity id.
func (t *Table) Get(id string) (Entity, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	en := t.m[id]
	if en == nil {
		return Entity{}, false
	}
	e := *en.cur
	e.Seen = en.seen
	return e, true
}

// List is up to limit entities whose ids start with prefix, in id order,
// and how many there are in all.
func (t *Table) List(prefix string, limit int) ([]Entity, int) {
	t.mu.Lock()
	ids := make([]string, 0, len(t.m))
	for id := range t.m {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	t.mu.Unlock()
	sort.Strings(ids)
	total := len(ids)
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	out := make([]Entity, 0, len(ids))
	for _, id := range ids {
		if e, ok := t.Get(id); ok {
			out = append(out, e)
		}
	}
	return out, total
}

// Stats are the table's counts.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := Stats{Entities: len(t.m), Bytes: t.bytes, Max: t.cfg.MaxEntities, MaxBytes: t.cfg.MaxBytes,
		Changes: t.changes, Reports: t.reports, Writes: t.writes, WriteFailed: t.failed, Forgot: t.forgot}
	for _, changed := range t.dirty {
		if changed {
			st.Unwritten++
		}
	}
	if len(t.refused) > 0 {
		st.Refused = map[string]uint64{}
		for why, n := range t.refused {
			st.Refused[string(why)] = n
		}
	}
	return st
}

// Close writes what waits and stops the writer. The table answers Get
// and List after; what Observe does after is not written.
func (t *Table) Close() error {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
	return nil
}

// run is the writer: a change is written FlushAfter after it woke it,
// with every change made meanwhile; reports that changed nothing are
// written every SeenEvery (their "last seen" only). A write the store
// refused is tried again every retryAfter, with what changed meanwhile.
// Close stops it, after one last write.
func (t *Table) run() {
	defer close(t.done)
	tick := time.NewTicker(SeenEvery)
	defer tick.Stop()
	seen := false // this write takes the reports that changed nothing too
	for {
		select {
		case <-t.stop:
			t.drain()
			t.flush(true)
			return
		case <-tick.C:
			seen = true
		case <-t.kick:
			if !t.sleep(FlushAfter) {
				t.flush(true)
				return
			}
		}
		for !t.flush(seen) {
			if !t.sleep(retryAfter) {
				t.flush(true)
				return
			}
		}
		seen = false
	}
}

// drain waits for the Syncs under way: the last write then takes what
// one of them failed to write, or what changed while it wrote.
func (t *Table) drain() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.writing) > 0 {
		t.wrote.Wait()
	}
}

// sleep waits d, and false when Close came first.
func (t *Table) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-t.stop:
		return false
	}
}

// flush writes the entities whose state changed since the last write —
// and, with seen, those only reported since (the 30 s tick, Close) — in
// one write, and false when the store refused it: they wait for the next.
func (t *Table) flush(seen bool) bool {
	t.mu.Lock()
	t.kickSent = false
	taken := map[string]bool{}
	for id, changed := range t.dirty {
		if (changed || seen) && !t.writing[id] { // one being written waits for the next (Sync's kick)
			taken[id] = changed
			delete(t.dirty, id)
			t.writing[id] = true
		}
	}
	if len(taken) == 0 {
		t.mu.Unlock()
		return true
	}
	fields := make([]string, 0, len(taken))
	values := make([][]byte, 0, len(taken))
	var del []string
	for id := range taken {
		en := t.m[id]
		if en == nil {
			del = append(del, id)
			continue
		}
		b, err := json.Marshal(recordOf(en))
		if err != nil { // a Raw the decoder accepted is JSON; nothing to write if not
			t.log.Error("cannot encode an entity's state", "entity", id, "error", err)
			continue
		}
		fields = append(fields, id)
		values = append(values, b)
	}
	t.mu.Unlock()
	err := t.cfg.Store.HSetDel(keyspace.State, fields, values, del)
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range taken {
		delete(t.writing, id)
	}
	t.wrote.Broadcast()
	if err == nil {
		t.writes++
		return true
	}
	t.failed++
	for id, changed := range taken {
		if now, ok := t.dirty[id]; !ok || (changed && !now) {
			t.dirty[id] = changed
		}
	}
	if folded, ok := t.warns.Allow("write"); ok {
		t.log.Warn("cannot write entities' states; they are kept in memory and written again", "entities", len(taken),
			"error", err, "folded", folded, "next-log-within", lograte.Every.String())
	}
	return false
}
