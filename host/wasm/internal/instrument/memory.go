package instrument

import "fmt"

// maxPages is the most 64 KiB pages a 32-bit memory can have (4 GiB).
const maxPages = 65536

// memory is the module's memory after capping, and its re-encoded section
// (nil when the section is kept as it is).
type memory struct {
	min, max uint32
	payload  []byte
}

// capMemory checks that the module defines exactly one memory, and lowers its
// declared maximum to capPages (0 = no cap). The host owns the memory it
// caps, so an imported memory is refused, and so are shared memories (their
// maximum is fixed and they imply threads the host does not run) and 64-bit
// memories.
func capMemory(b []byte, s *section, im imports, capPages uint32) (memory, error) {
	var m memory
	var defined uint32
	var r reader
	if s != nil {
		r = s.reader(b)
		var err error
		if defined, err = r.u32(); err != nil {
			return m, fmt.Errorf("memory section: %w", err)
		}
	}
	if im.memories != 0 || defined != 1 {
		return m, fmt.Errorf("module must define exactly one memory (it imports %d and defines %d)", im.memories, defined)
	}
	l, err := readMemoryLimits(&r)
	if err != nil {
		return m, fmt.Errorf("memory section: %w", err)
	}
	m.min, m.max = uint32(l.min), maxPages
	if l.flags&limitsHasMax != 0 {
		m.max = uint32(l.max)
	}
	if capPages == 0 {
		return m, nil
	}
	if m.min > capPages {
		return m, fmt.Errorf("module needs %d pages of memory at start, over the cap of %d pages", m.min, capPages)
	}
	m.max = min(m.max, capPages)
	m.payload = appendU32([]byte{1, limitsHasMax}, m.min)
	m.payload = appendU32(m.payload, m.max)
	return m, nil
}

// readMemoryLimits reads the only memory's limits and checks them against the
// 32-bit address space, so that the capped maximum is always meaningful.
func readMemoryLimits(r *reader) (limits, error) {
	at := r.pos
	l, err := r.limits()
	switch {
	case err != nil:
		return l, err
	case l.flags&limitsShared != 0:
		return l, errAt(at, "shared memory is not supported")
	case l.flags&limits64 != 0:
		return l, errAt(at, "64-bit memory is not supported")
	case l.min > maxPages:
		return l, errAt(at, "memory minimum of %d pages is over the limit of %d", l.min, maxPages)
	case l.flags&limitsHasMax != 0 && l.max > maxPages:
		return l, errAt(at, "memory maximum of %d pages is over the limit of %d", l.max, maxPages)
	case l.flags&limitsHasMax != 0 && l.min > l.max:
		return l, errAt(at, "memory minimum of %d pages is over its maximum of %d", l.min, l.max)
	case !r.done():
		return l, errAt(r.pos, "unexpected bytes after the memory")
	}
	return l, nil
}
