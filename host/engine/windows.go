package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/state"
	"github.com/ruled-dev/ruled/host/triggers"
	"github.com/ruled-dev/ruled/host/window"
)

// WindowTopic is the topic of a tumbling window's close, the event of
// the rules it triggers (on: {window, closed: true}).
const WindowTopic = window.CloseTopic

// windowKeeper is what the engine asks of the windows, on one daemon
// (window.Table) or in a fleet (window.Shared).
type windowKeeper interface {
	Define(map[string]window.Spec) error
	Read(name, key string) ([]byte, bool)
	Refuse(name, why string)
	Start()
}

// windowKeeper is the windows kept here; nil: none.
func (e *Engine) windowKeeper() windowKeeper {
	switch {
	case e.cfg.Windows != nil:
		return e.cfg.Windows
	case e.cfg.SharedWindows != nil:
		return e.cfg.SharedWindows
	}
	return nil
}

// windowSet is the windows as loaded now: by topic, for ingest.
type windowSet struct {
	index  *triggers.Index[*rules.Window]
	byName map[string]*rules.Window
	any    bool
}

// syncWindows gives the window table the windows of the rules as loaded
// now: a new one starts empty, an edited one afresh, a removed one is
// forgotten (window.Table.Define).
func (e *Engine) syncWindows() {
	ws := e.rules.Current().Windows()
	k := e.windowKeeper()
	if k == nil {
		return
	}
	if e.cfg.SharedWindows != nil {
		for _, w := range ws {
			if len(w.Changes) > 0 {
				e.log.Warn("a fleet's window counts no changes yet: only the events of its on: topics", "window", w.Name)
			}
		}
	}
	b := triggers.NewBuilder[*rules.Window]()
	set := &windowSet{byName: map[string]*rules.Window{}, any: len(ws) > 0}
	defs := make(map[string]window.Spec, len(ws))
	for _, w := range ws {
		for _, p := range w.On {
			b.On(p, w)
		}
		for _, c := range w.Changes {
			b.On(c.Topic, w)
		}
		set.byName[w.Name] = w
		defs[w.Name] = SpecOf(w)
	}
	set.index = b.Build()
	if err := k.Define(defs); err != nil {
		// The parser holds every bound Define checks: a bug, said once.
		// The others are defined; these read as nil.
		e.log.Error("windows not defined", "error", err)
	}
	e.windows.Store(set)
}

// SpecOf is the arithmetic of a window as its rule file defines it. Its
// Def is the whole definition: an edit of its events, key or field
// starts it afresh, as an edit of its span does.
func SpecOf(w *rules.Window) window.Spec {
	s := window.Spec{MaxKeys: w.MaxKeys, Numeric: w.Field != "", Def: w.String()}
	switch {
	case w.Events > 0:
		s.Kind, s.Events = window.Count, w.Events
	case w.Last > 0:
		s.Kind, s.Last, s.Buckets = window.Sliding, w.Last, w.Buckets
	default:
		s.Kind, s.Every, s.Zone = window.Tumbling, w.Every, w.Zone
		switch w.Calendar {
		case "day":
			s.Calendar = window.Day
		case "week":
			s.Calendar = window.Week
		}
	}
	return s
}

// ObserveWindows counts e in each window that hears it: its topic's, or
// a change ch fires (state.Fires). It reports whether one counted it:
// the caller then writes the windows (SyncWindows) before e's answer.
func (e *Engine) ObserveWindows(ev *bus.Event, ch state.Change) bool {
	if e.cfg.Windows == nil {
		return false
	}
	counted := false
	for _, o := range e.heard(ev, ch, true) {
		if e.cfg.Windows.Observe(o.Window, o.Key, o.V, o.At) == window.Counted {
			counted = true
		}
	}
	return counted
}

// PlanWindows is what a fleet's windows count of ev (window.Shared's
// Plan): by the topics they hear, as the stream's append writes it; nil
// when none counts it.
func (e *Engine) PlanWindows(ev *bus.Event) *window.Plan {
	if e.cfg.SharedWindows == nil {
		return nil
	}
	obs := e.heard(ev, state.Change{}, false)
	if len(obs) == 0 {
		return nil
	}
	return e.cfg.SharedWindows.Plan(obs)
}

// heard are the windows that hear ev — by its topic, or (changes) by a
// change ch fires —, each with ev's key, number and time; what one
// cannot read of ev is refused there (Refuse).
func (e *Engine) heard(ev *bus.Event, ch state.Change, changes bool) []window.Obs {
	set := e.windows.Load()
	if set == nil || !set.any {
		return nil
	}
	ws := set.index.Triggered(ev.Topic)
	if len(ws) == 0 {
		return nil
	}
	k := e.windowKeeper()
	var v abi.View
	parsed := false
	var out []window.Obs
	var seen []*rules.Window // a window under two matching patterns counts once
	for _, w := range ws {
		if slices.Contains(seen, w) {
			continue
		}
		seen = append(seen, w)
		if !hears(w, ev, ch, changes) {
			continue
		}
		if !parsed {
			v, _ = abi.ParseView(ev.View)
			parsed = true
		}
		key, ok := keyOf(v, w.Key)
		if !ok {
			k.Refuse(w.Name, "no key (the key field missing, empty, too long, or no string, number or boolean)")
			continue
		}
		x := 0.0
		if w.Field != "" {
			f, ok := v.Find(w.Field)
			if ok {
				x, ok = f.Float()
			}
			if !ok {
				k.Refuse(w.Name, "no number in its field (missing, a string, null …)")
				continue
			}
		}
		at, ok := timeOf(v, w.Time, e.clock.Now())
		if !ok {
			k.Refuse(w.Name, "a time it cannot read (not RFC 3339, nor a Unix time above 0)")
			continue
		}
		out = append(out, window.Obs{Window: w.Name, Key: key, V: x, At: at})
	}
	return out
}

// hears reports whether w counts ev: on one of its topics, or (changes)
// by one of its changes that ch fires.
func hears(w *rules.Window, ev *bus.Event, ch state.Change, changes bool) bool {
	for _, p := range w.On {
		if p.Match(ev.Topic) {
			return true
		}
	}
	if !changes {
		return false
	}
	for _, c := range w.Changes {
		if c.Topic.Match(ev.Topic) && state.Fires(c, ch, ev.View) {
			return true
		}
	}
	return false
}

// keyOf is the window key of an event: its value at path ("" for a
// window of one key), a string as it is and a number or a boolean as
// JSON writes it; false when the event has none, or a value that names
// no key (an object, a list, null, "", a control character, over 256
// bytes).
func keyOf(v abi.View, path string) (string, bool) {
	if path == "" {
		return "", true
	}
	x, ok := v.Find(path)
	if !ok {
		return "", false
	}
	k, ok := state.KeyValue(x)
	if !ok || k == "" || len(k) > rules.MaxEntityID || !state.Printable(k) {
		return "", false
	}
	return k, true
}

// timeOf is an event's own time at path — RFC 3339, or a Unix time in
// seconds, milliseconds, microseconds or nanoseconds (told apart by
// size: up to 1e11 is seconds, to the year 5138) —, now (when it
// arrived) when it has none; false for one it cannot read, or at or
// before the epoch (a sensor whose clock was never set).
func timeOf(v abi.View, path string, now time.Time) (time.Time, bool) {
	if path == "" {
		return now, true
	}
	x, ok := v.Find(path)
	if !ok {
		return now, true
	}
	switch x.Kind() {
	case abi.ValueString:
		s, _ := x.Str()
		if t, err := time.Parse(time.RFC3339Nano, string(s)); err == nil && t.After(time.Unix(0, 0)) {
			return t, true
		}
	case abi.ValueInt, abi.ValueFloat:
		f, ok := x.Float()
		if !ok || f <= 0 || f >= 9e18 {
			break
		}
		switch {
		case f < 1e11:
			return time.Unix(0, int64(f*1e9)), true
		case f < 1e14:
			return time.Unix(0, int64(f*1e6)), true
		case f < 1e17:
			return time.Unix(0, int64(f*1e3)), true
		default:
			return time.Unix(0, int64(f)), true
		}
	}
	return time.Time{}, false
}

// SyncWindows writes what the windows counted since the last write
// (window.Table.Sync): before the events counted are acknowledged.
func (e *Engine) SyncWindows() error {
	if e.cfg.Windows == nil {
		return nil
	}
	return e.cfg.Windows.Sync()
}

// SyncWindowsSoon writes what the windows counted within 10 ms
// (window.Table.SyncSoon).
func (e *Engine) SyncWindowsSoon() {
	if e.cfg.Windows != nil {
		e.cfg.Windows.SyncSoon()
	}
}

// Window is a window's value for a rule's read (seq.WindowReader): for
// key, or byTrigger for the trigger's value of the window's key field.
func (e *Engine) Window(name, key string, byTrigger bool, trigger *abi.View) ([]byte, bool) {
	k := e.windowKeeper()
	if k == nil {
		return nil, false
	}
	if byTrigger {
		set := e.windows.Load()
		if set == nil || set.byName[name] == nil {
			return nil, false
		}
		path := set.byName[name].Key
		if w, ok := trigger.Find("window"); ok && path != "" {
			// The window's own close: its key is the event's key.
			if s, _ := w.Str(); string(s) == name {
				if tp, ok := trigger.Find("topic"); ok {
					if ts, _ := tp.Str(); string(ts) == WindowTopic {
						path = "key"
					}
				}
			}
		}
		var ok bool
		if key, ok = keyOf(*trigger, path); !ok {
			return nil, false // the trigger names no key of it: nil
		}
	}
	return k.Read(name, key)
}

// FireClose starts the rules a tumbling window's close triggers, each
// under a run id of the close's own (a close fired again after a kill,
// its run live already, is not run twice); done once every one took it.
func (e *Engine) FireClose(c window.Closed, done func()) {
	var seqs []*seq.Sequence
	for _, s := range e.rules.Current().Sequences() {
		for _, wc := range s.Rule.Closes {
			if wc.Window == c.Window {
				seqs = append(seqs, s)
				break
			}
		}
	}
	if len(seqs) == 0 || e.runner == nil {
		done()
		return
	}
	raw := c.AppendEvent(nil)
	var left atomic.Int32
	left.Store(int32(len(seqs)))
	each := func() {
		if left.Add(-1) == 0 {
			done()
		}
	}
	for _, s := range seqs {
		sum := sha256.Sum256([]byte(s.Rule.ID + "\x00" + c.Window + "\x00" + c.Key + "\x00" + strconv.FormatInt(c.Value.Start.UnixNano(), 10)))
		h := hex.EncodeToString(sum[:])
		runID := fmt.Sprintf("%012x", c.Value.End.UnixMilli()) + h[:20]
		if e.runner.Live(runID) {
			each()
			continue
		}
		ev, err := bus.Rebuild("win-"+h[:24], WindowTopic, c.Value.End, raw)
		if err != nil { // cannot happen: the JSON is ours
			each()
			continue
		}
		var once atomic.Bool
		e.runner.Fire(seq.Trigger{Seq: s, Event: ev, RunID: runID, Done: func() {
			if once.CompareAndSwap(false, true) {
				each()
			}
		}})
	}
}
