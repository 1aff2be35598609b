package abi

import (
	"encoding/binary"
	"errors"
)

// HTTPRequest is what a guest hands ImportHTTPRequest: one outbound HTTP
// request. Header holds name/value pairs in order; a name may repeat.
//
// Encoding (little-endian), so that a guest builds it without JSON:
//
//	u32 len, method   ("GET", "POST", …; empty is GET)
//	u32 len, url      (absolute http:// or https://)
//	u32 n, then n × (u32 len, name, u32 len, value)
//	u32 len, body
type HTTPRequest struct {
	Method string
	URL    string
	Header [][2]string
	Body   []byte
}

// HTTPResponse is what ImportHTTPResponse copies out after a request:
//
//	u32 status
//	u32 n, then n × (u32 len, name, u32 len, value)
//	body: the rest
type HTTPResponse struct {
	Status int
	Header [][2]string
	Body   []byte
}

// ErrBadHTTP is an HTTP request or response that does not decode.
var ErrBadHTTP = errors.New("abi: malformed http request or response")

// AppendHTTPRequest appends r's encoding to dst.
func AppendHTTPRequest(dst []byte, r *HTTPRequest) []byte {
	dst = appendBytes32(dst, r.Method)
	dst = appendBytes32(dst, r.URL)
	dst = appendHeader(dst, r.Header)
	return appendBytes32(dst, string(r.Body))
}

// ParseHTTPRequest decodes a request. Its Body is a view into b.
func ParseHTTPRequest(b []byte) (HTTPRequest, error) {
	var r HTTPRequest
	m, b, ok := cut32(b)
	u, b, ok2 := cut32(b)
	if !ok || !ok2 {
		return r, ErrBadHTTP
	}
	r.Method, r.URL = string(m), string(u)
	h, b, ok := parseHeader(b)
	if !ok {
		return r, ErrBadHTTP
	}
	r.Header = h
	body, rest, ok := cut32(b)
	if !ok || len(rest) != 0 {
		return r, ErrBadHTTP
	}
	r.Body = body
	return r, nil
}

// AppendHTTPResponse appends r's encoding to dst.
func AppendHTTPResponse(dst []byte, r *HTTPResponse) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(r.Status))
	dst = appendHeader(dst, r.Header)
	return append(dst, r.Body...)
}

// ParseHTTPResponse decodes a response. Its Body is a view into b.
func ParseHTTPResponse(b []byte) (HTTPResponse, error) {
	var r HTTPResponse
	if len(b) < 4 {
		return r, ErrBadHTTP
	}
	r.Status = int(binary.LittleEndian.Uint32(b))
	h, body, ok := parseHeader(b[4:])
	if !ok {
		return r, ErrBadHTTP
	}
	r.Header, r.Body = h, body
	return r, nil
}

func appendBytes32(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

func appendHeader(dst []byte, h [][2]string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(h)))
	for _, kv := range h {
		dst = appendBytes32(dst, kv[0])
		dst = appendBytes32(dst, kv[1])
	}
	return dst
}

func cut32(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}

// parseHeader reads a header list. Each pair takes at least 8 bytes, so a
// count larger than the input can hold is refused before anything is
// allocated for it.
func parseHeader(b []byte) ([][2]string, []byte, bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if uint64(n)*8 > uint64(len(b)) {
		return nil, nil, false
	}
	var h [][2]string
	if n > 0 {
		h = make([][2]string, 0, n)
	}
	for range n {
		k, rest, ok := cut32(b)
		if !ok {
			return nil, nil, false
		}
		v, rest, ok := cut32(rest)
		if !ok {
			return nil, nil, false
		}
		h = append(h, [2]string{string(k), string(v)})
		b = rest
	}
	return h, b, true
}
