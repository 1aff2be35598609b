package window

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// Store keeps the windows' records (keyspace.Windows): bbolt or Redis.
type Store interface {
	HGetAll(key string) (map[string]string, error)
	// HSetDel sets fields to values and deletes del in one write: a
	// group of events' counts cost one commit and one fsync.
	HSetDel(key string, fields []string, values [][]byte, del []string) error
}

// Config is a Table's.
type Config struct {
	// Store keeps the windows across restarts; nil: memory only.
	Store Store
	// Clock is the daemon's clock and its timers (a virtual one in
	// tests): arrival times, reads, and the tumbling windows' closes.
	Clock sched.Clock
	// Fire starts the runs a tumbling window's close triggers; done is
	// called once they took it (seq.Trigger.Done), and the close's
	// record goes then. A start fires again what was not taken.
	Fire func(c Closed, done func())
	// MaxWait bounds how long a tumbling window's timer waits before it
	// looks at the clock again: a device's clock set forward (NTP after a
	// boot without a real-time clock) closes its periods within it. 0:
	// the period's end exactly (a virtual clock).
	MaxWait time.Duration
	Log     hclog.Logger
}

// Closed is a tumbling window's period that ended, for one key.
type Closed struct {
	Window, Key string
	Value       Value
	field       string // its record's (keyspace.Windows)
}

// Outcome is what Observe did with an event.
type Outcome uint8

const (
	// Counted: the event is in the window.
	Counted Outcome = iota
	// Late: older than the window holds (a sliding window's far edge, a
	// tumbling period closed already); not counted.
	Late
	// Future: its time is more than MaxSkew ahead of the clock; not
	// counted.
	Future
	// Full: a new key, and the window holds its max keys; not counted.
	Full
	// Unknown: no window of that name is defined.
	Unknown
	// Invalid: its number is past MaxValue, or not a number.
	Invalid
)

// Stats are one window's counts since the start.
type Stats struct {
	Keys, MaxKeys                       int
	Counted, Late, Future, Full, Closed uint64
	// Invalid are events it heard with no key, no number, or a time it
	// could not read (Refuse), or a number past MaxValue.
	Invalid uint64
}

// Table is the windows a rule set defines, each a series per key. Its
// methods are safe for concurrent use.
type Table struct {
	cfg Config
	warner

	mu      sync.Mutex
	windows map[string]*win
	// raw are the store's records read at New, by window name, until
	// Define decodes those of the windows it defines.
	raw map[string]map[string]string
	// dirty are the records to write (nil value: delete), by field;
	// touched the series counted in since the last write, encoded when
	// written (once for all a group's events).
	dirty   map[string][]byte
	touched []ref
	// kick: a write of dirty is set for the next few milliseconds
	// (a close taken, nothing else writing).
	kick    *sched.Timer
	started bool
	stopped bool

	fmu    sync.Mutex // one store write at a time, in order
	writes atomic.Uint64
}

// Writes is how many store writes the table made: one a group of events
// at most, however many windows and keys they touched.
func (t *Table) Writes() uint64 { return t.writes.Load() }

// ref names a key's series.
type ref struct {
	w   *win
	key string
}

// win is one window.
type win struct {
	name  string
	spec  Spec
	keys  map[string]*series
	timer *sched.Timer // Tumbling: the next close
	st    Stats
	swept int64 // when a full window last looked for empty keys (ns)
	// cur is a tumbling window's current period, [start, end) in Unix
	// ns, worked out again only when the clock leaves it.
	curStart, curEnd int64
	closes           map[string][]byte // records of closes not taken yet, by field
	// restored are the closes a kill left untaken, fired again once, by
	// Start.
	restored []string
}

// New reads the windows' records back from the store; Define says which
// windows exist, and Start arms their closes.
func New(cfg Config) (*Table, error) {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	t := &Table{cfg: cfg, warner: warner{log: cfg.Log}, windows: map[string]*win{}, dirty: map[string][]byte{}}
	if cfg.Store != nil {
		all, err := cfg.Store.HGetAll(keyspace.Windows)
		if err != nil {
			return nil, fmt.Errorf("window: reading %s: %w", keyspace.Windows, err)
		}
		t.raw = map[string]map[string]string{}
		for f, v := range all {
			name := ""
			if len(f) > 2 && f[1] == 0 {
				name, _, _ = strings.Cut(f[2:], "\x00")
			}
			if t.raw[name] == nil {
				t.raw[name] = map[string]string{}
			}
			t.raw[name][f] = v
		}
	}
	return t, nil
}

func specField(name string) string        { return "w\x00" + name }
func seriesField(name, key string) string { return "s\x00" + name + "\x00" + key }
func closeField(name, key string, start int64) string {
	return "c\x00" + name + "\x00" + key + "\x00" + strconv.FormatInt(start, 10)
}

// Define sets the windows the rules define now, by name. A window that
// is new starts empty (or from the store's records at the first Define
// after New); one whose spec changed starts afresh; one no longer
// defined is forgotten, in the store too.
func (t *Table) Define(all map[string]Spec) error {
	var bad []string
	defs := make(map[string]Spec, len(all))
	for name, s := range all {
		if err := s.Check(); err != nil {
			// One window refused is not every window refused.
			bad = append(bad, fmt.Sprintf("window %s: %v", name, err))
			continue
		}
		defs[name] = s
	}
	t.mu.Lock()
	var fire []Closed
	for name, w := range t.windows {
		s, ok := defs[name]
		if ok && s.String() == w.spec.String() {
			w.spec = s // same arithmetic; its bound may have moved
			continue
		}
		if ok {
			t.log.Info("a window's definition changed; it starts afresh", "window", name, "keys", len(w.keys))
		} else {
			t.log.Info("a window is no longer defined; forgotten", "window", name, "keys", len(w.keys))
		}
		t.dropLocked(w)
	}
	for name, s := range defs {
		if _, ok := t.windows[name]; ok {
			continue
		}
		w := &win{name: name, spec: s, keys: map[string]*series{}, closes: map[string][]byte{}}
		t.windows[name] = w
		t.restoreLocked(w)
		t.dirty[specField(name)] = []byte(s.String())
		if t.started {
			fire = append(fire, t.armLocked(w)...)
		}
	}
	if t.raw != nil {
		// Records of windows no rule defines any more: gone.
		for _, fs := range t.raw {
			for f := range fs {
				t.dirty[f] = nil
			}
		}
		t.raw = nil
	}
	t.mu.Unlock()
	t.fire(fire)
	if len(bad) > 0 {
		sort.Strings(bad)
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// restoreLocked decodes w's records from raw, when its spec is the one
// they were written under.
func (t *Table) restoreLocked(w *win) {
	if t.raw == nil {
		return
	}
	raw := t.raw[w.name]
	delete(t.raw, w.name)
	kept, ok := raw[specField(w.name)]
	delete(raw, specField(w.name))
	same := ok && kept == w.spec.String()
	if ok && !same {
		t.log.Info("a window's definition changed while the daemon was down; it starts afresh", "window", w.name,
			"was", kept, "now", w.spec.String())
	}
	prefix := "s\x00" + w.name + "\x00"
	cprefix := "c\x00" + w.name + "\x00"
	for f, v := range raw {
		switch {
		case strings.HasPrefix(f, prefix):
			if !same {
				t.dirty[f] = nil
				continue
			}
			x, err := decode(&w.spec, []byte(v))
			if err != nil {
				t.log.Warn("dropping a window's record that does not decode", "window", w.name, "key", f[len(prefix):])
				t.dirty[f] = nil
				continue
			}
			w.keys[f[len(prefix):]] = x
		case strings.HasPrefix(f, cprefix):
			w.closes[f] = []byte(v)
			w.restored = append(w.restored, f) // fired again by Start: its rules had not taken it
		default:
			t.dirty[f] = nil
		}
	}
}

// dropLocked forgets w and its records.
func (t *Table) dropLocked(w *win) {
	if w.timer != nil {
		w.timer.Stop()
	}
	for k := range w.keys {
		t.dirty[seriesField(w.name, k)] = nil
	}
	for f := range w.closes {
		t.dirty[f] = nil // a close not taken goes with its window
	}
	t.dirty[specField(w.name)] = nil
	delete(t.windows, w.name)
}

// Start arms the tumbling windows' closes, and fires those that came due
// while the daemon was down (each key's period that ended, once) and
// those a kill left untaken. Call it once the rules can run.
func (t *Table) Start() {
	t.mu.Lock()
	t.started = true
	var fire []Closed
	for _, w := range t.windows {
		fire = append(fire, t.restoredLocked(w)...)
		fire = append(fire, t.armLocked(w)...)
	}
	t.mu.Unlock()
	t.fire(fire)
}

// restoredLocked are the closes of w a kill left untaken, to fire once.
func (t *Table) restoredLocked(w *win) []Closed {
	var out []Closed
	for _, f := range w.restored {
		v, ok := w.closes[f]
		if !ok {
			continue // taken since (a close fired before Start)
		}
		c, err := decodeClose(w.name, f, v)
		if err != nil {
			delete(w.closes, f)
			t.dirty[f] = nil
			continue
		}
		out = append(out, c)
	}
	w.restored = nil
	return out
}

// armLocked closes w's periods that ended, and sets its timer for the
// next end; it returns the closes to fire.
func (t *Table) armLocked(w *win) []Closed {
	if w.spec.Kind != Tumbling || t.stopped {
		return nil
	}
	now := t.cfg.Clock.Now()
	out := t.closeLocked(w, now)
	_, end := w.spec.Period(now)
	wait := end.Sub(now)
	if t.cfg.MaxWait > 0 {
		wait = min(wait, t.cfg.MaxWait)
	}
	w.timer = t.cfg.Clock.AfterFunc(wait, func() { t.due(w) })
	return out
}

// due is a tumbling window's period's end.
func (t *Table) due(w *win) {
	t.mu.Lock()
	if t.stopped || t.windows[w.name] != w {
		t.mu.Unlock()
		return
	}
	fire := t.armLocked(w)
	if len(fire) == 0 && len(t.dirty) > 0 {
		t.kickLocked() // keys forgotten: written with others
	}
	t.mu.Unlock()
	t.fire(fire)
}

// closeLocked ends every key's period of w that ended before now: each
// key with events is closed with them, a key whose period had none is
// closed with a count of 0 once, then forgotten. Each close is recorded
// (its field in w.closes, written with the series) until its rules took
// it.
func (t *Table) closeLocked(w *win, now time.Time) []Closed {
	cur := w.current(now)
	var out []Closed
	for k, x := range w.keys {
		if x.period >= cur {
			continue
		}
		if x.agg.Count == 0 && x.emptied {
			delete(w.keys, k)
			t.dirty[seriesField(w.name, k)] = nil
			continue
		}
		out = append(out, t.closeKeyLocked(w, k, x, cur))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// closeKeyLocked closes key k's period, x's, and starts the period cur.
func (t *Table) closeKeyLocked(w *win, k string, x *series, cur int64) Closed {
	ps, pe := w.spec.Period(time.Unix(0, x.period))
	f := closeField(w.name, k, x.period)
	c := Closed{Window: w.name, Key: k, Value: Value{Agg: x.agg, Numeric: w.spec.Numeric, Start: ps, End: pe}, field: f}
	w.closes[f] = c.Value.AppendJSON(nil)
	t.dirty[f] = w.closes[f]
	x.emptied = x.agg.Count == 0
	x.agg = Agg{}
	x.period = cur
	t.dirty[seriesField(w.name, k)] = x.encode(&w.spec)
	w.st.Closed++
	return c
}

// decodeClose reads a close's record back.
func decodeClose(name, field string, v []byte) (Closed, error) {
	rest := strings.TrimPrefix(field, "c\x00"+name+"\x00")
	i := strings.LastIndexByte(rest, 0)
	if i < 0 {
		return Closed{}, errRecord
	}
	c := Closed{Window: name, Key: rest[:i], field: field}
	if err := c.Value.UnmarshalJSON(v); err != nil {
		return Closed{}, err
	}
	return c, nil
}

// fire writes the closes' records, then starts their rules.
func (t *Table) fire(cs []Closed) {
	if len(cs) == 0 || t.cfg.Fire == nil {
		return
	}
	if err := t.Sync(); err != nil {
		if folded, ok := t.warns.Allow("sync"); ok {
			t.log.Warn("cannot write a window's close before its rules run; written later", "error", err,
				"folded", folded, "next-log-within", lograte.Every.String())
		}
	}
	for _, c := range cs {
		f := c.field
		var once sync.Once
		t.cfg.Fire(c, func() { once.Do(func() { t.taken(c.Window, f) }) })
	}
}

// taken forgets a close its rules took, written within 10 ms.
func (t *Table) taken(name, field string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.windows[name]; w != nil {
		delete(w.closes, field)
	}
	t.dirty[field] = nil
	t.kickLocked()
}

// kickLocked sets a write of what is dirty for 10 ms from now, if none
// is set: what no event's answer waits for (a close taken) is written
// with others.
func (t *Table) kickLocked() {
	if t.kick != nil || t.stopped || t.cfg.Store == nil {
		return
	}
	t.kick = t.cfg.Clock.AfterFunc(10*time.Millisecond, func() {
		t.mu.Lock()
		t.kick = nil
		stopped := t.stopped
		t.mu.Unlock()
		if stopped {
			return // Close wrote what was left
		}
		if err := t.Sync(); err != nil {
			if folded, ok := t.warns.Allow("sync"); ok {
				t.log.Warn("cannot write the windows; written with the next", "error", err,
					"folded", folded, "next-log-within", lograte.Every.String())
			}
		}
	})
}

// Observe counts an event in window name under key: its number v (for a
// numeric window) and its time at. It is in the window's memory at
// once, and in the store once Sync returns: call Sync before the event
// is acknowledged.
func (t *Table) Observe(name, key string, v float64, at time.Time) Outcome {
	t.mu.Lock()
	w := t.windows[name]
	if w == nil || t.stopped {
		t.mu.Unlock()
		return Unknown
	}
	if math.IsNaN(v) || math.Abs(v) >= MaxValue {
		w.st.Invalid++
		t.mu.Unlock()
		t.warn(name, "invalid", "an event's number is past ±1e100 (a sum would overflow); not counted", key, at)
		return Invalid
	}
	now := t.cfg.Clock.Now()
	if at.Sub(now) > MaxSkew {
		w.st.Future++
		t.mu.Unlock()
		t.warn(name, "future", "an event's time is more than a minute ahead of the clock; not counted", key, at)
		return Future
	}
	if at.After(now) {
		at = now
	}
	x := w.keys[key]
	var fire []Closed
	if w.spec.Kind == Tumbling {
		cur := w.current(now)
		if at.UnixNano() < cur {
			w.st.Late++
			t.mu.Unlock()
			t.warn(name, "late", "an event's time is in a period the window closed already; not counted", key, at)
			return Late
		}
		if x != nil && x.period < cur {
			if x.agg.Count == 0 && x.emptied {
				x.period, x.emptied = cur, false // closed with 0 once already: no second close
			} else {
				fire = append(fire, t.closeKeyLocked(w, key, x, cur))
			}
		}
	} else if w.spec.Kind == Sliding && !w.spec.holds(now.UnixNano(), at.UnixNano()) {
		w.st.Late++
		t.mu.Unlock()
		t.warn(name, "late", "an event's time is older than the window; not counted", key, at)
		return Late
	}
	if x == nil {
		if len(w.keys) >= w.spec.maxKeys() && !t.sweepLocked(w, now) {
			w.st.Full++
			most := w.spec.maxKeys()
			t.mu.Unlock()
			t.warn(name, "full", fmt.Sprintf("a window holds its max-keys (%d); a new key's event is not counted", most), key, at)
			return Full
		}
		x = &series{}
		if w.spec.Kind == Tumbling {
			x.period = w.current(now)
		}
		w.keys[key] = x
	}
	if !x.add(&w.spec, v, at.UnixNano()) {
		w.st.Late++
		t.mu.Unlock()
		t.warn(name, "late", "an event's time is older than the window; not counted", key, at)
		return Late
	}
	w.st.Counted++
	if !x.touched {
		x.touched = true
		t.touched = append(t.touched, ref{w, key})
	}
	t.mu.Unlock()
	t.fire(fire)
	return Counted
}

// current is the start of a tumbling window's period holding now.
func (w *win) current(now time.Time) int64 {
	if n := now.UnixNano(); n < w.curStart || n >= w.curEnd {
		s, e := w.spec.Period(now)
		w.curStart, w.curEnd = s.UnixNano(), e.UnixNano()
	}
	return w.curStart
}

// sweepLocked forgets w's keys that hold nothing any more, at most once
// a second; it reports whether one went.
func (t *Table) sweepLocked(w *win, now time.Time) bool {
	if now.UnixNano()-w.swept < int64(time.Second) {
		return false
	}
	w.swept = now.UnixNano()
	n := len(w.keys)
	for k, x := range w.keys {
		if x.empty(&w.spec, now.UnixNano()) {
			delete(w.keys, k)
			t.dirty[seriesField(w.name, k)] = nil
		}
	}
	return len(w.keys) < n
}

// warner logs what the windows refuse, at most once a second a window
// and cause (a Table's and a Shared's).
type warner struct {
	log   hclog.Logger
	warns lograte.Limiter
}

func (w *warner) warn(name, cause, msg string, key string, at time.Time) {
	if folded, ok := w.warns.Allow(cause + " " + name); ok {
		w.log.Warn(msg, "window", name, "key", key, "time", at.UTC().Format(time.RFC3339Nano), "folded", folded,
			"next-log-within", lograte.Every.String())
	}
}

// refused logs an event window name heard and could not count (why).
func (w *warner) refused(name, why string) {
	if folded, ok := w.warns.Allow("invalid " + why + " " + name); ok {
		w.log.Warn("an event a window hears is not counted: "+why, "window", name, "folded", folded,
			"next-log-within", lograte.Every.String())
	}
}

// MaxValue bounds a number a window aggregates: past it (or not finite)
// the event is invalid, as a sum of such numbers would overflow.
const MaxValue = 1e100

// Refuse counts an event window name heard and could not count — no key,
// no number, a time it cannot read (why) —, and logs it at most once a
// second a window and cause.
func (t *Table) Refuse(name, why string) {
	t.mu.Lock()
	if w := t.windows[name]; w != nil {
		w.st.Invalid++
	}
	t.mu.Unlock()
	t.refused(name, why)
}

// Read is window name's value for key now as JSON (Value.AppendJSON),
// and false when no such window is defined. A key the window has not
// heard of reads as a window without events.
func (t *Table) Read(name, key string) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.windows[name]
	if w == nil {
		return nil, false
	}
	now := t.cfg.Clock.Now().UnixNano()
	x := w.keys[key]
	if x == nil {
		x = &series{}
		if w.spec.Kind == Tumbling {
			s, _ := w.spec.Period(time.Unix(0, now))
			x.period = s.UnixNano()
		}
	}
	v := x.value(&w.spec, now)
	return v.AppendJSON(make([]byte, 0, 256)), true
}

// Keys is up to limit of window name's keys, sorted, and how many it
// holds; false when no such window is defined.
func (t *Table) Keys(name string, limit int) ([]string, int, bool) {
	t.mu.Lock()
	w := t.windows[name]
	if w == nil {
		t.mu.Unlock()
		return nil, 0, false
	}
	keys := make([]string, 0, len(w.keys))
	for k := range w.keys {
		keys = append(keys, k)
	}
	t.mu.Unlock()
	sort.Strings(keys)
	return keys[:min(limit, len(keys))], len(keys), true
}

// Has reports whether window name is defined.
func (t *Table) Has(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.windows[name] != nil
}

// Sync writes what changed since the last write, in one store write.
func (t *Table) Sync() error {
	if t.cfg.Store == nil {
		t.mu.Lock()
		clear(t.dirty)
		for _, r := range t.touched {
			if x := r.w.keys[r.key]; x != nil {
				x.touched = false
			}
		}
		t.touched = t.touched[:0]
		t.mu.Unlock()
		return nil
	}
	t.fmu.Lock()
	defer t.fmu.Unlock()
	t.mu.Lock()
	for _, r := range t.touched {
		// A series forgotten since (dropped, swept) has its removal in
		// dirty already.
		if x := r.w.keys[r.key]; x != nil && t.windows[r.w.name] == r.w && x.touched {
			x.touched = false
			t.dirty[seriesField(r.w.name, r.key)] = x.encode(&r.w.spec)
		}
	}
	t.touched = t.touched[:0]
	if len(t.dirty) == 0 {
		t.mu.Unlock()
		return nil
	}
	d := t.dirty
	t.dirty = make(map[string][]byte, len(d))
	t.mu.Unlock()
	fields := make([]string, 0, len(d))
	values := make([][]byte, 0, len(d))
	var del []string
	for f, v := range d {
		if v == nil {
			del = append(del, f)
		} else {
			fields, values = append(fields, f), append(values, v)
		}
	}
	t.writes.Add(1)
	if err := t.cfg.Store.HSetDel(keyspace.Windows, fields, values, del); err != nil {
		t.mu.Lock()
		for f, v := range d {
			if _, newer := t.dirty[f]; !newer {
				t.dirty[f] = v
			}
		}
		t.mu.Unlock()
		return fmt.Errorf("window: writing %d records: %w", len(d), err)
	}
	return nil
}

// SyncSoon writes what changed within 10 ms, with what else changes
// meanwhile: for counts no answer waits on (an event the Redis bus
// delivered after its sender was answered).
func (t *Table) SyncSoon() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.kickLocked()
}

// Stats are each window's counts, by name.
func (t *Table) Stats() map[string]Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]Stats, len(t.windows))
	for n, w := range t.windows {
		s := w.st
		s.Keys, s.MaxKeys = len(w.keys), w.spec.maxKeys()
		out[n] = s
	}
	return out
}

// Close stops the closes' timers and writes what is left. A close due
// later fires at the next start.
func (t *Table) Close() error {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return nil
	}
	t.stopped = true
	for _, w := range t.windows {
		if w.timer != nil {
			w.timer.Stop()
		}
	}
	if t.kick != nil {
		t.kick.Stop()
	}
	t.mu.Unlock()
	return t.Sync()
}
