package abi

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// Decode returns the value at path as plain Go values: map[string]any,
// []any, string, int64, float64, bool or nil, as encoding/json would give
// them but with whole numbers as int64. It allocates, and it exists for the
// code that needs a whole subtree (an expression language's environment, a
// template); conditions reading a field or two should use Find.
func (v View) Decode(path string) (any, bool) {
	x, ok := v.Find(path)
	if !ok {
		return nil, false
	}
	budget := v.n
	return v.decode(x, &budget, 0), true
}

// decode converts x. budget counts the entries it may still visit and depth
// bounds recursion, so a corrupt view (the host's views are sound, but a
// guest reader must not trust that) costs at most one pass, not a hang.
func (v View) decode(x Value, budget *int, depth int) any {
	*budget--
	if *budget < 0 || depth > 256 {
		return nil
	}
	switch x.k {
	case ValueNull:
		return nil
	case ValueBool:
		return x.x != 0
	case ValueInt:
		return int64(x.x)
	case ValueFloat:
		return math.Float64frombits(x.x)
	case ValueString:
		s, _ := x.Str()
		return string(s)
	case ValueObject:
		m := make(map[string]any, min(int(uint32(x.x)), *budget+1))
		v.children(x, func(key []byte, c Value) {
			m[unescapeKey(key)] = v.decode(c, budget, depth+1)
		})
		return m
	case ValueArray:
		n := int(uint32(x.x))
		if n > v.n {
			n = 0 // a count no view of this size can hold
		}
		a := make([]any, n)
		v.children(x, func(key []byte, c Value) {
			if i, err := strconv.Atoi(string(key)); err == nil && i >= 0 && i < n {
				a[i] = v.decode(c, budget, depth+1)
			}
		})
		return a
	}
	return nil
}

// MembersWhile calls fn for each direct member of the container x (an
// entry of v), in path order, with its key as written in the path
// (escaped, see PathKey), until fn returns false. It skips each member's
// descendants by a binary search, so it costs the member count times
// log n, however deep the members are; it allocates nothing.
func (v View) MembersWhile(x Value, fn func(key []byte, c Value) bool) {
	prefix := x.Path()
	if len(prefix) > 0 {
		prefix = append(prefix[:len(prefix):len(prefix)], '.')
	}
	for i := v.lowerBound(prefix); i < v.n; {
		c := v.Entry(i)
		p := c.Path()
		if !bytes.HasPrefix(p, prefix) {
			return
		}
		key := p[len(prefix):]
		if len(key) == 0 || segmentEnd(key) != len(key) {
			i++
			continue
		}
		if !fn(key, c) {
			return
		}
		// '/' sorts right after '.': the first path past key's descendants.
		i = v.lowerBound(append(p[:len(p):len(p)], '/'))
	}
}

// children calls fn for each direct member of the container x, with its key
// as written in the path (escaped). Every descendant of "p" has a path
// starting "p.", and sorted paths keep those in one run, which is what makes
// this a scan rather than a search per member.
func (v View) children(x Value, fn func(key []byte, c Value)) {
	prefix := x.Path()
	if len(prefix) > 0 {
		prefix = append(prefix[:len(prefix):len(prefix)], '.')
	}
	for i := v.lowerBound(prefix); i < v.n && v.n > 0; i++ {
		c := v.Entry(i)
		p := c.Path()
		if !bytes.HasPrefix(p, prefix) {
			break
		}
		key := p[len(prefix):]
		if len(key) > 0 && segmentEnd(key) == len(key) {
			fn(key, c)
		}
	}
}

// lowerBound returns the index of the first entry whose path is >= p.
func (v View) lowerBound(p []byte) int {
	lo, hi := 0, v.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(v.Entry(m).Path(), p) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// segmentEnd returns the index of the first dot in p, or len(p). Dots
// inside keys are escaped as "~1", so every dot separates.
func segmentEnd(p []byte) int {
	if i := bytes.IndexByte(p, '.'); i >= 0 {
		return i
	}
	return len(p)
}

func unescapeKey(k []byte) string {
	if string(k) == "~2" {
		return "" // the empty key
	}
	if bytes.IndexByte(k, '~') < 0 {
		return string(k)
	}
	out := make([]byte, 0, len(k))
	for i := 0; i < len(k); i++ {
		if k[i] == '~' && i+1 < len(k) {
			switch k[i+1] {
			case '0':
				out = append(out, '~')
				i++
				continue
			case '1':
				out = append(out, '.')
				i++
				continue
			}
		}
		out = append(out, k[i])
	}
	return string(out)
}

// PathKey escapes a key for use in a path, as JSON Pointer does: '~' is
// written "~0" and '.' "~1" (the key "a.b" is the path segment "a~1b"), and
// the empty key is "~2".
func PathKey(key string) string {
	if key == "" {
		return "~2"
	}
	if !strings.ContainsAny(key, ".~") {
		return key
	}
	r := strings.NewReplacer("~", "~0", ".", "~1")
	return r.Replace(key)
}
