package rules

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Window is a window a rule file defines (windows:): the events it hears,
// the key it keeps them by, the number it aggregates and over what span
// (host/window keeps it). Rules read it as a state (states: {out:
// {window: outdoor}}, then states.out.avg), and a tumbling window's close
// triggers a rule (on: {window: opens, closed: true}).
type Window struct {
	Name string
	Pos  Pos
	// On and Changes are the events it hears: on a topic, or those that
	// fire a change trigger (a field's change, from:, to:, a threshold).
	On      []Pattern
	Changes []Change
	// Key is the event's field the window keeps a value per ("": one);
	// Field the number it aggregates ("": it counts events); Time the
	// event's own time ("": when it arrived).
	Key, Field, Time string
	// The span: Last (sliding) in Buckets; Every, or Calendar day or week
	// in Zone (tumbling); Events (count).
	Last     time.Duration
	Buckets  int
	Every    time.Duration
	Calendar string // "day", "week" or ""
	Zone     *time.Location
	TZ       string
	Events   int
	MaxKeys  int
	// Broken: the window's definition has errors (reported where it is
	// written); CheckWindows keeps no broken window.
	Broken bool
}

// Tumbling reports whether w closes periods (every:): only those trigger
// rules when they close.
func (w *Window) Tumbling() bool { return w.Every > 0 || w.Calendar != "" }

// String is w's definition without positions and its max-keys: a reload
// that changes it starts the window afresh; one that moves its bound
// keeps what it holds.
func (w *Window) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on:%v", w.Name, w.On)
	for _, c := range w.Changes {
		b.WriteString(" change:" + c.String())
	}
	fmt.Fprintf(&b, " key:%s field:%s time:%s last:%v/%d every:%v %s %s events:%d",
		w.Key, w.Field, w.Time, w.Last, w.Buckets, w.Every, w.Calendar, w.TZ, w.Events)
	return b.String()
}

// WindowAgg is a read of a window's aggregate: states.<State>.<Aggregate>
// at Pos.
type WindowAgg struct {
	State, Aggregate string
	Pos              Pos
}

// numberAggregates are what a window with no field: has none of: nil.
var numberAggregates = []string{"sum", "avg", "min", "max", "first", "last"}

// WindowClose is a rule's trigger on a tumbling window's close: on:
// {window: NAME, closed: true}.
type WindowClose struct {
	Window string
	Pos    Pos
}

// Bounds of a window, host/window's (its test holds them equal).
const (
	MaxWindowBuckets = 1000
	MaxWindowEvents  = 10000
	MaxWindowLength  = 8784 * time.Hour
	MaxWindowKeys    = 1000000
	// MaxWindows bounds the windows of a rules directory: each event on
	// their topics is counted in each.
	MaxWindows = 256
)

// WindowAggregates are what a rule reads of a window (host/window's
// Aggregates).
var WindowAggregates = []string{"count", "sum", "avg", "min", "max", "first", "last", "per_second", "per_minute", "start", "end"}

var (
	windowKeys      = []string{"name", "description", "on", "key", "field", "time", "last", "every", "timezone", "buckets", "max-keys"}
	windowCloseKeys = []string{"window", "closed"}
	lastEventsRE    = regexp.MustCompile(`^\s*(\d+)\s+events?\s*$`)
)

const windowHint = "windows: [{name: outdoor, on: weather.outdoor, field: temp, last: 15m}]; " +
	"last: 100 events counts events; every: 1h or every: day (timezone:) closes periods"

// windowList reads windows: a list of window definitions.
func (p *parser) windowList(e entry) {
	v := resolve(e.value)
	if v.Kind != yaml.SequenceNode {
		if !isNull(v) {
			p.wrongType(e, "a list of windows", false).Hint = windowHint
		}
		return
	}
	for _, item := range v.Content {
		p.bad = false
		w := p.window(item)
		switch {
		case w != nil && !p.bad:
			p.windows = append(p.windows, w)
		case w != nil && w.Name != "":
			// Its errors are reported; a rule reading it is refused for
			// them, not told it is not defined.
			p.windows = append(p.windows, &Window{Name: w.Name, Pos: w.Pos, Broken: true})
		}
	}
}

// window reads one window definition.
func (p *parser) window(n *yaml.Node) *Window {
	w := &Window{Pos: p.pos(resolve(n)), Zone: time.Local}
	f, ok := p.fields(n, "a window", windowKeys)
	if !ok {
		return nil
	}
	if e, ok := f["name"]; ok {
		if s, ok := p.str(e); ok && p.name(e, s, "a window's name") {
			w.Name = s
		}
	} else {
		p.errorf(n, "a window has no name").Hint = windowHint
	}
	if e, ok := f["on"]; ok {
		var r Rule
		p.triggers(&r, e)
		w.On, w.Changes = r.On, r.Changes
		if len(r.Schedules) > 0 || len(r.Closes) > 0 {
			p.errorf(e.value, "a window hears events: on is a topic pattern, a change ({topic, changes}) or a list of them").Hint = windowHint
		}
		for _, c := range r.Changes {
			if c.For > 0 || c.Hysteresis > 0 {
				p.errorf(e.value, "a window counts changes as they come: for: and hysteresis: are a rule's").Hint =
					"on: {topic: door.front, changes: open, to: true} counts each opening"
			}
		}
	} else {
		p.errorf(n, "window %s has no on", w.Name).Hint = windowHint
	}
	for _, k := range []struct {
		key string
		to  *string
	}{{"key", &w.Key}, {"field", &w.Field}, {"time", &w.Time}} {
		if e, ok := f[k.key]; ok {
			*k.to, _ = p.path(e)
			if strings.Contains(*k.to, "{{") {
				p.errorf(e.value, "%s: %s: a window's %s is an event field's path, not a template", k.key, *k.to, k.key).Hint =
					k.key + ": " + strings.Trim(*k.to, "{} ")
			}
		}
	}
	le, hasLast := f["last"]
	ee, hasEvery := f["every"]
	switch {
	case hasLast && hasEvery:
		p.errorf(ee.key, "a window is sliding (last:) or tumbling (every:), not both").Hint = windowHint
	case !hasLast && !hasEvery:
		p.errorf(n, "window %s has neither last: nor every:", w.Name).Hint = windowHint
	case hasLast:
		p.last(w, le)
	default:
		p.every(w, ee)
	}
	if e, ok := f["buckets"]; ok {
		if n, ok := p.int(e, 1); ok {
			switch {
			case w.Last == 0:
				p.errorf(e.key, "buckets: are a sliding window's (last: a duration)").Hint = windowHint
			case n > MaxWindowBuckets:
				p.errorf(e.value, "buckets: at most %d, got %d", MaxWindowBuckets, n).Hint = "each is 72 bytes a key"
			default:
				w.Buckets = n
			}
		}
	}
	if b := max(w.Buckets, 60); w.Last > 0 && w.Last/time.Duration(b) < time.Millisecond {
		p.errorf(le.value, "last: %v in %d buckets makes a bucket under a millisecond", w.Last, b).Hint =
			fmt.Sprintf("a bucket is 1ms at least: last: %v or longer, or buckets: %d or fewer", time.Duration(b)*time.Millisecond, max(int(w.Last/time.Millisecond), 1))
	}
	if e, ok := f["timezone"]; ok {
		tz, _ := p.str(e)
		switch loc, err := time.LoadLocation(tz); {
		case w.Calendar == "":
			p.errorf(e.key, "timezone: is for every: day or every: week").Hint = "a period on the grid (every: 1h) is the same everywhere"
		case err != nil:
			p.errorf(e.value, "timezone: %q is not a time zone the system knows", tz).Hint = "an IANA name: Europe/Berlin, America/New_York, UTC, Local"
		default:
			w.Zone, w.TZ = loc, tz
		}
	}
	if e, ok := f["max-keys"]; ok {
		if n, ok := p.int(e, 1); ok {
			if n > MaxWindowKeys {
				p.errorf(e.value, "max-keys: at most %d, got %d", MaxWindowKeys, n)
			} else {
				w.MaxKeys = n
			}
		}
	}
	return w
}

// last reads a sliding window's last: a duration, or a count window's
// "N events".
func (p *parser) last(w *Window, e entry) {
	if v := resolve(e.value); v.Kind == yaml.ScalarNode && (v.Tag == "!!int" || v.Tag == "!!float") {
		p.errorf(e.value, "last: %s is neither a span nor a count", v.Value).Hint =
			"last: 15m (the last 15 minutes), or last: " + v.Value + " events (the last " + v.Value + " events)"
		return
	}
	s, ok := p.str(e)
	if !ok {
		return
	}
	if m := lastEventsRE.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n < 1 || n > MaxWindowEvents {
			p.errorf(e.value, "last: %s: a count window holds 1 to %d events", s, MaxWindowEvents).Hint = "each is 16 bytes a key"
			return
		}
		w.Events = n
		return
	}
	d, ok := p.duration(e)
	switch {
	case !ok:
		if len(p.errs) > 0 {
			p.errs[len(p.errs)-1].Hint = "last: 15m (sliding), or last: 100 events (count)"
		}
	case d <= 0 || d > MaxWindowLength:
		p.errorf(e.value, "last: %v: a sliding window is longer than 0 and at most %v", d, MaxWindowLength)
	default:
		w.Last = d
	}
}

// every reads a tumbling window's period: a duration on the epoch's
// grid, or day or week on the wall clock.
func (p *parser) every(w *Window, e entry) {
	s, ok := p.str(e)
	if !ok {
		return
	}
	if s == "day" || s == "week" {
		w.Calendar = s
		return
	}
	d, ok := p.duration(e)
	switch {
	case !ok:
		if len(p.errs) > 0 {
			p.errs[len(p.errs)-1].Hint = "every: 1h (on the grid from the Unix epoch), every: day or every: week (from local midnight)"
		}
	case d < time.Second || d > MaxWindowLength:
		p.errorf(e.value, "every: %v: a period is 1s to %v", d, MaxWindowLength)
	case d%time.Second != 0:
		p.errorf(e.value, "every: %v: a period is whole seconds", d).Hint = "every: 1s, every: 90s, every: 1h"
	default:
		w.Every = d
	}
}

// windowClose reads on: {window: NAME, closed: true}.
func (p *parser) windowClose(e entry) (WindowClose, bool) {
	c := WindowClose{Pos: p.pos(resolve(e.value))}
	f, _ := p.fields(e.value, "a window trigger", windowCloseKeys)
	bad := len(p.errs)
	if we, ok := f["window"]; ok {
		if s, ok := p.str(we); ok && p.name(we, s, "a window's name") {
			c.Window = s
		}
	}
	if ce, ok := f["closed"]; !ok {
		p.errorf(e.value, "a window trigger needs closed: true").Hint = "on: {window: door-opens, closed: true} runs when each period closes"
	} else if b, ok := p.bool(ce); ok && !b {
		p.errorf(ce.value, "closed: false triggers nothing").Hint = "on: {window: " + cmp.Or(c.Window, "NAME") + ", closed: true}"
	}
	return c, len(p.errs) == bad
}

// windowOf is the window r's state read name reads; "" for none.
func windowOf(r *Rule, name string) string {
	for _, sr := range r.States {
		if sr.Name == name {
			return sr.Window
		}
	}
	return ""
}

// CheckWindows holds a directory's rules to its windows: each window
// named once, each window a rule reads or is triggered by defined, and a
// close only of a tumbling window. It returns the problems, each at the
// rule's or window's place, and the rules that have none.
func CheckWindows(rs []*Rule, ws []*Window) ([]*Rule, []*Window, []*Error) {
	var errs []*Error
	byName := map[string]*Window{}
	var keep []*Window
	broken := map[string]bool{}
	for _, w := range ws {
		if w.Broken {
			broken[w.Name] = true
			continue
		}
		if first, dup := byName[w.Name]; dup {
			errs = append(errs, &Error{Pos: w.Pos, Msg: fmt.Sprintf("window %q is already defined at %s", w.Name, first.Pos)})
			continue
		}
		if len(keep) == MaxWindows {
			errs = append(errs, &Error{Pos: w.Pos, Msg: fmt.Sprintf("window %s: a rules directory defines at most %d windows", w.Name, MaxWindows)})
			continue
		}
		byName[w.Name] = w
		keep = append(keep, w)
	}
	names := make([]string, 0, len(keep))
	for _, w := range keep {
		names = append(names, w.Name)
	}
	var out []*Rule
	for _, r := range rs {
		bad := false
		refuse := func(pos Pos, msg, hint string) {
			errs = append(errs, &Error{Pos: pos, Rule: r.ID, Msg: msg, Hint: hint})
			bad = true
		}
		unknown := func(pos Pos, name string) {
			if broken[name] {
				refuse(pos, fmt.Sprintf("window %q has errors (reported where it is defined)", name), "fix the window's definition")
				return
			}
			hint := "windows: " + listOr(names, "none is defined") + " (a windows: list in any rule file)"
			if s := suggest(name, names); s != "" {
				hint = "did you mean " + s + "? " + hint
			}
			refuse(pos, fmt.Sprintf("no window named %q is defined", name), hint)
		}
		onlySchedules := len(r.On) == 0 && len(r.Changes) == 0 && len(r.Closes) == 0
		for _, sr := range r.States {
			w := byName[sr.Window]
			switch {
			case sr.Window == "":
			case w == nil:
				unknown(sr.Pos, sr.Window)
			case w.Key == "" && sr.Entity != "":
				refuse(sr.Pos, fmt.Sprintf("state %s: window %s keeps one value, by no key: key: names none of it", sr.Name, sr.Window),
					"leave key: out: {window: "+sr.Window+"}")
			case w.Key != "" && sr.Entity == "" && onlySchedules:
				msg := fmt.Sprintf("warning: state %s reads window %s by the trigger's %s, and only schedules trigger the rule: a schedule's event has none, so it is always nil",
					sr.Name, sr.Window, w.Key)
				// A rule kept across reloads is checked again: warned once.
				if !slices.ContainsFunc(r.Warnings, func(e *Error) bool { return e.Msg == msg }) {
					r.Warnings = append(r.Warnings, &Error{Pos: sr.Pos, Rule: r.ID, Msg: msg,
						Hint: "name the key: {window: " + sr.Window + ", key: <a key>}"})
				}
			}
		}
		for _, c := range r.Closes {
			switch w := byName[c.Window]; {
			case w == nil:
				unknown(c.Pos, c.Window)
			case !w.Tumbling():
				refuse(c.Pos, fmt.Sprintf("window %s never closes: only a tumbling window (every:) does", c.Window),
					"read a sliding or count window as a state instead: states: {w: {window: "+c.Window+"}}")
			}
		}
		for _, a := range r.WindowAggs {
			w := byName[windowOf(r, a.State)]
			if w == nil || w.Field != "" || !slices.Contains(numberAggregates, a.Aggregate) {
				continue
			}
			msg := fmt.Sprintf("warning: states.%s.%s is always nil: window %s has no field:, so it counts events and keeps no numbers",
				a.State, a.Aggregate, w.Name)
			if !slices.ContainsFunc(r.Warnings, func(e *Error) bool { return e.Msg == msg && e.Pos == a.Pos }) {
				r.Warnings = append(r.Warnings, &Error{Pos: a.Pos, Rule: r.ID, Msg: msg,
					Hint: "read states." + a.State + ".count, or give the window a field: to aggregate"})
			}
		}
		if !bad {
			out = append(out, r)
		}
	}
	SortErrors(errs)
	return out, keep, errs
}
