package seq

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/seq/core"
)

// "Why didn't it fire?" is an operator's first question, and a trigger
// that started no run leaves no run to read. So each rule keeps, per
// reason, how many triggers it turned away and the last few of them
// (WhyNotKeep), in memory: a telemetry topic whose condition says no a
// hundred times a second costs a slot written under the lock admit takes
// anyway, not a log entry each (RATIONALE.md, "Why a trigger whose
// condition says no is kept apart from the runs").

// Why a rule started no run for a trigger, beside the turned-away reasons
// (awayPaused, awaySingle, …) its log lines give.
const (
	whyFalse     = "its condition said no"
	whyCooldown  = core.WhyCooldown
	whyDebounced = "a later trigger of its key replaced it (debounce)"
	whyStopped   = "the rule is not running (killed, failed or completed)"
)

// WhyNotKeep is how many triggers a rule keeps per reason.
const WhyNotKeep = 10

// NotStarted is a trigger a rule started no run for.
type NotStarted struct {
	At      time.Time       `json:"at"`
	Topic   string          `json:"topic"`
	EventID string          `json:"event_id,omitempty"`
	Key     string          `json:"key,omitempty"`
	Event   json.RawMessage `json:"event,omitempty"` // absent when larger than the log keeps (RunnerConfig.LogValue)
	// Values is what each path the rule's condition reads held, for a
	// condition that said no (an expression's: Sequence.WhenValues).
	Values json.RawMessage `json:"values,omitempty"`
}

// WhyNot is one reason a rule turned triggers away: how many since the
// runner started, and the last of them, newest first.
type WhyNot struct {
	Reason string       `json:"reason"`
	Count  uint64       `json:"count"`
	Last   []NotStarted `json:"last"`
}

// notRing is one rule's reason: its count and its last triggers.
type notRing struct {
	count uint64
	next  int
	last  [WhyNotKeep]notEntry
}

// notEntry is a turned-away trigger as kept: the event by reference
// (events are not changed once decoded), read into a NotStarted only
// when asked.
type notEntry struct {
	at    time.Time
	seq   *Sequence
	event *bus.Event
	key   string
	// values is what the condition that said no read (WhenValues), for
	// a rule whose condition read a context beside the event (the
	// states, previous and the sun): rendered when it said no and bounded
	// as a log node's value, since a context of 32 states is far larger
	// than the few values it shows. nil: rendered from the event when
	// asked.
	values json.RawMessage
}

// notStartedLocked records that rule s turned e away for why.
func (sm *machine) notStartedLocked(s *Sequence, e *bus.Event, key, why string) {
	sm.notStartedSawLocked(s, e, key, why, nil)
}

// notStartedSawLocked is notStartedLocked for a condition that said no
// having read values (notEntry.values) from a context beside the event.
func (sm *machine) notStartedSawLocked(s *Sequence, e *bus.Event, key, why string, values json.RawMessage) {
	rs := sm.rule(s.Rule.ID)
	if rs.whyNot == nil {
		rs.whyNot = map[string]*notRing{}
	}
	r := rs.whyNot[why]
	if r == nil {
		r = &notRing{}
		rs.whyNot[why] = r
	}
	r.count++
	r.last[r.next] = notEntry{at: sm.sch.Now(), seq: s, event: e, key: key, values: values}
	r.next = (r.next + 1) % WhyNotKeep
}

// NotStarted counts, by reason, the triggers rule turned away: WhyNot's
// counts without its entries, for a caller that watches them move.
func (rn *Runner) NotStarted(rule string) map[string]uint64 {
	out := map[string]uint64{}
	rn.view(func() {
		if rs := rn.m.rules[rule]; rs != nil {
			for why, r := range rs.whyNot {
				out[why] = r.count
			}
		}
	})
	return out
}

// WhyNot says why rule started no run for the triggers it turned away,
// by reason, most frequent first: what a condition that said no saw,
// which key was in its cooldown or had a run live, which triggers came
// while it was paused or were replaced by a later one.
func (rn *Runner) WhyNot(rule string) []WhyNot {
	type kept struct {
		reason string
		count  uint64
		last   []notEntry
	}
	var ks []kept
	rn.view(func() {
		if rs := rn.m.rules[rule]; rs != nil {
			for why, r := range rs.whyNot {
				k := kept{reason: why, count: r.count}
				for i := range WhyNotKeep {
					if en := r.last[(r.next-1-i+2*WhyNotKeep)%WhyNotKeep]; en.event != nil {
						k.last = append(k.last, en)
					}
				}
				ks = append(ks, k)
			}
		}
	})
	out := make([]WhyNot, 0, len(ks))
	for _, k := range ks {
		w := WhyNot{Reason: k.reason, Count: k.count, Last: []NotStarted{}}
		for _, en := range k.last {
			ns := NotStarted{At: en.at, Topic: en.event.Topic, EventID: en.event.ID, Key: en.key}
			ns.Event, _ = boundedTo(rn.logValue, "event", en.event.Raw)
			switch {
			case en.values != nil:
				ns.Values = en.values
			case k.reason == whyFalse:
				ns.Values, _ = boundedTo(rn.logValue, "values", render(en.seq.WhenValues, &Call{View: en.event.View}))
			}
			w.Last = append(w.Last, ns)
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b WhyNot) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		if a.Reason < b.Reason {
			return -1
		}
		return 1
	})
	return out
}

// TurnAway records that rule s started no run for e, for a reason its
// caller decided (ingest's: the entity's state was refused, so a change
// trigger cannot tell): WhyNot lists it beside the runner's own.
func (rn *Runner) TurnAway(s *Sequence, e *bus.Event, why string) {
	rn.view(func() { rn.m.notStartedLocked(s, e, keyOf(s.Rule, e), why) })
}
