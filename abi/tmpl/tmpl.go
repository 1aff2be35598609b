package tmpl

import (
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ruled-dev/ruled/abi"
)

// Source is where placeholders are looked up: an event.
type Source interface {
	Find(path string) (abi.Value, bool)
	Decode(path string) (any, bool)
}

type segment struct {
	lit  string
	path string
	// typed places the value as JSON (a payload field that is exactly one
	// placeholder keeps the value's type); otherwise its text is spliced
	// into a string.
	typed  bool
	quoted bool // text goes inside a JSON string, so it is escaped
	hole   bool
}

// Template is a compiled template.
type Template struct {
	segs []segment
}

// Text compiles a text template such as "battery {{battery}}% on {{vehicle}}".
func Text(s string) (*Template, error) {
	t := &Template{}
	return t, t.text(s, false)
}

// JSON compiles a JSON value (as Decode gives it) into a template that
// renders JSON: a string that is exactly "{{path}}" becomes the value at path
// with its type; placeholders inside longer strings splice in text.
func JSON(v any) (*Template, error) {
	t := &Template{}
	return t, t.json(v)
}

func (t *Template) lit(s string) {
	if n := len(t.segs); n > 0 && !t.segs[n-1].hole {
		t.segs[n-1].lit += s
		return
	}
	t.segs = append(t.segs, segment{lit: s})
}

func (t *Template) text(s string, quoted bool) error {
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			t.lit(escape(s, quoted))
			return nil
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return errors.New("unclosed {{ in " + strconv.Quote(s))
		}
		t.lit(escape(s[:i], quoted))
		t.segs = append(t.segs, segment{path: strings.TrimSpace(s[i+2 : i+j]), quoted: quoted, hole: true})
		s = s[i+j+2:]
	}
}

func escape(s string, quoted bool) string {
	if !quoted {
		return s
	}
	q := abi.AppendJSONString(nil, s)
	return string(q[1 : len(q)-1])
}

func (t *Template) json(v any) error {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.lit("{")
		for i, k := range keys {
			if i > 0 {
				t.lit(",")
			}
			t.lit(string(abi.AppendJSONString(nil, k)) + ":")
			if err := t.json(x[k]); err != nil {
				return err
			}
		}
		t.lit("}")
	case []any:
		t.lit("[")
		for i, e := range x {
			if i > 0 {
				t.lit(",")
			}
			if err := t.json(e); err != nil {
				return err
			}
		}
		t.lit("]")
	case string:
		if strings.HasPrefix(x, "{{") && strings.HasSuffix(x, "}}") && strings.Count(x, "{{") == 1 {
			t.segs = append(t.segs, segment{path: strings.TrimSpace(x[2 : len(x)-2]), typed: true, hole: true})
			return nil
		}
		t.lit(`"`)
		if err := t.text(x, true); err != nil {
			return err
		}
		t.lit(`"`)
	default:
		t.lit(string(AppendJSON(nil, x)))
	}
	return nil
}

// Render appends the template filled from src to dst. A placeholder whose
// path the event lacks renders as null (typed) or as nothing (in text).
func (t *Template) Render(dst []byte, src Source) []byte {
	dst, _ = t.render(dst, src, -1)
	return dst
}

// RenderAtMost is Render that stops once what it appended passes limit
// bytes, and reports whether it did not: a template that names a large
// field many times is bounded by limit plus one field, not by the field
// times the names (a 200 KB event made a 40 MB variable).
func (t *Template) RenderAtMost(dst []byte, src Source, limit int) ([]byte, bool) {
	return t.render(dst, src, limit)
}

func (t *Template) render(dst []byte, src Source, limit int) ([]byte, bool) {
	start := len(dst)
	for _, s := range t.segs {
		if limit >= 0 && len(dst)-start > limit {
			return dst, false
		}
		if !s.hole {
			dst = append(dst, s.lit...)
			continue
		}
		v, ok := src.Find(s.path)
		switch {
		case s.typed && !ok:
			dst = append(dst, "null"...)
		case s.typed:
			dst = appendValue(dst, src, s.path, v)
		case !ok:
		case v.Kind() == abi.ValueString:
			b, _ := v.Str()
			if s.quoted {
				q := abi.AppendJSONString(nil, string(b))
				dst = append(dst, q[1:len(q)-1]...)
			} else {
				dst = append(dst, b...)
			}
		default:
			text := appendValue(nil, src, s.path, v)
			if s.quoted {
				q := abi.AppendJSONString(nil, string(text))
				text = q[1 : len(q)-1]
			}
			dst = append(dst, text...)
		}
	}
	return dst, limit < 0 || len(dst)-start <= limit
}

// String renders into a new string.
func (t *Template) String(src Source) string { return string(t.Render(nil, src)) }

func appendValue(dst []byte, src Source, path string, v abi.Value) []byte {
	switch v.Kind() {
	case abi.ValueString:
		b, _ := v.Str()
		return abi.AppendJSONString(dst, string(b))
	case abi.ValueInt:
		n, _ := v.Int()
		return strconv.AppendInt(dst, n, 10)
	case abi.ValueFloat:
		f, _ := v.Float()
		return AppendJSON(dst, f)
	case abi.ValueBool:
		b, _ := v.Bool()
		return strconv.AppendBool(dst, b)
	case abi.ValueObject, abi.ValueArray:
		x, _ := src.Decode(path)
		return AppendJSON(dst, x)
	}
	return append(dst, "null"...)
}

// AppendJSON encodes a value as Decode gives them, without encoding/json
// (which would add reflection to every plugin that renders). Map keys are
// sorted so output is stable.
func AppendJSON(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return append(dst, "null"...)
		}
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.AppendFloat(dst, x, 'f', -1, 64)
		}
		return strconv.AppendFloat(dst, x, 'g', -1, 64)
	case string:
		return abi.AppendJSONString(dst, x)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSON(dst, e)
		}
		return append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = abi.AppendJSONString(dst, k)
			dst = append(dst, ':')
			dst = AppendJSON(dst, x[k])
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}
