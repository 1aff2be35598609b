package seq

import (
	"sync"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/bus"
)

// StateRead is one entity's state a rule reads (rules.StateRead), ready
// to look up: states.<Name> in its calls' context.
type StateRead struct {
	Name string
	// Entity renders the entity's id from the run's trigger.
	Entity *tmpl.Template
	// MaxAge: a state last reported longer ago than this is missing; 0
	// never.
	MaxAge time.Duration
	// Window, when set, makes the read a window's value (host/window):
	// Entity then renders its key, and nil reads the trigger's value of
	// the window's own key field (WindowReader.Window).
	Window string
}

// WindowReader is the windows (host/window's table, as the engine hands
// it in): what a rule's window reads (states: {w: {window: NAME}}) see.
type WindowReader interface {
	// Window is window name's value as JSON for key or, byTrigger, for
	// the trigger's value of the window's own key field (trigger, its
	// view; empty for a cold run's), and false when no such window is
	// defined.
	Window(name, key string, byTrigger bool, trigger *abi.View) ([]byte, bool)
}

// StateReader is the entities' states (host/state's table, as the daemon
// hands it in): what a rule's states: read.
type StateReader interface {
	// State is the state of the entity id as JSON, and when it was last
	// reported.
	State(id string) (json []byte, seen time.Time, ok bool)
}

// readsState reports whether s's calls carry states, the trigger's
// previous state or the sun.
func readsState(s *Sequence) bool { return len(s.States) > 0 || s.Previous || s.Sun }

// live reports whether s's calls read what changes without the run: the
// states, the sun. Their context is built at each call.
func (w *world) live(s *Sequence) bool {
	return len(s.States) > 0 && (w.states != nil || w.windows != nil) || s.Sun && w.sun != nil
}

// appendLive appends to doc, a JSON object's members so far (just "{"
// when none), what s's calls read that changes without the run: the
// states (appendStates) and the sun's place. It says whether it appended.
func (w *world) appendLive(doc []byte, s *Sequence, e *bus.Event, now time.Time) ([]byte, bool) {
	mark := len(doc)
	if len(doc) > 1 {
		doc = append(doc, ',')
	}
	doc, got := w.appendStates(doc, s, e, now)
	if s.Sun && w.sun != nil {
		if b := w.sun(now); len(b) > 0 {
			if got {
				doc = append(doc, ',')
			}
			doc = append(append(doc, `"`+abi.ContextSun+`":`...), b...)
			got = true
		}
	}
	if !got {
		return doc[:mark], false
	}
	return doc, true
}

// appendStates appends to doc "states":{"name":<state>, …} with the
// states s reads for the trigger e that are there and fresh at now;
// nothing when there are none or no reader. It says whether it appended.
func (w *world) appendStates(doc []byte, s *Sequence, e *bus.Event, now time.Time) ([]byte, bool) {
	if w.states == nil && w.windows == nil || len(s.States) == 0 {
		return doc, false
	}
	var ev abi.View
	parsed := false
	start := len(doc)
	for _, sr := range s.States {
		if !parsed {
			// A parked run may be cold (its event freed until warmed):
			// an id filled from it then renders from nothing, never a
			// nil dereference on a worker.
			if e != nil {
				ev, _ = abi.ParseView(e.View)
			}
			parsed = true
		}
		var b []byte
		if sr.Window != "" {
			if w.windows == nil {
				continue
			}
			key := ""
			if sr.Entity != nil {
				if key = sr.Entity.String(&ev); key == "" {
					continue // filled from a trigger without the field: no key, nil
				}
			}
			var ok bool
			if b, ok = w.windows.Window(sr.Window, key, sr.Entity == nil, &ev); !ok {
				continue // removed since the rule was loaded: missing
			}
		} else {
			if w.states == nil {
				continue
			}
			id := sr.Entity.String(&ev)
			var seen time.Time
			var ok bool
			b, seen, ok = w.states.State(id)
			if !ok || sr.MaxAge > 0 && now.Sub(seen) > sr.MaxAge {
				continue // missing, or stale: missing
			}
		}
		if len(doc) == start {
			doc = append(doc, `"`+abi.ContextStates+`":{`...)
		} else {
			doc = append(doc, ',')
		}
		doc = abi.AppendJSONString(doc, sr.Name)
		doc = append(append(doc, ':'), b...)
	}
	if len(doc) == start {
		return doc, false
	}
	return append(doc, '}'), true
}

// triggerContext is the context of a call made before a run has one —
// the rule's condition, its variables —: the states it reads and the
// trigger's previous state; nil when it has neither.
func (w *world) triggerContext(s *Sequence, e *bus.Event) []byte {
	if !readsState(s) {
		return nil
	}
	doc, got := w.appendLive([]byte{'{'}, s, e, w.sch.Now())
	if s.Previous && len(e.Prior) > 0 {
		if got {
			doc = append(doc, ',')
		}
		doc = append(append(doc, `"`+abi.ContextPrevious+`":`...), e.Prior...)
		got = true
	}
	if !got {
		return nil
	}
	view, err := contextView(append(doc, '}'))
	if err != nil {
		w.warn.folded("cannot build a call's states; it sees none", s.Rule.ID, "", "error", err)
		return nil
	}
	return view
}

// builders keep the view builders contexts are built with: a rule that
// reads states or the sun builds its context's view at each call, and a
// builder's tables grown once serve the calls after (a fresh one each
// call was a third of that cost in allocations).
var builders = sync.Pool{New: func() any { return &abi.ViewBuilder{MaxDepth: contextDepth} }}

// contextDepth bounds a context's nesting: an event's own bound (the
// view builder's 64, which the bus decodes with) and the three levels a
// context puts above what it holds (states.<name>, steps.<name>.output),
// so a state or an output the host took whole is never what fails the
// context of every call.
const contextDepth = 64 + 3

// contextView is the view of a context's JSON document.
func contextView(doc []byte) ([]byte, error) {
	b := builders.Get().(*abi.ViewBuilder)
	defer builders.Put(b)
	return b.Append(nil, doc, false)
}
