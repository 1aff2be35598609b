package abi

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ViewBuilder turns JSON into a View. It keeps its scratch space between
// builds, so a host that builds one view per event allocates nothing once it
// has warmed up.
//
// A ViewBuilder is NOT safe for concurrent use; give each goroutine its own.
type ViewBuilder struct {
	// MaxDepth bounds nesting; deeper documents are refused rather than
	// recursed into. default: 64.
	MaxDepth int

	ents  []viewEnt
	paths []byte
	strs  []byte
	cur   []byte
	js    []byte
	pos   int
	depth int
}

type viewEnt struct {
	po, pn uint32 // into paths
	k      ValueKind
	x      uint64 // strings: len<<32 | offset into strs
}

// SyntaxError reports JSON that does not parse, with the byte offset where
// parsing stopped.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return "abi: json: " + e.Msg + " at offset " + strconv.Itoa(e.Offset)
}

// AppendJSONView is a convenience for a one-off build with a fresh builder.
func AppendJSONView(dst, js []byte, withRaw bool) ([]byte, error) {
	var b ViewBuilder
	return b.Append(dst, js, withRaw)
}

// Append parses js, a single JSON value, and appends its view to dst. With
// withRaw the view also carries js itself (see View.Raw).
//
// Duplicate keys in an object are refused: a rule that reads a field must
// see one value, not whichever the parser kept.
func (b *ViewBuilder) Append(dst, js []byte, withRaw bool) ([]byte, error) {
	if b.MaxDepth <= 0 {
		b.MaxDepth = 64
	}
	b.ents, b.paths, b.strs, b.cur = b.ents[:0], b.paths[:0], b.strs[:0], b.cur[:0]
	b.js, b.pos, b.depth = js, 0, 0
	defer func() { b.js = nil }()

	b.ws()
	if err := b.value(); err != nil {
		return dst, err
	}
	b.ws()
	if b.pos != len(js) {
		return dst, b.errf("unexpected data after the value")
	}
	slices.SortFunc(b.ents, func(x, y viewEnt) int {
		return bytes.Compare(b.paths[x.po:x.po+x.pn], b.paths[y.po:y.po+y.pn])
	})
	for i := 1; i < len(b.ents); i++ {
		x, y := b.ents[i-1], b.ents[i]
		if bytes.Equal(b.paths[x.po:x.po+x.pn], b.paths[y.po:y.po+y.pn]) {
			return dst, &SyntaxError{Offset: len(js), Msg: "duplicate key " + strconv.Quote(string(b.paths[y.po:y.po+y.pn]))}
		}
	}

	base := len(dst)
	n := len(b.ents)
	pathOff := viewHeader + n*viewEntry
	strOff := pathOff + len(b.paths)
	rawOff := strOff + len(b.strs)
	total := rawOff
	if withRaw {
		total += len(js)
	}
	if uint64(total) > math.MaxUint32 {
		return dst, &SyntaxError{Offset: len(js), Msg: "document too large"}
	}
	dst = slices.Grow(dst, total)[:base+total]
	v := dst[base:]
	v[0], v[1], v[2], v[3] = 'R', 'V', ViewFormat, 0
	binary.LittleEndian.PutUint32(v[4:], uint32(n))
	binary.LittleEndian.PutUint64(v[8:], 0)
	if withRaw {
		v[3] = ViewFlagRaw
		binary.LittleEndian.PutUint32(v[8:], uint32(rawOff))
		binary.LittleEndian.PutUint32(v[12:], uint32(len(js)))
		copy(v[rawOff:], js)
	}
	for i, e := range b.ents {
		w := v[viewHeader+i*viewEntry:]
		binary.LittleEndian.PutUint32(w[0:], uint32(pathOff)+e.po)
		binary.LittleEndian.PutUint16(w[4:], uint16(e.pn))
		w[6], w[7] = byte(e.k), 0
		x := e.x
		if e.k == ValueString {
			x += uint64(strOff)
		}
		binary.LittleEndian.PutUint64(w[8:], x)
	}
	copy(v[pathOff:], b.paths)
	copy(v[strOff:], b.strs)
	return dst, nil
}

func (b *ViewBuilder) errf(msg string) error { return &SyntaxError{Offset: b.pos, Msg: msg} }

func (b *ViewBuilder) ws() {
	for b.pos < len(b.js) {
		switch b.js[b.pos] {
		case ' ', '\t', '\n', '\r':
			b.pos++
		default:
			return
		}
	}
}

// add records an entry for the value at the current path and returns its index.
func (b *ViewBuilder) add(k ValueKind, x uint64) (int, error) {
	if len(b.cur) > math.MaxUint16 {
		return 0, b.errf("path too long")
	}
	po := len(b.paths)
	b.paths = append(b.paths, b.cur...)
	b.ents = append(b.ents, viewEnt{po: uint32(po), pn: uint32(len(b.cur)), k: k, x: x})
	return len(b.ents) - 1, nil
}

func (b *ViewBuilder) value() error {
	if b.pos >= len(b.js) {
		return b.errf("unexpected end of input")
	}
	switch c := b.js[b.pos]; {
	case c == '{':
		return b.object()
	case c == '[':
		return b.array()
	case c == '"':
		b.pos++
		so := len(b.strs)
		var err error
		if b.strs, err = b.str(b.strs); err != nil {
			return err
		}
		_, err = b.add(ValueString, uint64(len(b.strs)-so)<<32|uint64(so))
		return err
	case c == 't':
		return b.lit("true", ValueBool, 1)
	case c == 'f':
		return b.lit("false", ValueBool, 0)
	case c == 'n':
		return b.lit("null", ValueNull, 0)
	case c == '-' || (c >= '0' && c <= '9'):
		return b.number()
	}
	return b.errf("invalid character " + strconv.QuoteRune(rune(b.js[b.pos])))
}

func (b *ViewBuilder) lit(word string, k ValueKind, x uint64) error {
	if len(b.js)-b.pos < len(word) || string(b.js[b.pos:b.pos+len(word)]) != word {
		return b.errf("invalid literal")
	}
	b.pos += len(word)
	_, err := b.add(k, x)
	return err
}

func (b *ViewBuilder) number() error {
	start := b.pos
	js := b.js
	i := b.pos
	if js[i] == '-' {
		i++
	}
	digits := func() int {
		s := i
		for i < len(js) && js[i] >= '0' && js[i] <= '9' {
			i++
		}
		return i - s
	}
	if i < len(js) && js[i] == '0' {
		i++
	} else if digits() == 0 {
		b.pos = i
		return b.errf("invalid number")
	}
	integer := true
	if i < len(js) && js[i] == '.' {
		i++
		integer = false
		if digits() == 0 {
			b.pos = i
			return b.errf("invalid number")
		}
	}
	if i < len(js) && (js[i] == 'e' || js[i] == 'E') {
		i++
		integer = false
		if i < len(js) && (js[i] == '+' || js[i] == '-') {
			i++
		}
		if digits() == 0 {
			b.pos = i
			return b.errf("invalid number")
		}
	}
	b.pos = i
	lit := js[start:i]
	if integer {
		if n, ok := parseInt(lit); ok {
			_, err := b.add(ValueInt, uint64(n))
			return err
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil && !isRangeErr(err) {
		b.pos = start
		return b.errf("invalid number")
	}
	_, err = b.add(ValueFloat, math.Float64bits(f))
	return err
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// parseInt parses a JSON integer literal, reporting false on overflow.
func parseInt(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var u uint64
	for _, c := range b {
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

func (b *ViewBuilder) enter() error {
	b.depth++
	if b.depth > b.MaxDepth {
		return b.errf("nesting deeper than " + strconv.Itoa(b.MaxDepth))
	}
	return nil
}

func (b *ViewBuilder) object() error {
	if err := b.enter(); err != nil {
		return err
	}
	idx, err := b.add(ValueObject, 0)
	if err != nil {
		return err
	}
	b.pos++ // {
	parent := len(b.cur)
	count := 0
	b.ws()
	if b.pos < len(b.js) && b.js[b.pos] == '}' {
		b.pos++
		b.depth--
		return nil
	}
	for {
		b.ws()
		if b.pos >= len(b.js) || b.js[b.pos] != '"' {
			return b.errf("expected a string key")
		}
		b.pos++
		if parent > 0 {
			b.cur = append(b.cur, '.')
		}
		if b.cur, err = b.key(b.cur); err != nil {
			return err
		}
		b.ws()
		if b.pos >= len(b.js) || b.js[b.pos] != ':' {
			return b.errf("expected ':'")
		}
		b.pos++
		b.ws()
		if err := b.value(); err != nil {
			return err
		}
		b.cur = b.cur[:parent]
		count++
		b.ws()
		if b.pos >= len(b.js) {
			return b.errf("unexpected end of input")
		}
		if b.js[b.pos] == ',' {
			b.pos++
			continue
		}
		if b.js[b.pos] == '}' {
			b.pos++
			break
		}
		return b.errf("expected ',' or '}'")
	}
	b.ents[idx].x = uint64(count)
	b.depth--
	return nil
}

func (b *ViewBuilder) array() error {
	if err := b.enter(); err != nil {
		return err
	}
	idx, err := b.add(ValueArray, 0)
	if err != nil {
		return err
	}
	b.pos++ // [
	parent := len(b.cur)
	count := 0
	b.ws()
	if b.pos < len(b.js) && b.js[b.pos] == ']' {
		b.pos++
		b.depth--
		return nil
	}
	for {
		b.ws()
		if parent > 0 {
			b.cur = append(b.cur, '.')
		}
		b.cur = strconv.AppendInt(b.cur, int64(count), 10)
		if err := b.value(); err != nil {
			return err
		}
		b.cur = b.cur[:parent]
		count++
		b.ws()
		if b.pos >= len(b.js) {
			return b.errf("unexpected end of input")
		}
		if b.js[b.pos] == ',' {
			b.pos++
			continue
		}
		if b.js[b.pos] == ']' {
			b.pos++
			break
		}
		return b.errf("expected ',' or ']'")
	}
	b.ents[idx].x = uint64(count)
	b.depth--
	return nil
}

// key decodes an object key (after its opening quote) onto dst, escaping it
// for a path: '~' as "~0", '.' as "~1", and the empty key as "~2".
func (b *ViewBuilder) key(dst []byte) ([]byte, error) {
	start := len(dst)
	dst, err := b.str(dst)
	if err != nil {
		return dst, err
	}
	if len(dst) == start {
		return append(dst, '~', '2'), nil // the empty key
	}
	if bytes.IndexByte(dst[start:], '.') < 0 && bytes.IndexByte(dst[start:], '~') < 0 {
		return dst, nil
	}
	k := append([]byte(nil), dst[start:]...)
	dst = dst[:start]
	for _, c := range k {
		switch c {
		case '~':
			dst = append(dst, '~', '0')
		case '.':
			dst = append(dst, '~', '1')
		default:
			dst = append(dst, c)
		}
	}
	return dst, nil
}

// str decodes a JSON string body (after its opening quote) onto dst. Invalid
// UTF-8 becomes U+FFFD, as encoding/json does.
func (b *ViewBuilder) str(dst []byte) ([]byte, error) {
	js := b.js
	for {
		// Fast path: a run of plain ASCII.
		s := b.pos
		for b.pos < len(js) {
			c := js[b.pos]
			if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
			b.pos++
		}
		dst = append(dst, js[s:b.pos]...)
		if b.pos >= len(js) {
			return dst, b.errf("unterminated string")
		}
		switch c := js[b.pos]; {
		case c == '"':
			b.pos++
			return dst, nil
		case c < 0x20:
			return dst, b.errf("control character in string")
		case c == '\\':
			b.pos++
			if b.pos >= len(js) {
				return dst, b.errf("unterminated string")
			}
			e := js[b.pos]
			b.pos++
			switch e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := b.hex4()
				if !ok {
					return dst, b.errf("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if b.pos+1 < len(js) && js[b.pos] == '\\' && js[b.pos+1] == 'u' {
						save := b.pos
						b.pos += 2
						if lo, ok := b.hex4(); ok {
							if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
								r2 = d
							} else {
								b.pos = save
							}
						} else {
							return dst, b.errf("invalid \\u escape")
						}
					}
					r = r2
				}
				dst = utf8.AppendRune(dst, r)
			default:
				return dst, b.errf("invalid escape")
			}
		default: // multi-byte UTF-8
			r, size := utf8.DecodeRune(js[b.pos:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, js[b.pos:b.pos+size]...)
			}
			b.pos += size
		}
	}
}

func (b *ViewBuilder) hex4() (rune, bool) {
	if len(b.js)-b.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b.js[b.pos : b.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	b.pos += 4
	return r, true
}
