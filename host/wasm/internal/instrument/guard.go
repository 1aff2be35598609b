package instrument

import "fmt"

// The checks in this file protect the host rather than the rewrite. wazero
// v1.12.0 sizes its slices by the counts a module declares before reading
// the entries (sections, element and data segments, parameter lists, locals,
// name maps, names), so a 64-byte module declaring 2^32 elements makes it ask
// for gigabytes, and the Go runtime dies with a fatal error that recover
// cannot catch. Instrument runs before wazero sees the bytes, so it bounds
// every such count by the bytes that would have to encode the entries, by
// reading the vectors it would otherwise copy blindly. It still leaves
// validation to wazero.

// maxLocals bounds the locals one function declares, as V8 and SpiderMonkey
// do; wazero allocates a byte per local.
const maxLocals = 50000

// checkCounts reads the sections Instrument does not otherwise parse far
// enough to bound their counts.
func checkCounts(b []byte, secs sections) error {
	for i := range secs {
		s := &secs[i]
		r := s.reader(b)
		var err error
		switch s.id {
		case secType:
			err = r.vec(r.funcType)
		case secTable, secGlobal, secTag:
			err = r.plausibleCount()
		case secElement:
			err = r.vec(r.elementSegment)
		case secData:
			err = r.vec(r.dataSegment)
		case secCustom:
			if s.name == "name" {
				r.pos = s.data
				err = r.nameSubsections()
			}
		}
		if err != nil {
			return fmt.Errorf("%s section: %w", sectionNames[s.id], err)
		}
	}
	return nil
}

// vec reads a count and that many items, then expects the end.
func (r *reader) vec(item func() error) error {
	err := r.items(item)
	if err == nil && !r.done() {
		err = errAt(r.pos, "unexpected bytes after the last entry")
	}
	return err
}

// plausibleCount checks that a section's count is no more than its bytes.
func (r *reader) plausibleCount() error {
	at := r.pos
	n, err := r.u32()
	if err == nil && uint64(n) > uint64(r.end-r.pos) {
		err = errAt(at, "%d entries cannot fit in %d bytes", n, r.end-r.pos)
	}
	return err
}

// funcType reads 0x60 vec(valtype) vec(valtype); the GC proposal's other
// type forms are not supported.
func (r *reader) funcType() error {
	at := r.pos
	form, err := r.byte()
	if err == nil && form != 0x60 {
		err = errAt(at, "unsupported type form 0x%02x", form)
	}
	for range 2 {
		if err == nil {
			err = r.valTypes()
		}
	}
	return err
}

func (r *reader) valTypes() error {
	n, err := r.u32()
	for i := uint32(0); i < n && err == nil; i++ {
		err = r.valType()
	}
	return err
}

// elementSegment reads one of the eight element segment encodings.
func (r *reader) elementSegment() error {
	at := r.pos
	flags, err := r.u32()
	if err != nil {
		return err
	}
	if flags > 7 {
		return errAt(at, "unknown element segment flags %d", flags)
	}
	const passiveOrDeclared, explicitTable, exprs = 1, 2, 4
	if flags&passiveOrDeclared == 0 {
		if flags&explicitTable != 0 {
			if _, err := r.u32(); err != nil {
				return err
			}
		}
		if err := r.constExpr(); err != nil {
			return err
		}
	}
	if flags&(passiveOrDeclared|explicitTable) != 0 { // elemkind or reftype
		if flags&exprs != 0 {
			err = r.refType()
		} else {
			_, err = r.byte()
		}
		if err != nil {
			return err
		}
	}
	if flags&exprs != 0 {
		return r.items(r.constExpr)
	}
	return r.items(func() error { _, err := r.u32(); return err })
}

// items reads a count and that many items.
func (r *reader) items(item func() error) error {
	n, err := r.u32()
	for i := uint32(0); i < n && err == nil; i++ {
		err = item()
	}
	return err
}

// dataSegment reads one of the three data segment encodings.
func (r *reader) dataSegment() error {
	at := r.pos
	flags, err := r.u32()
	switch {
	case err != nil:
		return err
	case flags > 2:
		return errAt(at, "unknown data segment flags %d", flags)
	case flags == 2:
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	if flags != 1 {
		if err := r.constExpr(); err != nil {
			return err
		}
	}
	n, err := r.u32()
	if err == nil {
		err = r.skip(uint64(n))
	}
	return err
}

// constExpr reads instructions up to the end that closes the expression.
func (r *reader) constExpr() error {
	for depth := 1; depth > 0; {
		op, _, err := r.instruction()
		if err != nil {
			return err
		}
		switch op {
		case opBlock, opLoop, opIf:
			depth++
		case opEnd:
			depth--
		}
	}
	return nil
}

// nameSubsections reads the name section's module, function and local names,
// which wazero decodes, and skips the others.
func (r *reader) nameSubsections() error {
	for !r.done() {
		id, err := r.byte()
		if err != nil {
			return err
		}
		size, err := r.u32()
		if err != nil {
			return err
		}
		sub, err := r.sub(size)
		if err != nil {
			return err
		}
		naming := func() error {
			if _, err := sub.u32(); err != nil {
				return err
			}
			_, err := sub.name()
			return err
		}
		switch id {
		case 0:
			_, err = sub.name()
		case 1:
			err = sub.items(naming)
		case 2:
			err = sub.items(func() error {
				if _, err := sub.u32(); err != nil {
					return err
				}
				return sub.items(naming)
			})
		default:
			sub.pos = sub.end
		}
		if err == nil && !sub.done() {
			err = errAt(sub.pos, "unexpected bytes at the end of name subsection %d", id)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
