package instrument

import "fmt"

// reader decodes a WebAssembly binary. It keeps the whole module and
// absolute offsets so that every error can point at the offending byte; end
// bounds the section or function body being read.
type reader struct {
	b   []byte
	pos int
	end int
}

// offsetError is a decoding error at an absolute module offset.
type offsetError struct {
	msg string
	off int
}

func (e *offsetError) Error() string { return fmt.Sprintf("%s at offset %#x", e.msg, e.off) }

func errAt(off int, format string, args ...any) error {
	return &offsetError{msg: fmt.Sprintf(format, args...), off: off}
}

func (r *reader) done() bool { return r.pos >= r.end }

func (r *reader) eof() error { return errAt(r.pos, "unexpected end of data") }

func (r *reader) byte() (byte, error) {
	if r.pos >= r.end {
		return 0, r.eof()
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *reader) peek() (byte, error) {
	if r.pos >= r.end {
		return 0, r.eof()
	}
	return r.b[r.pos], nil
}

// skip advances over n bytes.
func (r *reader) skip(n uint64) error {
	if n > uint64(r.end-r.pos) {
		return errAt(r.pos, "%d bytes expected, %d left", n, r.end-r.pos)
	}
	r.pos += int(n)
	return nil
}

// sub returns a reader over the next n bytes and advances r past them.
func (r *reader) sub(n uint32) (reader, error) {
	start := r.pos
	if err := r.skip(uint64(n)); err != nil {
		return reader{}, err
	}
	return reader{b: r.b, pos: start, end: r.pos}, nil
}

// name reads a length-prefixed byte string.
func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	start := r.pos
	if err := r.skip(uint64(n)); err != nil {
		return "", err
	}
	return string(r.b[start:r.pos]), nil
}

func (r *reader) u32() (uint32, error) {
	v, err := r.uleb(32)
	return uint32(v), err
}

func (r *reader) u64() (uint64, error) { return r.uleb(64) }

func (r *reader) s32() (int64, error) { return r.sleb(32) }

func (r *reader) s33() (int64, error) { return r.sleb(33) }

func (r *reader) s64() (int64, error) { return r.sleb(64) }

// uleb decodes an unsigned LEB128 of at most bits bits, as the spec demands:
// at most ceil(bits/7) bytes, and the unused bits of the last byte zero.
func (r *reader) uleb(bits uint) (uint64, error) {
	start := r.pos
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, errAt(start, "truncated LEB128 integer")
		}
		last := shift+7 >= bits
		if last && (c&0x80 != 0 || c>>(bits-shift) != 0) {
			return 0, errAt(start, "LEB128 integer too long or too large for %d bits", bits)
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
}

// sleb decodes a signed LEB128 of at most bits bits: at most ceil(bits/7)
// bytes, and the unused bits of the last byte a sign extension.
func (r *reader) sleb(bits uint) (int64, error) {
	start := r.pos
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, errAt(start, "truncated LEB128 integer")
		}
		if shift+7 >= bits {
			// Bits from bits-1-shift (the sign) up to 6 must all be equal.
			unused := int8(c<<1) >> (bits - shift)
			if c&0x80 != 0 || (unused != 0 && unused != -1) {
				return 0, errAt(start, "LEB128 integer too long or too large for %d bits", bits)
			}
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if c&0x40 != 0 && shift+7 < 64 {
				v |= ^uint64(0) << (shift + 7)
			}
			return int64(v), nil
		}
	}
}

// appendU32 appends v as a minimal unsigned LEB128.
func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendS64 appends v as a minimal signed LEB128.
func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
