package window

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// CloseTopic is the topic of a tumbling window's close: the event of the
// rules it triggers (on: {window, closed: true}).
const CloseTopic = "ruled.window"

// AppendEvent appends c as the event its rules read: the topic, the
// window, the key, then the aggregates (Value.AppendJSON).
func (c Closed) AppendEvent(b []byte) []byte {
	b = append(b, `{"topic":"`+CloseTopic+`","window":`...)
	b = abi.AppendJSONString(b, c.Window)
	b = append(b, `,"key":`...)
	b = abi.AppendJSONString(b, c.Key)
	b = append(b, ',')
	return append(b, c.Value.AppendJSON(nil)[1:]...)
}

// Obs is an event a window heard: its key, its number (0 for a window
// that counts), its own time.
type Obs struct {
	Window, Key string
	V           float64
	At          time.Time
}

// SharedStore reads a fleet's windows (store.RedisStream): values by
// field of keyspace.FleetWindows, "" where none is; a window's keys.
type SharedStore interface {
	WindowValues(ctx context.Context, fields []string) ([]string, error)
	WindowKeys(ctx context.Context, window string, limit int) ([]string, error)
}

// SharedConfig is a Shared's.
type SharedConfig struct {
	Store SharedStore
	// Now is the member's clock.
	Now func() time.Time
	Log hclog.Logger
}

// Shared is a fleet's windows. Every member counts the events it
// accepts into one series per window and key in Redis: a member works
// out a series' next value from the last it saw (a cache, by version),
// and the script that appends the event to the ingest stream writes it
// only if the series is still at that version — else nothing is
// written, the member learns the value there now, and works it out
// again (Plan). So two members counting one key at once agree on one
// value, and an event is counted exactly when it is accepted. A tumbling
// window's series is one a period (its field names the period's start),
// written with the event its close will be; the members' poll appends
// that event to the stream when the period ends (store's CloseWindows).
// Its methods are safe for concurrent use.
type Shared struct {
	cfg SharedConfig
	warner

	mu    sync.Mutex
	wins  map[string]*swin
	cache map[string]cached // by field
}

// swin is one window as this member counts it.
type swin struct {
	name string
	spec Spec
	hash string // of spec.String(), in each of its values
	st   Stats
	// cur is a tumbling window's current period, [start, end) in Unix ns.
	curStart, curEnd int64
}

// cached is a field's value as this member last saw it: its version
// (the fleet's counter when it was written) and its series; nil: none.
type cached struct {
	ver int64
	x   *series
	h   string // the spec hash it was written under
}

// maxCached bounds a member's cache of series; past it, it is cleared
// (the next write of each key costs a conflict and a read).
const maxCached = 1 << 16

// NewShared returns a fleet's windows; Define says which exist.
func NewShared(cfg SharedConfig) *Shared {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	return &Shared{cfg: cfg, warner: warner{log: cfg.Log}, wins: map[string]*swin{}, cache: map[string]cached{}}
}

func specHash(s Spec) string {
	sum := sha256.Sum256([]byte(s.String()))
	return hex.EncodeToString(sum[:6])
}

// SeriesField is a series' field in keyspace.FleetWindows: a sliding or
// count window's key, or a tumbling window's key in the period that
// starts at start (Unix ns).
func SeriesField(name, key string, tumbling bool, start int64) string {
	f := "s\x00" + name + "\x00" + key
	if tumbling {
		f += "\x00" + strconv.FormatInt(start, 10)
	}
	return f
}

// Define sets the windows the rules define now. A window whose spec
// changed starts afresh: a value written under another spec reads as
// none (its hash differs) and is written over.
func (s *Shared) Define(all map[string]Spec) error {
	var bad []string
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]*swin, len(all))
	for name, sp := range all {
		if err := sp.Check(); err != nil {
			bad = append(bad, fmt.Sprintf("window %s: %v", name, err))
			continue
		}
		w := &swin{name: name, spec: sp, hash: specHash(sp)}
		if old := s.wins[name]; old != nil && old.hash == w.hash {
			w.st = old.st
		}
		next[name] = w
	}
	s.wins = next
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

// Has reports whether window name is defined.
func (s *Shared) Has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wins[name] != nil
}

// Start is a no-op: a fleet's closes are its members' poll's.
func (s *Shared) Start() {}

// Refuse counts an event window name heard and could not count (see
// Table.Refuse).
func (s *Shared) Refuse(name, why string) {
	s.mu.Lock()
	if w := s.wins[name]; w != nil {
		w.st.Invalid++
	}
	s.mu.Unlock()
	s.refused(name, why)
}

// Op is one series' write an append carries (store.WindowOp): written
// only if the field is at version Expect (0: none).
type Op struct {
	Tumbling    bool
	Window, Key string
	Start       int64 // Tumbling: its period's start (Unix ns)
	Expect      int64
	Value       []byte // the spec's hash, a newline, the series
	MaxKeys     int
	// Score: a tumbling period's end (Unix ms: when it closes); a
	// sliding key's moment it holds nothing any more (Unix ms: it may
	// be forgotten for a new key then); 0 for a count window.
	Score int64
	// Close is a tumbling key's close event as of now (Closed.AppendEvent).
	Close []byte
}

// Field is the op's series' field.
func (o Op) Field() string { return SeriesField(o.Window, o.Key, o.Tumbling, o.Start) }

// Plan is one event's counts in the windows that heard it, as writes
// for the append script. Ops, then Conflict for each op that was not at
// the version expected (nothing was written: Ops again), or Applied.
type Plan struct {
	s    *Shared
	obs  []Obs
	now  time.Time
	ops  []Op
	late []string // windows whose series call the event late, this round
}

// Plan counts obs, heard by one event at now: what the member's clock
// refuses (a number past MaxValue, a time past the skew, a closed
// tumbling period) is counted here; the rest are Ops. Nil when nothing
// is left to write.
func (s *Shared) Plan(obs []Obs) *Plan {
	now := s.cfg.Now()
	s.mu.Lock()
	keep := obs[:0:0]
	type warning struct {
		name, cause, msg, key string
		at                    time.Time
	}
	var warns []warning
	for _, o := range obs {
		w := s.wins[o.Window]
		if w == nil {
			continue
		}
		switch {
		case math.IsNaN(o.V) || math.Abs(o.V) >= MaxValue:
			w.st.Invalid++
			warns = append(warns, warning{o.Window, "invalid", "an event's number is past ±1e100 (a sum would overflow); not counted", o.Key, o.At})
			continue
		case o.At.Sub(now) > MaxSkew:
			w.st.Future++
			warns = append(warns, warning{o.Window, "future", "an event's time is more than a minute ahead of the clock; not counted", o.Key, o.At})
			continue
		}
		if o.At.After(now) {
			o.At = now
		}
		if w.spec.Kind == Tumbling && o.At.UnixNano() < w.current(now) {
			w.st.Late++
			warns = append(warns, warning{o.Window, "late", "an event's time is in a period the window closed already; not counted", o.Key, o.At})
			continue
		}
		keep = append(keep, o)
	}
	s.mu.Unlock()
	for _, x := range warns {
		s.warn(x.name, x.cause, x.msg, x.key, x.at)
	}
	if len(keep) == 0 {
		return nil
	}
	p := &Plan{s: s, obs: keep, now: now}
	p.build()
	if len(p.ops) == 0 {
		p.Applied(nil)
		return nil
	}
	return p
}

// current is a tumbling window's period holding now.
func (w *swin) current(now time.Time) int64 {
	if n := now.UnixNano(); n < w.curStart || n >= w.curEnd {
		st, e := w.spec.Period(now)
		w.curStart, w.curEnd = st.UnixNano(), e.UnixNano()
	}
	return w.curStart
}

// build works the ops out from the cache.
func (p *Plan) build() {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p.ops, p.late = p.ops[:0], p.late[:0]
	for _, o := range p.obs {
		w := s.wins[o.Window]
		if w == nil {
			continue // undefined by a reload meanwhile
		}
		op := Op{Window: o.Window, Key: o.Key, MaxKeys: w.spec.maxKeys()}
		if w.spec.Kind == Tumbling {
			op.Tumbling, op.Start = true, w.current(p.now)
		}
		c := s.cache[op.Field()]
		var x *series
		if c.x != nil && c.h == w.hash {
			x = c.x.clone()
		} else {
			x = &series{}
		}
		op.Expect = c.ver
		at := o.At.UnixNano()
		switch w.spec.Kind {
		case Tumbling:
			x.period = op.Start
			_, end := w.spec.Period(time.Unix(0, op.Start))
			op.Score = end.UnixMilli()
		case Sliding:
			if !w.spec.holds(p.now.UnixNano(), at) {
				p.late = append(p.late, o.Window)
				continue
			}
		}
		if !x.add(&w.spec, o.V, at) {
			p.late = append(p.late, o.Window)
			continue
		}
		if w.spec.Kind == Sliding {
			last := x.buckets[len(x.buckets)-1].idx
			op.Score = time.Unix(0, (last+int64(w.spec.buckets()))*w.spec.width()).UnixMilli()
		}
		if w.spec.Kind == Tumbling {
			ps, pe := w.spec.Period(time.Unix(0, op.Start))
			c := Closed{Window: o.Window, Key: o.Key, Value: Value{Agg: x.agg, Numeric: w.spec.Numeric, Start: ps, End: pe}}
			op.Close = c.AppendEvent(nil)
		}
		op.Value = append([]byte(w.hash+"\n"), x.encode(&w.spec)...)
		p.ops = append(p.ops, op)
	}
}

// Ops are the writes to make, each at the version it expects.
func (p *Plan) Ops() []Op { return p.ops }

// Conflict says op i's field holds raw now ("" none): the member's
// cache takes it; call Rebuild once every conflict is in.
func (p *Plan) Conflict(i int, raw string) {
	if i < 0 || i >= len(p.ops) {
		return
	}
	p.s.see(p.ops[i].Window, p.ops[i].Field(), raw)
}

// Rebuild works the ops out again after conflicts.
func (p *Plan) Rebuild() { p.build() }

// Applied says what the append did with each op: its new version
// (decimal), "L" (a tumbling period closed meanwhile) or "F" (the window
// holds its max keys).
func (p *Plan) Applied(results []string) {
	s := p.s
	type warning struct{ name, cause, msg, key string }
	var warns []warning
	s.mu.Lock()
	for _, name := range p.late {
		if w := s.wins[name]; w != nil {
			w.st.Late++
			warns = append(warns, warning{name, "late", "an event's time is older than the window; not counted", ""})
		}
	}
	for i, op := range p.ops {
		w := s.wins[op.Window]
		r := ""
		if i < len(results) {
			r = results[i]
		}
		switch r {
		case "L":
			if w != nil {
				w.st.Late++
			}
			warns = append(warns, warning{op.Window, "late", "an event's time is in a period the window closed already; not counted", op.Key})
		case "F":
			if w != nil {
				w.st.Full++
				warns = append(warns, warning{op.Window, "full", fmt.Sprintf("a window holds its max-keys (%d); a new key's event is not counted", op.MaxKeys), op.Key})
			}
		default:
			v, err := strconv.ParseInt(r, 10, 64)
			if err != nil || w == nil {
				continue
			}
			w.st.Counted++
			if len(s.cache) >= maxCached {
				clear(s.cache)
			}
			f := op.Field()
			if old, ok := s.cache[f]; !ok || old.ver < v {
				// Written under the spec as defined now? (A reload may
				// have come between the plan and its write.)
				if h, b, ok := strings.Cut(string(op.Value), "\n"); ok && h == w.hash {
					if x, err := decode(&w.spec, []byte(b)); err == nil {
						s.cache[f] = cached{ver: v, x: x, h: w.hash}
						continue
					}
				}
				s.cache[f] = cached{ver: v} // its version, to write over it
			}
		}
	}
	s.mu.Unlock()
	for _, x := range warns {
		s.warn(x.name, x.cause, x.msg, x.key, p.now)
	}
}

// see takes a field's value as Redis holds it into the cache: its
// version and, written under the window's spec as defined here, its
// series. It returns the series (nil: none, or another spec's).
func (s *Shared) see(name, field, raw string) *series {
	ver, rest, ok := parseShared(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		delete(s.cache, field)
		return nil
	}
	w := s.wins[name]
	c := cached{ver: ver}
	if w != nil {
		if h, b, ok := strings.Cut(rest, "\n"); ok && h == w.hash {
			if x, err := decode(&w.spec, []byte(b)); err == nil {
				c.x, c.h = x, h
			}
		}
	}
	if old, ok := s.cache[field]; !ok || old.ver <= ver {
		if len(s.cache) >= maxCached {
			clear(s.cache)
		}
		s.cache[field] = c
	}
	return c.x
}

// parseShared splits a value of keyspace.FleetWindows: its version, then
// the rest; false for none ("") or one that is not ours.
func parseShared(raw string) (int64, string, bool) {
	v, rest, ok := strings.Cut(raw, " ")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, "", false
	}
	return n, rest, true
}

// clone is a copy of x that add may change.
func (x *series) clone() *series {
	c := *x
	c.buckets = append([]bucket(nil), x.buckets...)
	c.ring = append([]point(nil), x.ring...)
	return &c
}

// Read is window name's value for key now, read from Redis, as JSON;
// false when no such window is defined or Redis does not answer.
func (s *Shared) Read(name, key string) ([]byte, bool) {
	now := s.cfg.Now()
	s.mu.Lock()
	w := s.wins[name]
	var sp Spec
	var start int64
	if w != nil {
		sp = w.spec
		if sp.Kind == Tumbling {
			start = w.current(now)
		}
	}
	s.mu.Unlock()
	if w == nil {
		return nil, false
	}
	f := SeriesField(name, key, sp.Kind == Tumbling, start)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	vals, err := s.cfg.Store.WindowValues(ctx, []string{f})
	if err != nil || len(vals) != 1 {
		if folded, ok := s.warns.Allow("read " + name); ok {
			s.log.Warn("cannot read a window from Redis; the rule reads it as nil", "window", name, "error", err,
				"folded", folded, "next-log-within", lograte.Every.String())
		}
		return nil, false
	}
	x := s.see(name, f, vals[0])
	if x == nil {
		x = &series{period: start}
	}
	v := x.value(&sp, now.UnixNano())
	return v.AppendJSON(make([]byte, 0, 256)), true
}

// Keys is up to limit of window name's keys, sorted, and how many it
// holds (up to limit, past which it does not count); false when no
// such window is defined.
func (s *Shared) Keys(name string, limit int) ([]string, int, bool) {
	if !s.Has(name) {
		return nil, 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys, err := s.cfg.Store.WindowKeys(ctx, name, 100000)
	if err != nil {
		return nil, 0, true
	}
	sort.Strings(keys)
	keys = dedupe(keys)
	return keys[:min(limit, len(keys))], len(keys), true
}

func dedupe(ss []string) []string {
	out := ss[:0]
	for i, k := range ss {
		if i == 0 || k != ss[i-1] {
			out = append(out, k)
		}
	}
	return out
}

// Stats are each window's counts on this member since its start; Keys
// is the fleet's, as the append script counts them (keys), MaxKeys the
// spec's.
func (s *Shared) Stats(keys map[string]int) map[string]Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Stats, len(s.wins))
	for n, w := range s.wins {
		st := w.st
		st.Keys, st.MaxKeys = keys[n], w.spec.maxKeys()
		out[n] = st
	}
	return out
}

// Names are the windows defined, sorted.
func (s *Shared) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.wins))
	for n := range s.wins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Closed counts closes this member's poll appended, by window.
func (s *Shared) Closed(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if w := s.wins[n]; w != nil {
			w.st.Closed++
		}
	}
}

// Period is a tumbling window's current period as the members' poll
// passes it (store's CloseWindows): a key closed with events is closed
// once more at its end, with none (Zero), unless events come.
type Period struct {
	Window string
	Start  int64 // Unix ns
	End    int64 // Unix ms
	// ZeroHead and ZeroTail are the close event of a key without
	// events in this period, around its key as a JSON string.
	ZeroHead, ZeroTail []byte
}

// Periods are the tumbling windows' current periods at now.
func (s *Shared) Periods() []Period {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Period
	for _, w := range s.wins {
		if w.spec.Kind != Tumbling {
			continue
		}
		start := w.current(now)
		ps, pe := w.spec.Period(time.Unix(0, start))
		c := Closed{Window: w.name, Key: "\x00", Value: Value{Numeric: w.spec.Numeric, Start: ps, End: pe}}
		ev := c.AppendEvent(nil)
		i := bytes.Index(ev, []byte(`"\u0000"`))
		if i < 0 {
			continue // cannot happen: AppendJSONString escapes NUL so
		}
		out = append(out, Period{Window: w.name, Start: start, End: pe.UnixMilli(), ZeroHead: ev[:i], ZeroTail: ev[i+len(`"\u0000"`):]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Window < out[j].Window })
	return out
}
