package traceparent

import "encoding/hex"

// Header is the HTTP header's name, and the MQTT user property's.
const Header = "traceparent"

// Len is a version 00 traceparent's length, the form ruled keeps.
const Len = 55

// MaxLen bounds what Parse reads: a later version may add fields after
// the four; a value longer than this is no traceparent ruled follows.
const MaxLen = 512

// Context is a parsed traceparent: the trace, the span a child goes
// under, and the flags (bit 0: sampled).
type Context struct {
	Trace [16]byte
	Span  [8]byte
	Flags byte
}

// Sampled reports the sampled flag.
func (c Context) Sampled() bool { return c.Flags&1 == 1 }

// Parse reads s as the W3C recommendation says: version 00 is exactly
// 55 bytes; a later version (not ff) is read as 00 when its first 55
// bytes are one and a '-' follows them; lower-case hex only; a trace or
// span id of zeros is none. False: s is not a traceparent, and a
// receiver goes on as if there were none.
func Parse(s string) (Context, bool) {
	var c Context
	if len(s) < Len || len(s) > MaxLen || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return c, false
	}
	var v [1]byte
	if !lowerHex(v[:], s[0:2]) || v[0] == 0xff || v[0] == 0 && len(s) != Len || v[0] != 0 && len(s) > Len && s[Len] != '-' {
		return c, false
	}
	var f [1]byte
	if !lowerHex(c.Trace[:], s[3:35]) || !lowerHex(c.Span[:], s[36:52]) || !lowerHex(f[:], s[53:55]) {
		return c, false
	}
	if c.Trace == ([16]byte{}) || c.Span == ([8]byte{}) {
		return c, false
	}
	c.Flags = f[0]
	return c, true
}

// lowerHex decodes s into dst, refusing upper-case digits (the
// recommendation's grammar is lower case).
func lowerHex(dst []byte, s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// String is c as version 00, with the sampled flag only (the other bits
// are not defined for 00).
func (c Context) String() string {
	b := make([]byte, 0, Len)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, c.Trace[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, c.Span[:])
	if c.Sampled() {
		return string(append(b, "-01"...))
	}
	return string(append(b, "-00"...))
}

// Canonical is s as ruled keeps and sends it on (String), or "" when s is
// not a traceparent.
func Canonical(s string) string {
	c, ok := Parse(s)
	if !ok {
		return ""
	}
	return c.String()
}
