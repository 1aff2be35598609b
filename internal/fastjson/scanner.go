package fastjson

import (
	"encoding/json"
	"unicode/utf8"
)

// Scanner reads a JSON document from its start. Each read skips the
// space before it and reports false when what it finds is not what it
// reads; the Scanner is then of no further use.
type Scanner struct {
	b []byte
	i int
}

// New is a Scanner of b, which it reads in place: strings and raw values
// it returns are b's own bytes until copied.
func New(b []byte) Scanner { return Scanner{b: b} }

func (d *Scanner) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// Byte takes c after any space.
func (d *Scanner) Byte(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// End reports whether only space is left.
func (d *Scanner) End() bool {
	d.space()
	return d.i == len(d.b)
}

// Object reads an object to its end and then the end of the document,
// calling field with each key (b's own bytes) once its colon is read;
// field reads the value and says whether it could.
func (d *Scanner) Object(field func(key []byte) bool) bool {
	if !d.Byte('{') {
		return false
	}
	if d.Byte('}') {
		return d.End()
	}
	for {
		key, ok := d.Str()
		if !ok || !d.Byte(':') {
			return false
		}
		d.space()
		if !field(key) {
			return false
		}
		if d.Byte('}') {
			return d.End()
		}
		if !d.Byte(',') {
			return false
		}
	}
}

// Str is a string without escapes or control characters, in valid UTF-8
// (json.Unmarshal would replace what is not), as b's own bytes.
func (d *Scanner) Str() ([]byte, bool) {
	if !d.Byte('"') {
		return nil, false
	}
	start, ascii := d.i, true
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// String is Str, copied into to.
func (d *Scanner) String(to *string) bool {
	s, ok := d.Str()
	if ok {
		*to = string(s)
	}
	return ok
}

// Name is String, kept once in names: a string that many documents
// share (a rule's id, a topic) is one allocation, not one a document.
// A nil names is String.
func (d *Scanner) Name(to *string, names map[string]string) bool {
	s, ok := d.Str()
	if !ok {
		return false
	}
	if x, found := names[string(s)]; found {
		*to = x
		return true
	}
	*to = string(s)
	if names != nil {
		names[*to] = *to
	}
	return true
}

// Int64 is a whole number as JSON writes it: no fraction, no exponent, no
// leading zero.
func (d *Scanner) Int64(to *int64) bool {
	d.space()
	neg := d.i < len(d.b) && d.b[d.i] == '-'
	if neg {
		d.i++
	}
	start := d.i
	var v uint64
	for ; d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9'; d.i++ {
		if v > (1<<63)/10 {
			return false
		}
		v = v*10 + uint64(d.b[d.i]-'0')
	}
	switch n := d.i - start; {
	case n == 0, n > 1 && d.b[start] == '0':
		return false
	case d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E'):
		return false
	case neg && v > 1<<63, !neg && v > 1<<63-1:
		return false
	}
	if neg {
		*to = -int64(v)
	} else {
		*to = int64(v)
	}
	return true
}

// Int is Int64 that fits an int.
func (d *Scanner) Int(to *int) bool {
	var v int64
	if !d.Int64(&v) || int64(int(v)) != v {
		return false
	}
	*to = int(v)
	return true
}

// Raw is an object or an array, copied as written once it is valid
// JSON.
func (d *Scanner) Raw(to *json.RawMessage) bool {
	v, ok := d.composite()
	if ok {
		*to = append(json.RawMessage(nil), v...)
	}
	return ok
}

// composite is an object or an array as b's own bytes, once it is valid
// JSON: its end is found by its brackets (strings passed over), and
// json.Valid checks what lies between.
func (d *Scanner) composite() ([]byte, bool) {
	d.space()
	if d.i >= len(d.b) || d.b[d.i] != '{' && d.b[d.i] != '[' {
		return nil, false
	}
	start, depth := d.i, 0
	for ; d.i < len(d.b); d.i++ {
		switch d.b[d.i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				d.i++
				v := d.b[start:d.i]
				return v, json.Valid(v)
			}
		case '"':
			for d.i++; d.i < len(d.b) && d.b[d.i] != '"'; d.i++ {
				if d.b[d.i] == '\\' {
					d.i++
				}
			}
		}
	}
	return nil, false
}

// Skip passes over one value of any kind, valid JSON, whatever it holds:
// a field the caller does not read.
func (d *Scanner) Skip() bool {
	d.space()
	if d.i >= len(d.b) {
		return false
	}
	start := d.i
	switch c := d.b[d.i]; {
	case c == '{' || c == '[':
		_, ok := d.composite()
		return ok
	case c == '"':
		plain := true // no escape and no control character: valid as it is
		for d.i++; d.i < len(d.b) && d.b[d.i] != '"'; d.i++ {
			switch {
			case d.b[d.i] == '\\':
				plain = false
				d.i++
			case d.b[d.i] < 0x20:
				plain = false
			}
		}
		if d.i >= len(d.b) {
			return false
		}
		d.i++
		return plain || json.Valid(d.b[start:d.i])
	default: // a number or a literal: up to what ends a value
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return json.Valid(d.b[start:d.i])
			}
			d.i++
		}
	}
	return json.Valid(d.b[start:d.i])
}
