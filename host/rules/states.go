package rules

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// StateRead is one entity's state a rule reads (states:), by the name its
// conditions, variables and templates read it as: states.<Name>.<path>.
// The state is read when a call is made, not when the run started: a
// step after a delay sees the entity as it is then.
type StateRead struct {
	Name string
	// Entity names the entity: a topic (door.front) or <topic>/<key>
	// (scooter.telemetry/s1). Its {{path}} placeholders are filled from
	// the run's trigger (scooter.battery/{{vehicle}}: the same vehicle's).
	Entity string
	// MaxAge is how long after it was last reported the state counts as
	// missing; 0: it never goes stale. The rule's max-age: unless the read
	// says its own.
	MaxAge time.Duration
	// Window, when set, makes the read a window's value (its aggregates:
	// WindowAggregates), not an entity's state: Entity is then the key's
	// template, "" for the window's own key path read from the trigger.
	Window string
	Pos    Pos
}

// MaxStateReads bounds the states a rule reads: each call of its
// conditions and actions carries them.
const MaxStateReads = 32

// MaxEntityID is the longest entity id a rule may name, the state
// table's bound (host/state's MaxIDBytes).
const MaxEntityID = 256

const statesHint = "states: {door: door.front, battery: \"scooter.battery/{{vehicle}}\", lux: {entity: sensor.lux, max-age: 10m}}: " +
	"read as states.door.open, states.lux.value"

var stateReadKeys = []string{"entity", "max-age", "window", "key"}

// states reads states: a mapping of names to entity ids, or to {entity,
// max-age}. maxAge is the rule's max-age:, for the reads that give none.
func (p *parser) states(e entry, maxAge time.Duration) []StateRead {
	v := resolve(e.value)
	if v.Kind != yaml.MappingNode {
		p.wrongType(e, "a mapping of names to entity ids", false).Hint = statesHint
		return nil
	}
	if len(v.Content) == 0 {
		p.errorf(e.value, "states is empty").Hint = "leave states out for none"
		return nil
	}
	if len(v.Content)/2 > MaxStateReads {
		p.errorf(e.value, "states names %d entities; at most %d", len(v.Content)/2, MaxStateReads).Hint =
			"every call of the rule's conditions and actions carries the states it reads: keep them few"
		return nil
	}
	var out []StateRead
	for _, se := range p.entries(v) {
		if !p.name(se, se.name, "a state's name") {
			continue
		}
		sr := StateRead{Name: se.name, MaxAge: maxAge, Pos: p.pos(resolve(se.value))}
		idEntry := se
		switch sv := resolve(se.value); sv.Kind {
		case yaml.ScalarNode:
		case yaml.MappingNode:
			f, _ := p.fields(sv, "a state read", stateReadKeys)
			if we, ok := f["window"]; ok {
				if p.windowRead(&sr, se, f, we) {
					out = append(out, sr)
				}
				continue
			}
			if ke, ok := f["key"]; ok {
				p.errorf(ke.key, "key: names a window's key; an entity's state is read by entity:").Hint = statesHint
				continue
			}
			ie, ok := f["entity"]
			if !ok {
				p.errorf(sv, "state %s has no entity", se.name).Hint = statesHint
				continue
			}
			idEntry = ie
			if ae, ok := f["max-age"]; ok {
				sr.MaxAge, _ = p.duration(ae)
			}
		default:
			p.wrongType(se, "an entity id or {entity, max-age}", false).Hint = statesHint
			continue
		}
		id, ok := p.str(idEntry)
		if !ok {
			continue
		}
		if !p.entityID(idEntry, id) {
			continue
		}
		sr.Entity = id
		out = append(out, sr)
	}
	return out
}

// windowRead reads a state read {window, key}: a window's value for a
// key, by default the trigger's value of the window's own key field.
func (p *parser) windowRead(sr *StateRead, se entry, f map[string]entry, we entry) bool {
	bad := len(p.errs)
	for _, k := range []string{"entity", "max-age"} {
		if e, ok := f[k]; ok {
			p.errorf(e.key, "state %s reads a window: %s: is an entity's", se.name, k).Hint =
				"{window: NAME} reads the trigger's key; {window: NAME, key: \"{{vehicle}}\"} names it"
		}
	}
	if s, ok := p.str(we); ok && p.name(we, s, "a window's name") {
		sr.Window = s
	}
	sr.MaxAge = 0
	if ke, ok := f["key"]; ok {
		if k, ok := p.str(ke); ok && p.entityID(ke, k) {
			sr.Entity = k
		}
	}
	return len(p.errs) == bad
}

// entityID checks an entity id a rule reads: a topic, or <topic>/<key>,
// whose placeholders the trigger fills.
func (p *parser) entityID(e entry, id string) bool {
	switch {
	case strings.TrimSpace(id) == "":
		p.errorf(e.value, "%s: an entity id is empty", e.name).Hint = statesHint
		return false
	case len(id) > MaxEntityID:
		p.errorf(e.value, "%s: the entity id is %d bytes, over %d", e.name, len(id), MaxEntityID).Hint =
			"an entity is a topic, or <topic>/<key> by the config's state.keys"
		return false
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		p.errorf(e.value, "%s: the entity id holds a control character", e.name).Hint = statesHint
		return false
	}
	mark := len(p.refs)
	p.templates(e.value, true)
	for _, r := range p.takeRefs(mark) {
		err := &Error{Pos: r.pos, Msg: fmt.Sprintf("%s.%s: an entity id is filled from the trigger alone", r.root, r.name),
			Hint: "name the trigger's own fields: scooter.battery/{{vehicle}}"}
		if k := err.Error(); !p.reported[k] {
			p.reported[k] = true
			p.bad = true
			p.errs = append(p.errs, err)
		}
	}
	return true
}

// maxAge reads the rule's max-age: the default of its states: reads.
func (p *parser) maxAge(f map[string]entry) time.Duration {
	e, ok := f["max-age"]
	if !ok {
		return 0
	}
	d, _ := p.duration(e)
	if _, has := f["states"]; !has {
		p.errorf(e.key, "max-age applies to the states the rule reads, and it reads none").Hint = statesHint
	}
	return d
}

// stateNames are the names of reads.
func stateNames(reads []StateRead) []string {
	out := make([]string, len(reads))
	for i, r := range reads {
		out[i] = r.Name
	}
	return out
}
