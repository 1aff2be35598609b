package seq

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeFast decodes a record as its writer writes it (json.Marshal of
// Pending: known keys, plain strings, whole numbers) into p, and reports
// whether it could. Anything else — an escape in a string, an unknown or
// differently cased key, a null, a fraction — is left to json.Unmarshal:
// the fast path never decides what a record means, it only skips
// reflection for the records this ruled wrote. A restart reads every
// record once, and json.Unmarshal took 10 µs a record: a second for
// 100,000 parked runs (issue 38). FuzzDecodeFast holds it to
// json.Unmarshal's answer.
func decodeFast(b []byte, p *Pending) bool {
	d := fastDecoder{b: b}
	if !d.byte('{') {
		return false
	}
	if d.byte('}') {
		return d.end()
	}
	for {
		key, ok := d.str()
		if !ok || !d.byte(':') {
			return false
		}
		d.space()
		switch string(key) {
		case "v":
			ok = d.int(&p.Version)
		case "id":
			ok = d.string(&p.ID)
		case "rule":
			ok = d.string(&p.Rule)
		case "source":
			ok = d.string(&p.Source)
		case "step-name":
			ok = d.string(&p.Step)
		case "step":
			ok = d.int(&p.StepIndex)
		case "iter":
			ok = d.int(&p.Iter)
		case "attempt":
			ok = d.int(&p.Attempt)
		case "fire-at":
			ok = d.int64(&p.FireAt)
		case "written-at":
			ok = d.int64(&p.WrittenAt)
		case "remaining-ms":
			ok = d.int64(&p.Remaining)
		case "fingerprint":
			ok = d.string(&p.Fingerprint)
		case "digest":
			ok = d.string(&p.Digest)
		case "key":
			ok = d.string(&p.Key)
		case "event-id":
			ok = d.string(&p.EventID)
		case "event-time":
			ok = d.int64(&p.EventTime)
		case "event":
			ok = d.raw(&p.Event)
		case "hops":
			ok = d.int(&p.Hops)
		case "started":
			ok = d.int64(&p.Started)
		case "parent":
			ok = d.string(&p.Parent)
		case "node":
			ok = d.int(&p.Node)
		case "delay-node":
			ok = d.int(&p.DelayNode)
		case "debounce":
			ok = d.int64(&p.Debounce)
		case "finally":
			ok = d.string(&p.Finally)
		case "steps":
			ok = d.raw(&p.Steps)
		case "vars":
			ok = d.raw(&p.Vars)
		default:
			return false
		}
		if !ok {
			return false
		}
		if d.byte('}') {
			return d.end()
		}
		if !d.byte(',') {
			return false
		}
	}
}

// fastDecoder reads b from i.
type fastDecoder struct {
	b []byte
	i int
}

func (d *fastDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// byte takes c after any space.
func (d *fastDecoder) byte(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end is whether only space is left.
func (d *fastDecoder) end() bool {
	d.space()
	return d.i == len(d.b)
}

// str is a string without escapes or control characters, in valid UTF-8
// (json.Unmarshal would replace what is not), as b's own bytes.
func (d *fastDecoder) str() ([]byte, bool) {
	if !d.byte('"') {
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

func (d *fastDecoder) string(to *string) bool {
	s, ok := d.str()
	if ok {
		*to = string(s)
	}
	return ok
}

// int64 is a whole number as JSON writes it: no fraction, no exponent, no
// leading zero.
func (d *fastDecoder) int64(to *int64) bool {
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

func (d *fastDecoder) int(to *int) bool {
	var v int64
	if !d.int64(&v) || int64(int(v)) != v {
		return false
	}
	*to = int(v)
	return true
}

// raw is an object or an array, copied as written once it is valid
// JSON: its end is found by its brackets (strings skipped), and
// json.Valid checks what lies between.
func (d *fastDecoder) raw(to *json.RawMessage) bool {
	if d.i >= len(d.b) || d.b[d.i] != '{' && d.b[d.i] != '[' {
		return false
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
				if !json.Valid(v) {
					return false
				}
				*to = append(json.RawMessage(nil), v...)
				return true
			}
		case '"':
			for d.i++; d.i < len(d.b) && d.b[d.i] != '"'; d.i++ {
				if d.b[d.i] == '\\' {
					d.i++
				}
			}
		}
	}
	return false
}
