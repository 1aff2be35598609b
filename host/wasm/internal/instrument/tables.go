package instrument

import "fmt"

// MaxTableEntries bounds a table: its declared maximum is lowered to it
// (table.grow fails past it), and a table that needs more at start is
// refused. wazero keeps a table as a Go slice of 8-byte references outside
// the memory cap: one table.grow of 2^27 entries took 1 GiB of the host's
// heap in one instruction, which neither fuel nor the stop flag can
// interrupt. A Go module's function table holds its functions (thousands).
const MaxTableEntries = 1 << 20

// capTables returns the table section with every table's maximum at most
// MaxTableEntries, or nil when none needed lowering. A table whose minimum
// is over it is refused.
func capTables(b []byte, s *section) ([]byte, error) {
	if s == nil {
		return nil, nil
	}
	r := s.reader(b)
	n, err := r.u32()
	if err != nil {
		return nil, fmt.Errorf("table section: %w", err)
	}
	out := appendU32(make([]byte, 0, s.end-s.payload+8), n)
	changed := false
	for i := uint32(0); i < n; i++ {
		at := r.pos
		c, err := r.peek()
		if err != nil {
			return nil, fmt.Errorf("table section: %w", err)
		}
		if !isRefType(c) {
			return nil, errAt(at, "table section: table %d: unsupported table type 0x%02x", i, c)
		}
		r.pos++
		l, err := r.limits()
		if err != nil {
			return nil, fmt.Errorf("table section: table %d: %w", i, err)
		}
		if l.flags&(limitsShared|limits64) != 0 {
			return nil, errAt(at, "table section: table %d: shared or 64-bit tables are not supported", i)
		}
		if l.min > MaxTableEntries {
			return nil, errAt(at, "table section: table %d needs %d entries at start, over the cap of %d", i, l.min, MaxTableEntries)
		}
		max := uint64(MaxTableEntries)
		if l.flags&limitsHasMax != 0 && l.max < max {
			max = l.max
		} else {
			changed = true
		}
		out = append(out, c, limitsHasMax)
		out = appendU32(out, uint32(l.min))
		out = appendU32(out, uint32(max))
	}
	if !r.done() {
		return nil, errAt(r.pos, "table section: unexpected bytes after the last table")
	}
	if !changed {
		return nil, nil
	}
	return out, nil
}
