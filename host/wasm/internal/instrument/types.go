package instrument

import "fmt"

// Value type bytes of the supported proposals (MVP, SIMD, reference types).
const (
	typeI32       = 0x7f
	typeI64       = 0x7e
	typeF32       = 0x7d
	typeF64       = 0x7c
	typeV128      = 0x7b
	typeFuncref   = 0x70
	typeExternref = 0x6f
	blockEmpty    = 0x40
)

func isValType(c byte) bool {
	switch c {
	case typeI32, typeI64, typeF32, typeF64, typeV128, typeFuncref, typeExternref:
		return true
	}
	return false
}

func isRefType(c byte) bool { return c == typeFuncref || c == typeExternref }

func (r *reader) valType() error {
	at := r.pos
	c, err := r.byte()
	if err != nil {
		return err
	}
	if !isValType(c) {
		return errAt(at, "unknown value type 0x%02x", c)
	}
	return nil
}

func (r *reader) refType() error {
	at := r.pos
	c, err := r.byte()
	if err != nil {
		return err
	}
	if !isRefType(c) {
		return errAt(at, "unknown reference type 0x%02x", c)
	}
	return nil
}

// Limits flags: bit 0 a maximum follows, bit 1 shared, bit 2 64-bit indices.
const (
	limitsHasMax = 0x01
	limitsShared = 0x02
	limits64     = 0x04
)

type limits struct {
	flags    byte
	min, max uint64
}

func (r *reader) limits() (limits, error) {
	var l limits
	at := r.pos
	var err error
	if l.flags, err = r.byte(); err != nil {
		return l, err
	}
	if l.flags > limitsHasMax|limitsShared|limits64 {
		return l, errAt(at, "unknown limits flags 0x%02x", l.flags)
	}
	read := func() (uint64, error) {
		if l.flags&limits64 != 0 {
			return r.u64()
		}
		v, err := r.u32()
		return uint64(v), err
	}
	if l.min, err = read(); err != nil {
		return l, err
	}
	if l.flags&limitsHasMax != 0 {
		l.max, err = read()
	}
	return l, err
}

// Import and export kinds.
const (
	kindFunc   = 0x00
	kindTable  = 0x01
	kindMemory = 0x02
	kindGlobal = 0x03
	kindTag    = 0x04
)

// imports counts the imported entities whose index spaces the rewrite
// depends on: imported functions come before defined ones (for error
// messages), imported globals before defined ones (for the fuel index), and
// an imported memory is refused.
type imports struct {
	funcs, globals, memories uint32
}

func countImports(r reader) (imports, error) {
	var im imports
	n, err := r.u32()
	if err != nil {
		return im, err
	}
	for i := uint32(0); i < n; i++ {
		if err := im.add(&r); err != nil {
			return im, fmt.Errorf("import %d: %w", i, err)
		}
	}
	if !r.done() {
		return im, errAt(r.pos, "unexpected bytes after the last import")
	}
	return im, nil
}

func (im *imports) add(r *reader) error {
	for range 2 { // module and field names
		if _, err := r.name(); err != nil {
			return err
		}
	}
	at := r.pos
	kind, err := r.byte()
	if err != nil {
		return err
	}
	switch kind {
	case kindFunc:
		im.funcs++
		_, err = r.u32()
	case kindTable:
		if err = r.refType(); err == nil {
			_, err = r.limits()
		}
	case kindMemory:
		im.memories++
		_, err = r.limits()
	case kindGlobal:
		im.globals++
		err = r.globalType()
	case kindTag:
		if _, err = r.byte(); err == nil {
			_, err = r.u32()
		}
	default:
		err = errAt(at, "unknown import kind 0x%02x", kind)
	}
	return err
}

func (r *reader) globalType() error {
	if err := r.valType(); err != nil {
		return err
	}
	at := r.pos
	mut, err := r.byte()
	if err == nil && mut > 1 {
		err = errAt(at, "unknown global mutability 0x%02x", mut)
	}
	return err
}
