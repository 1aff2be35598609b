package rules

import (
	"encoding/json"
	"slices"
	"strings"
)

// Warnings are what a set's rules may do that is allowed but likely a
// mistake, reported by lint without failing it: a step whose literal
// publish triggers its own rule, or a step that fires its own rule — such
// a rule loops until the host refuses the publish past its hop limit
// (bus.MaxHops, 16): a rule that published its own trigger ran 850,640
// runs in 20 s before the limit (issue 38) —; and a condition comparing a
// state, the previous state or the sun that may be missing (Rule.Warnings).
func Warnings(s *Set) []*Error {
	var out []*Error
	for _, r := range s.Rules() {
		out = append(out, r.Warnings...)
		for _, st := range append(append([]Step(nil), r.Steps...), r.Finally...) {
			if w := selfTrigger(r, st); w != nil {
				out = append(out, w)
			}
		}
	}
	SortErrors(out)
	return out
}

// selfTrigger is the warning for st when it publishes a literal topic
// that r is on, or fires r.
func selfTrigger(r *Rule, st Step) *Error {
	var with map[string]any
	if json.Unmarshal(st.Do.With, &with) != nil {
		return nil
	}
	switch {
	case st.Do.Plugin == "publish" && st.Do.Function == "publish":
		topic, ok := with["topic"].(string)
		if !ok || strings.Contains(topic, "{{") {
			return nil // a template: what it publishes depends on the event
		}
		for _, p := range append(slices.Clip(r.On), changeTopics(r)...) {
			if p.Match(topic) {
				return &Error{Pos: st.Do.WithPos, Rule: r.ID,
					Msg:  "warning: step " + st.Name + " publishes to " + topic + ", which triggers this rule itself: a loop, refused after 16 hops",
					Hint: "publish to another topic, or give the rule a when: that the published event fails"}
			}
		}
	case st.Do.Plugin == "fire" && st.Do.Function == "fire":
		if rule, _ := with["rule"].(string); rule == r.ID {
			return &Error{Pos: st.Do.WithPos, Rule: r.ID,
				Msg:  "warning: step " + st.Name + " fires this rule itself: a loop, refused after 16 hops",
				Hint: "fire another rule, or give the fired run a when: that ends it"}
		}
	}
	return nil
}
