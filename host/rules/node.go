package rules

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// entry is one key of a mapping with its value. name is the key's text.
type entry struct {
	name       string
	key, value *yaml.Node
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// kindName says what a node holds, for "want X, got Y".
func kindName(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!str":
		return "a string"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "nothing"
	case "!!timestamp":
		return "a timestamp"
	case "!!binary":
		return "binary data"
	}
	return "a value tagged " + n.Tag
}

// entries lists a mapping's keys in order, with YAML merge keys (<<)
// expanded: a key given in the mapping wins over a merged one, and an
// earlier merge source over a later one, as the merge spec says. Merges let
// rules share a block of settings through an anchor, which authors expect
// of YAML. Keys must be strings, given once.
func (p *parser) entries(n *yaml.Node) []entry {
	var out []entry
	seen := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !p.spend(k) {
			break
		}
		if rk := resolve(k); rk.Kind == yaml.ScalarNode && rk.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		name, ok := p.key(k)
		if !ok {
			continue
		}
		if first, dup := seen[name]; dup {
			p.errorf(k, "key %q is given twice", name).Hint = fmt.Sprintf("it is first given at line %d", first.Line)
			continue
		}
		seen[name] = k
		out = append(out, entry{name, k, v})
	}
	for _, m := range merges {
		out = p.merge(out, seen, m)
	}
	return out
}

// merge adds the keys of the merge source m (a mapping, or a list of them)
// that out does not have yet.
func (p *parser) merge(out []entry, seen map[string]*yaml.Node, m *yaml.Node) []entry {
	src := resolve(m)
	var maps []*yaml.Node
	switch src.Kind {
	case yaml.MappingNode:
		maps = []*yaml.Node{m}
	case yaml.SequenceNode:
		maps = src.Content
	}
	for _, mm := range maps {
		target := resolve(mm)
		if target.Kind != yaml.MappingNode {
			p.errorf(mm, "<<: want a mapping to merge, got %s", kindName(target)).Hint = "merge an anchored mapping: <<: *defaults"
			continue
		}
		if p.merging[target] {
			p.errorf(mm, "<<: a mapping cannot merge itself").Hint = "merge a mapping defined outside this one"
			continue
		}
		p.merging[target] = true
		for _, e := range p.entries(target) {
			if _, dup := seen[e.name]; !dup {
				seen[e.name] = e.key
				out = append(out, e)
			}
		}
		delete(p.merging, target)
	}
	if len(maps) == 0 {
		p.errorf(m, "<<: want a mapping to merge, got %s", kindName(src)).Hint = "merge an anchored mapping: <<: *defaults"
	}
	return out
}

// key returns a mapping key's text. JSON, and our format, only have string
// keys: `1: x` is refused rather than silently turned into "1".
func (p *parser) key(k *yaml.Node) (string, bool) {
	rk := resolve(k)
	if rk.Kind == yaml.ScalarNode && rk.Tag == "!!str" {
		return rk.Value, true
	}
	e := p.errorf(k, "a key must be a string, not %s", kindName(rk))
	if rk.Kind == yaml.ScalarNode {
		e.Hint = fmt.Sprintf("quote it: %q", rk.Value)
	}
	return "", false
}

// fields reads a mapping of known keys. what names the mapping in messages
// ("a rule", "a step"). Unknown keys are errors with a did-you-mean, since a
// misspelt key silently ignored is a rule that does not do what it says.
func (p *parser) fields(n *yaml.Node, what string, known []string) (map[string]entry, bool) {
	return p.fieldsBut(n, what, known, nil, "")
}

// fieldsBut is fields where each key in refused, which the reader may
// mistake as known here, is refused with why for a hint.
func (p *parser) fieldsBut(n *yaml.Node, what string, known, refused []string, why string) (map[string]entry, bool) {
	m := resolve(n)
	if m.Kind != yaml.MappingNode {
		p.errorf(n, "%s is a mapping of %s, got %s", what, strings.Join(known, ", "), kindName(m))
		return nil, false
	}
	f := map[string]entry{}
	for _, e := range p.entries(m) {
		if slices.Contains(refused, e.name) {
			p.errorf(e.key, "%s: %s does not take it", e.name, what).Hint = why
			continue
		}
		if !slices.Contains(known, e.name) {
			hint := didYouMean(e.name, known)
			if hint == "" {
				hint = what + " takes " + strings.Join(known, ", ")
			}
			p.errorf(e.key, "unknown key %q in %s", e.name, what).Hint = hint
			continue
		}
		f[e.name] = e
	}
	return f, true
}

// wrongType reports that e's value is not what the key takes. When a
// string would do and the value is a scalar YAML typed otherwise (on: 42),
// the fix is quoting.
func (p *parser) wrongType(e entry, want string, quotable bool) *Error {
	v := resolve(e.value)
	if isNull(v) {
		err := p.errorf(e.value, "%s has no value", e.name)
		err.Hint = "it takes " + want
		return err
	}
	err := p.errorf(e.value, "%s: want %s, got %s", e.name, want, kindName(v))
	if quotable && v.Kind == yaml.ScalarNode {
		err.Hint = fmt.Sprintf("quote it: %s: %q", e.name, v.Value)
	}
	return err
}

func (p *parser) str(e entry) (string, bool) {
	if v := resolve(e.value); v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
		return v.Value, true
	}
	p.wrongType(e, "a string", true)
	return "", false
}

// int reads an integer of at least min.
func (p *parser) int(e entry, min int) (int, bool) {
	v := resolve(e.value)
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
		p.wrongType(e, "an integer", false)
		return 0, false
	}
	var i int
	if err := v.Decode(&i); err != nil {
		p.errorf(e.value, "%s: %s is out of range", e.name, v.Value)
		return 0, false
	}
	if i < min {
		p.errorf(e.value, "%s: want at least %d, got %d", e.name, min, i)
		return 0, false
	}
	return i, true
}

// float reads a number from lo to hi (an integer is taken too); hint says
// what the setting does, for an error.
func (p *parser) float(e entry, lo, hi float64, hint string) (float64, bool) {
	v := resolve(e.value)
	var f float64
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" && v.Tag != "!!float" || v.Decode(&f) != nil {
		p.wrongType(e, "a number", false).Hint = hint
		return 0, false
	}
	if f < lo || f > hi || f != f {
		p.errorf(e.value, "%s: want a number from %g to %g, got %s", e.name, lo, hi, v.Value).Hint = hint
		return 0, false
	}
	return f, true
}

func (p *parser) bool(e entry) (bool, bool) {
	var b bool
	v := resolve(e.value)
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&b) != nil {
		p.wrongType(e, "true or false", false)
		return false, false
	}
	return b, true
}

const durationHint = `Go syntax, e.g. "250ms", "5m", "1h30m"`

// duration reads a positive duration in Go syntax. A bare number is
// refused: "after: 5" could be seconds or minutes, and a rule that waits
// the wrong one fires at the wrong time.
func (p *parser) duration(e entry) (time.Duration, bool) {
	return p.durationZero(e, "leave "+e.name+" out for none")
}

// durationZero is duration with zeroHint for a duration of 0 or less:
// for a key whose absence is not "none" (a default applies).
func (p *parser) durationZero(e entry, zeroHint string) (time.Duration, bool) {
	d, ok := p.signedDuration(e, "5m")
	if ok && d <= 0 {
		p.errorf(e.value, "%s: want a duration above 0, got %s", e.name, resolve(e.value).Value).Hint = zeroHint
		return 0, false
	}
	return d, ok
}

// signedDuration reads a duration with its unit, which may be negative
// or zero (a sun schedule's offset: -30m is half an hour before); like
// is an example for the message of a value that is no duration.
func (p *parser) signedDuration(e entry, like string) (time.Duration, bool) {
	v := resolve(e.value)
	if v.Kind == yaml.ScalarNode && (v.Tag == "!!int" || v.Tag == "!!float") {
		p.errorf(e.value, "%s: %s has no unit", e.name, v.Value).Hint = fmt.Sprintf("give one: %s: %ss (%s)", e.name, v.Value, durationHint)
		return 0, false
	}
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		p.wrongType(e, "a duration such as "+like, false)
		return 0, false
	}
	d, err := time.ParseDuration(v.Value)
	if err != nil {
		p.errorf(e.value, "%s: %q is not a duration", e.name, v.Value).Hint = durationHint
		return 0, false
	}
	return d, true
}

// enum reads one of names and returns its index.
func (p *parser) enum(e entry, names []string) (int, bool) {
	s, ok := p.str(e)
	if !ok {
		return 0, false
	}
	for i, n := range names {
		if s == n {
			return i, true
		}
	}
	p.errorf(e.value, "%s: %q is not one of %s", e.name, s, strings.Join(names, ", ")).Hint = didYouMean(s, names)
	return 0, false
}

// stringList reads a string or a list of them: the forms on, cancel-on and
// match take. Each item comes back with its node, for positions.
func (p *parser) stringList(e entry, want string) []entry {
	v := resolve(e.value)
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!str":
		return []entry{e}
	case v.Kind != yaml.SequenceNode:
		p.wrongType(e, want, true)
		return nil
	case len(v.Content) == 0:
		p.errorf(e.value, "%s is an empty list", e.name).Hint = "it takes " + want
		return nil
	}
	var out []entry
	for _, item := range v.Content {
		ie := entry{e.name, e.key, item}
		if _, ok := p.str(ie); ok {
			out = append(out, ie)
		}
	}
	return out
}
