package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Change is a trigger on a change of an entity's state:
// on: {topic: door.front, changes: open, from: false, to: true}. An event
// on a topic of the pattern triggers the rule when it changes its
// entity's state (package state): the value at Field differs from the
// state before (a field that appears or goes counts), or, with Field "",
// the state differs at all. A report that repeats the state triggers
// nothing. From and To, when given, are the values the field must have
// had and must have now (any of them); a state the entity did not have
// (its first report, or the field missing) has no value From matches.
type Change struct {
	Pos   Pos
	Topic Pattern
	// Field is the state's path whose value must change; "" for the
	// whole state (changes: true).
	Field string
	// From and To list the values the field had and has: strings,
	// float64 numbers, bools and nil for null. Empty: any.
	From, To []any
	// Above and Below, when set, make the change a threshold: it fires
	// when the field's number crosses into the range (above Above, below
	// Below), not on each report inside it; a first report inside it
	// fires too.
	Above, Below *float64
	// Hysteresis, with Above or Below (one of them), is how far back
	// across the line the number must go before the threshold fires
	// again: above: 30, hysteresis: 1 fires above 30, then not again
	// until it has been at or below 29.
	Hysteresis float64
	// For, when above 0, makes the change a hold: the rule runs once the
	// field has kept the value it changed to (the whole state, with Field
	// "") this long, per entity; a report that changes it first cancels
	// the hold (package hold).
	For time.Duration
}

// MaxHold is the longest for: a hold may wait, as a wait-for's timeout.
const MaxHold = 8784 * time.Hour

var changeKeys = []string{"topic", "changes", "from", "to", "above", "below", "hysteresis", "for"}

const changeHint = "on: {topic: door.front, changes: open, to: true}: changes names the field, or true for the whole state"

// change reads one {topic, changes, from, to}.
func (p *parser) change(e entry) (Change, bool) {
	c := Change{Pos: p.pos(resolve(e.value))}
	f, _ := p.fields(e.value, "a change trigger", changeKeys)
	bad := len(p.errs)
	if te, ok := f["topic"]; ok {
		c.Topic, _ = p.pattern(te)
	}
	ce, ok := f["changes"]
	whole := false
	switch v := resolve(ce.value); {
	case !ok:
		p.errorf(e.value, "a trigger with a topic needs changes").Hint = changeHint + "; a plain topic trigger is on: door.front"
	case v.Kind == yaml.ScalarNode && v.Tag == "!!bool":
		if v.Value != "true" {
			p.errorf(ce.value, "changes: false triggers nothing").Hint = changeHint
		}
		whole = true
	default:
		c.Field, _ = p.path(ce)
		if first, _, _ := strings.Cut(c.Field, "."); first == "id" || first == "time" {
			p.errorf(ce.value, "changes: %s: a report's id and time are not its state (each report has its own)", c.Field).Hint =
				"name a field of what the device reports, e.g. changes: open"
		}
	}
	c.From = p.scalars(f, "from")
	c.To = p.scalars(f, "to")
	c.Above = p.threshold(f, "above")
	c.Below = p.threshold(f, "below")
	if h := p.threshold(f, "hysteresis"); h != nil {
		switch {
		case *h <= 0:
			p.errorf(f["hysteresis"].value, "hysteresis: %v: want a number above 0", *h).Hint = "above: 30, hysteresis: 1 fires again only after the value was at or below 29"
		case (c.Above == nil) == (c.Below == nil):
			p.errorf(f["hysteresis"].value, "hysteresis needs one line to cross: above or below, not %s", map[bool]string{true: "neither", false: "both"}[c.Above == nil]).Hint =
				"above: 30, hysteresis: 1"
		default:
			c.Hysteresis = *h
		}
	}
	switch {
	case c.Above == nil && c.Below == nil:
	case whole:
		p.errorf(e.value, "above and below compare a field's number: they need changes: FIELD").Hint = "on: {topic: room.temp, changes: t, above: 30}"
	case c.From != nil || c.To != nil:
		p.errorf(e.value, "a threshold (above, below) and from/to both say what the value must be: give one").Hint = "on: {topic: room.temp, changes: t, above: 30}"
	case c.Above != nil && c.Below != nil && *c.Above >= *c.Below:
		p.errorf(e.value, "above %v and below %v leave no number between them", *c.Above, *c.Below).Hint = "a range: above: 18, below: 24"
	}
	if fe, ok := f["for"]; ok {
		c.For, _ = p.durationZero(fe, "how long the new value must last before the rule runs, e.g. for: 10m")
		switch {
		case c.For > 0 && c.Hysteresis > 0:
			p.errorf(fe.value, "for: and hysteresis: both keep a threshold from flapping: give one").Hint =
				"for: waits for the number to stay past the line; hysteresis: for it to come back by so much before the next time"
		case c.For > 0 && c.For < time.Second:
			p.errorf(fe.value, "for: %v is under a second", c.For).Hint = "a hold counts from the report that began it; for: 1s at the least"
		case c.For > MaxHold:
			p.errorf(fe.value, "for: %v is over %v", c.For, MaxHold).Hint = "a hold waits at most a year (366 days)"
		}
	}
	if len(c.From) == 1 && len(c.To) == 1 && c.From[0] == c.To[0] {
		p.errorf(e.value, "from and to are the same value: a change from it to it never happens").Hint = changeHint
	}
	if whole && (c.From != nil || c.To != nil) {
		p.errorf(e.value, "from and to compare a field's value: they need changes: FIELD").Hint = changeHint
	}
	return c, len(p.errs) == bad
}

// threshold reads above: or below:, a number, if given.
func (p *parser) threshold(f map[string]entry, key string) *float64 {
	e, ok := f[key]
	if !ok {
		return nil
	}
	v := resolve(e.value)
	var n float64
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") || v.Decode(&n) != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		p.wrongType(e, "a number", false)
		return nil
	}
	return &n
}

// InRange reports whether x is inside the threshold's range.
func (c Change) InRange(x float64) bool {
	return (c.Above == nil || x > *c.Above) && (c.Below == nil || x < *c.Below)
}

// Rearmed reports whether x is back across the line by the hysteresis:
// at or below Above − Hysteresis, or at or above Below + Hysteresis.
func (c Change) Rearmed(x float64) bool {
	if c.Above != nil {
		return x <= *c.Above-c.Hysteresis
	}
	return c.Below != nil && x >= *c.Below+c.Hysteresis
}

// Threshold reports whether the change is a threshold (above, below).
func (c Change) Threshold() bool { return c.Above != nil || c.Below != nil }

// scalars reads from: or to: — a value or a list of them — if given.
func (p *parser) scalars(f map[string]entry, key string) []any {
	e, ok := f[key]
	if !ok {
		return nil
	}
	items := []*yaml.Node{e.value}
	if v := resolve(e.value); v.Kind == yaml.SequenceNode {
		if len(v.Content) == 0 {
			p.errorf(e.value, "%s is an empty list", key).Hint = "leave it out for any value"
			return nil
		}
		items = v.Content
	}
	out := make([]any, 0, len(items))
	for _, item := range items {
		v := resolve(item)
		var x any
		switch {
		case v.Kind != yaml.ScalarNode:
			p.wrongType(entry{key, e.key, item}, "a string, number, true, false or null, or a list of them", false)
			continue
		case v.Tag == "!!null":
			x = nil
		case v.Tag == "!!int" || v.Tag == "!!float":
			var n float64
			if err := v.Decode(&n); err != nil {
				p.errorf(item, "%s: %v", key, err)
				continue
			}
			x = n
		case v.Tag == "!!bool":
			var b bool
			v.Decode(&b)
			x = b
		case v.Tag == "!!str":
			x = v.Value
		default:
			p.wrongType(entry{key, e.key, item}, "a string, number, true, false or null", false)
			continue
		}
		out = append(out, x)
	}
	return out
}

// String is the trigger as written: "door.front changes open from [false] to [true]".
func (c Change) String() string {
	s := string(c.Topic) + " changes "
	if c.Field == "" {
		s += "state"
	} else {
		s += c.Field
	}
	if c.From != nil {
		s += " from " + values(c.From)
	}
	if c.To != nil {
		s += " to " + values(c.To)
	}
	if c.Above != nil {
		s += fmt.Sprintf(" above %v", *c.Above)
	}
	if c.Below != nil {
		s += fmt.Sprintf(" below %v", *c.Below)
	}
	if c.Hysteresis > 0 {
		s += fmt.Sprintf(" hysteresis %v", c.Hysteresis)
	}
	if c.For > 0 {
		s += " for " + c.For.String()
	}
	return s
}

// values writes from: or to: as JSON would, so that "true" and true
// differ: [true,"ajar",1,null].
func values(vs []any) string {
	b, _ := json.Marshal(vs)
	return string(b)
}

// changeTopics are the patterns of r's change triggers.
func changeTopics(r *Rule) []Pattern {
	var out []Pattern
	for _, c := range r.Changes {
		out = append(out, c.Topic)
	}
	return out
}

// OnTopic reports whether one of r's topic patterns (on:, not its change
// triggers) matches topic.
func (r *Rule) OnTopic(topic string) bool {
	for _, p := range r.On {
		if p.Match(topic) {
			return true
		}
	}
	return false
}

// Equal reports whether two change triggers say the same (their
// positions aside): a hold begun under one goes on under the other.
func (c Change) Equal(o Change) bool {
	return c.Topic == o.Topic && c.Field == o.Field && c.For == o.For && c.Hysteresis == o.Hysteresis &&
		sameNumber(c.Above, o.Above) && sameNumber(c.Below, o.Below) &&
		slices.Equal(c.From, o.From) && slices.Equal(c.To, o.To)
}

func sameNumber(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// CheckPath says what is wrong with an event field path ("" for
// nothing): the rule files' rule, for paths given elsewhere (the
// daemon's state.keys).
func CheckPath(s string) string { return checkPath(s) }
