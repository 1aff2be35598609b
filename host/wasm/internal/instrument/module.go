package instrument

import (
	"bytes"
	"fmt"
	"strings"
)

// Section ids of the core binary format.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

var sectionNames = [...]string{
	"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "data count", "tag",
}

// sectionRank is the position at which each known section must appear: ids
// are not in order (data count and tag were added later).
var sectionRank = [...]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5,
	secTag: 6, secGlobal: 7, secExport: 8, secStart: 9, secElement: 10,
	secDataCount: 11, secCode: 12, secData: 13,
}

var magic = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// section locates one section in the original module.
type section struct {
	id      byte
	name    string // custom sections only
	start   int    // offset of the id byte
	payload int    // offset of the payload
	data    int    // custom sections: offset after the name
	end     int
}

func (s *section) reader(b []byte) reader { return reader{b: b, pos: s.payload, end: s.end} }

// vector reads a vector section's count and returns it with the bytes of
// its entries and a reader at the first entry. A nil section (absent from
// the module) is an empty vector.
func (s *section) vector(b []byte) (n uint32, entries []byte, r reader, err error) {
	if s == nil {
		return 0, nil, reader{}, nil
	}
	r = s.reader(b)
	if n, err = r.u32(); err != nil {
		return 0, nil, r, err
	}
	return n, b[r.pos:s.end], r, nil
}

// sections are a module's sections in order.
type sections []section

// find returns the known section id, or nil; there is at most one.
func (secs sections) find(id byte) *section {
	for i := range secs {
		if secs[i].id == id && id != secCustom {
			return &secs[i]
		}
	}
	return nil
}

// splitSections checks the header and locates every section, refusing unknown
// ids, duplicates and misordered sections so that the fuel global and its
// export can be inserted at a well-defined place.
func splitSections(b []byte) (sections, error) {
	if len(b) < 4 || !bytes.Equal(b[:4], magic[:4]) {
		return nil, fmt.Errorf("not a wasm binary (bad magic number)")
	}
	if len(b) < 8 || !bytes.Equal(b[4:8], magic[4:]) {
		return nil, fmt.Errorf("unsupported wasm binary version (want 1)")
	}
	r := reader{b: b, pos: len(magic), end: len(b)}
	var secs sections
	lastRank := 0
	for !r.done() {
		s, err := nextSection(&r)
		if err != nil {
			return nil, err
		}
		if s.id != secCustom {
			rank := sectionRank[s.id]
			if rank <= lastRank {
				return nil, errAt(s.start, "%s section out of order or repeated", sectionNames[s.id])
			}
			lastRank = rank
		}
		secs = append(secs, s)
	}
	return secs, nil
}

func nextSection(r *reader) (section, error) {
	s := section{start: r.pos}
	id, err := r.byte()
	if err != nil {
		return s, err
	}
	if int(id) >= len(sectionNames) {
		return s, errAt(s.start, "unknown section id %d", id)
	}
	s.id = id
	size, err := r.u32()
	if err != nil {
		return s, fmt.Errorf("%s section: %w", sectionNames[id], err)
	}
	body, err := r.sub(size)
	if err != nil {
		return s, errAt(s.start, "%s section of %d bytes runs past the end of the module", sectionNames[id], size)
	}
	s.payload, s.end = body.pos, body.end
	if id == secCustom {
		if s.name, err = body.name(); err != nil {
			return s, fmt.Errorf("custom section: name: %w", err)
		}
		s.data = body.pos
	}
	return s, nil
}

// isDebug reports whether s is DWARF, whose code offsets the inserted checks
// invalidate; debuggers would show wrong lines, so it is dropped.
func (s *section) isDebug() bool {
	return s.id == secCustom && strings.HasPrefix(s.name, ".debug_")
}

// assemble writes the module back: sections in replace get their new payload
// (a nil one drops the section),
// sections in add are inserted before the first section ranked after them,
// DWARF is dropped and everything else is copied byte for byte.
func assemble(b []byte, secs sections, replace, add map[byte][]byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/8+64)
	out = append(out, magic...)
	for _, s := range secs {
		if s.id != secCustom {
			out = flushAdded(out, add, sectionRank[s.id])
		}
		switch p, ok := replace[s.id]; {
		case s.isDebug():
		case ok && s.id != secCustom && p == nil: // dropped
		case ok && s.id != secCustom:
			out = appendSection(out, s.id, p)
		default:
			out = append(out, b[s.start:s.end]...)
		}
	}
	return flushAdded(out, add, len(sectionNames)+1)
}

// flushAdded appends, in rank order, the added sections ranked before limit,
// and removes them from add.
func flushAdded(out []byte, add map[byte][]byte, limit int) []byte {
	for len(add) > 0 {
		best := -1
		for id := range add {
			if sectionRank[id] < limit && (best < 0 || sectionRank[id] < sectionRank[best]) {
				best = int(id)
			}
		}
		if best < 0 {
			return out
		}
		out = appendSection(out, byte(best), add[byte(best)])
		delete(add, byte(best))
	}
	return out
}

func appendSection(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(payload)))
	return append(out, payload...)
}
