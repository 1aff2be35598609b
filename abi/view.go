package abi

import (
	"encoding/binary"
	"errors"
	"math"
)

// A View is a JSON document flattened into a table a guest can search
// without parsing or allocating. The host builds one per event (AppendJSONView)
// and per step config, and writes its bytes into guest memory.
//
// Layout (little-endian, offsets from the start of the view):
//
//	0   "RV"           magic
//	2   u8             format version (ViewFormat)
//	3   u8             flags (ViewFlagRaw: a raw JSON section is present)
//	4   u32            entry count N
//	8   u32, u32       offset and length of the raw JSON (0, 0 when absent)
//	16  N × 16 bytes   entries, sorted by path bytes
//	...                pool: path bytes, string bytes, raw JSON
//
// An entry is:
//
//	0   u32  path offset
//	4   u16  path length
//	6   u8   Kind of the value
//	7   u8   reserved, 0
//	8   u64  value: Int as int64; Float as float64 bits; Bool 0 or 1;
//	         String as length<<32 | offset; Object and Array as member count
//
// Every value in the document has an entry, containers included, and the root
// has the empty path. A member's path is its parent's path, a dot, and its key
// (or its decimal index in an array); the root's members have no leading dot.
// Keys are escaped as in JSON Pointer, with '.' for '/': '~' is written
// "~0", '.' "~1", and the empty key "~2", so every dot in a path separates
// and no member collides with the root (see PathKey).
// {"data":{"value":1},"tags":["a"]} has the paths "", "data", "data.value",
// "tags", "tags.0".
type View struct {
	b []byte
	n int
}

// ValueKind is the JSON type of a view entry.
type ValueKind uint8

const (
	ValueNull   ValueKind = 1
	ValueBool   ValueKind = 2
	ValueInt    ValueKind = 3 // a number written without fraction or exponent that fits int64
	ValueFloat  ValueKind = 4 // every other number
	ValueString ValueKind = 5
	ValueObject ValueKind = 6
	ValueArray  ValueKind = 7
)

var valueKindNames = [...]string{"", "null", "bool", "int", "float", "string", "object", "array"}

// String names the kind as JSON would ("int" and "float" are both numbers).
func (k ValueKind) String() string {
	if int(k) < len(valueKindNames) && k != 0 {
		return valueKindNames[k]
	}
	return "kind " + itoa(int(k))
}

const (
	// ViewFormat is the version byte of the layout above.
	ViewFormat = 1
	// ViewFlagRaw marks a view that carries the JSON it was built from.
	ViewFlagRaw = 1

	viewHeader = 16
	viewEntry  = 16
)

// ErrBadView is returned for bytes that are not a well-formed view.
var ErrBadView = errors.New("abi: malformed view")

// ParseView checks b's header and entry table and returns a View over it. It
// does not copy: the View reads b until the caller reuses it. Offsets inside
// entries are checked when a lookup reads them, so a corrupt entry costs that
// lookup, never a panic.
func ParseView(b []byte) (View, error) {
	if len(b) < viewHeader || b[0] != 'R' || b[1] != 'V' || b[2] != ViewFormat {
		return View{}, ErrBadView
	}
	n := binary.LittleEndian.Uint32(b[4:])
	if uint64(n)*viewEntry > uint64(len(b)-viewHeader) {
		return View{}, ErrBadView
	}
	return View{b: b, n: int(n)}, nil
}

// Len is the number of entries.
func (v View) Len() int { return v.n }

// Bytes returns the view's encoding.
func (v View) Bytes() []byte { return v.b }

// Raw returns the JSON the view was built from, when the view carries it.
func (v View) Raw() ([]byte, bool) {
	if len(v.b) < viewHeader || v.b[3]&ViewFlagRaw == 0 {
		return nil, false
	}
	return v.span(binary.LittleEndian.Uint32(v.b[8:]), binary.LittleEndian.Uint32(v.b[12:]))
}

func (v View) span(off, n uint32) ([]byte, bool) {
	end := uint64(off) + uint64(n)
	if end > uint64(len(v.b)) {
		return nil, false
	}
	return v.b[off:end], true
}

// Entry i, 0 <= i < Len, in path order.
func (v View) Entry(i int) Value {
	e := v.b[viewHeader+i*viewEntry:]
	return Value{v: v, k: ValueKind(e[6]), x: binary.LittleEndian.Uint64(e[8:]),
		po: binary.LittleEndian.Uint32(e[0:]), pn: uint32(binary.LittleEndian.Uint16(e[4:]))}
}

// Find returns the entry whose path is path. It is a binary search over the
// sorted entries and allocates nothing.
func (v View) Find(path string) (Value, bool) {
	lo, hi := 0, v.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		e := v.b[viewHeader+m*viewEntry:]
		p, ok := v.span(binary.LittleEndian.Uint32(e[0:]), uint32(binary.LittleEndian.Uint16(e[4:])))
		if !ok {
			return Value{}, false
		}
		switch s := string(p); {
		case s == path:
			return v.Entry(m), true
		case s < path:
			lo = m + 1
		default:
			hi = m
		}
	}
	return Value{}, false
}

// Value is one entry of a View. The zero Value has Kind 0 and answers every
// accessor with false.
type Value struct {
	v      View
	k      ValueKind
	x      uint64
	po, pn uint32
}

// Kind is the entry's JSON type, 0 for the zero Value.
func (x Value) Kind() ValueKind { return x.k }

// Path is the entry's path, a view into the view's bytes.
func (x Value) Path() []byte {
	p, _ := x.v.span(x.po, x.pn)
	return p
}

// Bool answers a bool entry.
func (x Value) Bool() (bool, bool) { return x.x != 0, x.k == ValueBool }

// Int answers an int entry, and a float entry that holds a whole number in
// int64's range.
func (x Value) Int() (int64, bool) {
	switch x.k {
	case ValueInt:
		return int64(x.x), true
	case ValueFloat:
		f := math.Float64frombits(x.x)
		if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
			return int64(f), true
		}
	}
	return 0, false
}

// Float answers any number entry.
func (x Value) Float() (float64, bool) {
	switch x.k {
	case ValueInt:
		return float64(int64(x.x)), true
	case ValueFloat:
		return math.Float64frombits(x.x), true
	}
	return 0, false
}

// Str answers a string entry with a view of its decoded bytes. The bytes
// belong to the View: copy them to keep them past its lifetime.
func (x Value) Str() ([]byte, bool) {
	if x.k != ValueString {
		return nil, false
	}
	return x.v.span(uint32(x.x), uint32(x.x>>32))
}

// Count answers an object's member count or an array's length.
func (x Value) Count() (int, bool) {
	if x.k != ValueObject && x.k != ValueArray {
		return 0, false
	}
	return int(uint32(x.x)), true
}
