package instrument

import "fmt"

// rewriteCode returns the code section with check inserted at the entry of
// every function body and after the block type of every loop. Bodies are
// numbered from 0 in errors, functions from the first defined index, which
// follows the imported functions.
func rewriteCode(r reader, im imports, declared uint32, check, grow []byte) ([]byte, int, error) {
	n, err := r.u32()
	if err != nil {
		return nil, 0, err
	}
	if n != declared {
		return nil, 0, fmt.Errorf("%d function bodies but the function section declares %d functions", n, declared)
	}
	out := appendU32(make([]byte, 0, (r.end-r.pos)*9/8+64), n)
	var body []byte
	for i := uint32(0); i < n; i++ {
		body, err = rewriteBody(body[:0], &r, check, grow)
		if err != nil {
			return nil, 0, fmt.Errorf("function %d (body %d): %w", uint64(im.funcs)+uint64(i), i, err)
		}
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if !r.done() {
		return nil, 0, errAt(r.pos, "unexpected bytes after the last function body")
	}
	return out, int(n), nil
}

// rewriteBody appends to dst the next body of r, without its size, with the
// checks inserted, and grow after every memory.grow. Neither changes branch
// depths: the only block a check opens is closed within it, and grow leaves
// the stack as it found it.
func rewriteBody(dst []byte, code *reader, check, grow []byte) ([]byte, error) {
	size, err := code.u32()
	if err != nil {
		return dst, err
	}
	r, err := code.sub(size)
	if err != nil {
		return dst, err
	}
	start := r.pos
	if err := r.locals(); err != nil {
		return dst, err
	}
	dst = append(dst, r.b[start:r.pos]...)
	dst = append(dst, check...)
	copied := r.pos
	for depth := 1; depth > 0; {
		if r.done() {
			return dst, errAt(r.pos, "function body ends before its final end")
		}
		op, err := r.instruction()
		if err != nil {
			return dst, err
		}
		switch op {
		case opLoop:
			dst = append(dst, r.b[copied:r.pos]...)
			dst = append(dst, check...)
			copied = r.pos
			depth++
		case opMemoryGrow:
			dst = append(dst, r.b[copied:r.pos]...)
			dst = append(dst, grow...)
			copied = r.pos
		case opBlock, opIf:
			depth++
		case opEnd:
			depth--
		}
	}
	if !r.done() {
		return dst, errAt(r.pos, "code after the function's final end")
	}
	return append(dst, r.b[copied:r.pos]...), nil
}

// locals skips the local declarations, which must precede any instruction,
// and bounds their number (see maxLocals).
func (r *reader) locals() error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	var sum uint64
	for i := uint32(0); i < n; i++ {
		at := r.pos
		k, err := r.u32()
		if err != nil {
			return err
		}
		if sum += uint64(k); sum > maxLocals {
			return errAt(at, "more than %d locals", maxLocals)
		}
		if err := r.valType(); err != nil {
			return err
		}
	}
	return nil
}

// instruction decodes one instruction and returns its first byte. Every
// immediate is decoded exactly: a byte that looks like loop (0x03) may be
// an index, a constant or a lane.
func (r *reader) instruction() (byte, error) {
	at := r.pos
	op, err := r.byte()
	if err != nil {
		return 0, err
	}
	k := oneByte[op]
	if k == immPrefix {
		sub, err := r.u32()
		if err != nil {
			return 0, err
		}
		if k = prefixedImm(op, sub); k == immInvalid {
			return 0, errAt(at, "unknown opcode 0x%02x 0x%02x", op, sub)
		}
	}
	if k == immInvalid {
		return 0, errAt(at, "unknown opcode 0x%02x", op)
	}
	return op, r.immediates(k)
}

func (r *reader) immediates(k imm) error {
	var err error
	switch k {
	case immBlockType:
		err = r.blockType()
	case immU32:
		_, err = r.u32()
	case immU32x2:
		if _, err = r.u32(); err == nil {
			_, err = r.u32()
		}
	case immBrTable:
		err = r.brTable()
	case immMemarg:
		err = r.memarg()
	case immMemargLane:
		if err = r.memarg(); err == nil {
			_, err = r.byte()
		}
	case immI32:
		_, err = r.s32()
	case immI64:
		_, err = r.s64()
	case immSelectT:
		err = r.selectTypes()
	case immHeapType:
		err = r.refType()
	case immZeroByte:
		err = r.zeroByte()
	case immF32:
		err = r.skip(4)
	case immF64:
		err = r.skip(8)
	case immLane:
		err = r.skip(1)
	case immV128:
		err = r.skip(16)
	}
	return err
}

// blockType reads 0x40 (no result), a single value type, or a non-negative
// s33 type index (multi-value).
func (r *reader) blockType() error {
	c, err := r.peek()
	if err != nil {
		return err
	}
	if c == blockEmpty || isValType(c) {
		r.pos++
		return nil
	}
	at := r.pos
	idx, err := r.s33()
	if err == nil && idx < 0 {
		err = errAt(at, "unknown block type 0x%02x", c)
	}
	return err
}

func (r *reader) brTable() error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	for i := uint64(0); i <= uint64(n) && err == nil; i++ { // n labels and the default
		_, err = r.u32()
	}
	return err
}

// memarg reads align and offset; align bit 6 announces a memory index
// (multi-memory), read so the walk stays in step.
func (r *reader) memarg() error {
	align, err := r.u32()
	if err == nil && align&0x40 != 0 {
		_, err = r.u32()
	}
	if err == nil {
		_, err = r.u32()
	}
	return err
}

func (r *reader) selectTypes() error {
	n, err := r.u32()
	for i := uint32(0); i < n && err == nil; i++ {
		err = r.valType()
	}
	return err
}

func (r *reader) zeroByte() error {
	at := r.pos
	c, err := r.byte()
	if err == nil && c != 0 {
		err = errAt(at, "expected 0x00, got 0x%02x", c)
	}
	return err
}
