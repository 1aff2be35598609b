package rules

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ruled-dev/ruled/abi"
)

// with reads a with: mapping into canonical JSON: keys sorted, no space,
// YAML integers as integers, floats with a point or exponent so a plugin
// still sees a float, strings, booleans and null as themselves. Canonical,
// so equal configs are equal bytes and a step's fingerprint changes only
// when its config does. A missing or empty with: is {}.
//
// What JSON cannot hold is refused where it is written: non-string keys,
// NaN and infinities, binary, application tags. Aliases and merges are
// expanded; an alias inside the value it names is refused.
func (p *parser) with(e entry) ([]byte, bool) {
	v := resolve(e.value)
	if isNull(v) {
		return []byte("{}"), true
	}
	if v.Kind != yaml.MappingNode {
		p.wrongType(e, "a mapping of config keys", false)
		return nil, false
	}
	// p.bad is the rule's flag; borrow it to learn whether this value
	// had a problem.
	bad := p.bad
	p.bad = false
	out := p.appendJSON(nil, e.value)
	ok := !p.bad
	p.bad = bad || p.bad
	return out, ok
}

func (p *parser) appendJSON(dst []byte, n *yaml.Node) []byte {
	if !p.spend(n) {
		return dst
	}
	v := resolve(n)
	if p.open[v] {
		p.errorf(n, "alias *%s is inside the value it names", n.Value).Hint = "a config must be finite: refer to an anchor outside this value"
		return append(dst, "null"...)
	}
	switch v.Kind {
	case yaml.MappingNode:
		p.open[v] = true
		defer delete(p.open, v)
		ents := p.entries(v)
		slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.name, b.name) })
		dst = append(dst, '{')
		for i, e := range ents {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = abi.AppendJSONString(dst, e.name)
			dst = append(dst, ':')
			dst = p.appendJSON(dst, e.value)
		}
		return append(dst, '}')
	case yaml.SequenceNode:
		p.open[v] = true
		defer delete(p.open, v)
		dst = append(dst, '[')
		for i, item := range v.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = p.appendJSON(dst, item)
		}
		return append(dst, ']')
	}
	start := len(dst)
	dst = p.appendScalar(dst, n, v)
	p.spendN(n, (len(dst)-start)/textPerValue)
	return dst
}

// appendScalar writes a scalar; n is where it is written (an alias, or v).
func (p *parser) appendScalar(dst []byte, n, v *yaml.Node) []byte {
	switch v.Tag {
	case "!!str", "!!timestamp", "!!merge":
		// A timestamp stays the text it was written as: JSON has no time
		// type and a plugin parses the form it expects.
		return abi.AppendJSONString(dst, v.Value)
	case "!!null":
		return append(dst, "null"...)
	case "!!bool":
		var b bool
		if v.Decode(&b) == nil {
			return strconv.AppendBool(dst, b)
		}
	case "!!int":
		var i int64
		if v.Decode(&i) == nil {
			return strconv.AppendInt(dst, i, 10)
		}
		var u uint64
		if v.Decode(&u) == nil {
			return strconv.AppendUint(dst, u, 10)
		}
		p.errorf(n, "%s does not fit in 64 bits", v.Value).Hint = "quote it to pass it as a string"
		return append(dst, "null"...)
	case "!!float":
		var f float64
		if v.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return appendFloat(dst, f)
		}
		p.errorf(n, "%s is not a finite number", v.Value).Hint = "JSON numbers are finite; quote it to pass it as a string"
		return append(dst, "null"...)
	case "!!binary":
		p.errorf(n, "binary data has no JSON form").Hint = "drop the !!binary tag to pass the base64 text as a string"
		return append(dst, "null"...)
	}
	p.errorf(n, "a value tagged %s has no JSON form", v.Tag).Hint = "remove the tag"
	return append(dst, "null"...)
}

// appendFloat writes f as encoding/json would, but always with a point or
// an exponent: 1.0 stays a float for the plugin, it does not become 1.
func appendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'f' && !slices.Contains(dst[start:], '.') {
		dst = append(dst, ".0"...)
	}
	return dst
}
