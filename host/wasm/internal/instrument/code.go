package instrument

import (
	"fmt"
	"math"
)

// rewriteCode returns the code section with every function body metered
// (rewriteBody) and the helper bodies appended. Bodies are numbered from 0
// in errors, functions from the first defined index, which follows the
// imported functions. It returns the number of the module's own bodies.
func rewriteCode(r reader, im imports, declared uint32, m *meter, loop, grow []byte) ([]byte, int, error) {
	n, err := r.u32()
	if err != nil {
		return nil, 0, err
	}
	if n != declared {
		return nil, 0, fmt.Errorf("%d function bodies but the function section declares %d functions", n, declared)
	}
	helpers := [][]byte{m.chargeBody(bytesShift, false), m.chargeBody(pageShift, true), m.chargeBody(entryShift, true), m.checkpointBody()}
	out := appendU32(make([]byte, 0, (r.end-r.pos)*9/8+64), n+uint32(len(helpers)))
	var body []byte
	for i := uint32(0); i < n; i++ {
		t := m.types[m.byFunc[i]]
		body, err = rewriteBody(body[:0], &r, m, t, loop, grow)
		if err != nil {
			return nil, 0, fmt.Errorf("function %d (body %d): %w", uint64(im.funcs)+uint64(i), i, err)
		}
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if !r.done() {
		return nil, 0, errAt(r.pos, "unexpected bytes after the last function body")
	}
	for _, h := range helpers {
		out = appendU32(out, uint32(len(h)))
		out = append(out, h...)
	}
	return out, int(n), nil
}

// rewriteBody appends to dst the next body of r, without its size,
// metered:
//
//	locals
//	entry check (entryUnits + locals/localsPerUnit + its instructions
//	outside loops/instrsPerUnit units), frame pushed
//	block <the function's results>
//	  the original instructions, with a check (one unit and the loop's
//	  own instructions/instrsPerUnit: lengths) after every loop's
//	  block type, a charge before every bulk memory or table instruction
//	  and memory.grow, grow after every memory.grow, and the frame popped
//	  before every return and tail call
//	end
//	frame popped
//	end
//
// None of it changes what a branch means: a check's own if is closed within
// it, the charges and grow leave the stack as they found it, and a branch
// to the function's label, which used to return, now leaves the wrapping
// block at the same relative depth and falls into the epilogue.
func rewriteBody(dst []byte, code *reader, m *meter, t funcType, loop, grow []byte) ([]byte, error) {
	size, err := code.u32()
	if err != nil {
		return dst, err
	}
	r, err := code.sub(size)
	if err != nil {
		return dst, err
	}
	start := r.pos
	nlocals, localSlots, err := r.locals()
	if err != nil {
		return dst, err
	}
	// A function that calls nothing cannot take the stack deeper than its
	// own frame: it is not counted, and needs no wrapping block (most of a
	// guest's small functions; the count costs a dozen instructions a call).
	// A value a slot, or two when the function holds a v128 in a local.
	width := uint64(1)
	if localSlots > nlocals || slotsOf(t.params) > uint64(len(t.params)) {
		width = 2
	}
	leaf, held, err := r.scan(m.maxResultSlots(), width)
	if err != nil {
		return dst, err
	}
	body, loops, err := r.lengths()
	if err != nil {
		return dst, err
	}
	entryCost := entryUnits + nlocals/localsPerUnit + body/instrsPerUnit
	// The values a frame holds across a call are spilled to the stack
	// (a frame holding 1,000 values across a recursive call took 143 MB
	// counted as 5 slots).
	frame := uint32(min(frameSlots(slotsOf(t.params), localSlots)+held, math.MaxInt32))
	counted := m.maxSlots != 0 && !leaf
	var exit []byte
	dst = append(dst, r.b[start:r.pos]...)
	if counted {
		exit = m.exit(frame)
		dst = append(dst, m.entry(entryCost, frame)...)
		dst = append(append(dst, opBlock), m.blockType(t.results)...)
	} else {
		dst = append(dst, m.check(entryCost)...)
	}
	copied := r.pos
	nloop := 0
	for depth := 1; depth > 0; {
		if r.done() {
			return dst, errAt(r.pos, "function body ends before its final end")
		}
		at := r.pos
		op, sub, err := r.instruction()
		if err != nil {
			return dst, err
		}
		// before inserts b ahead of the instruction just read.
		before := func(b []byte) {
			dst = append(dst, r.b[copied:at]...)
			dst = append(dst, b...)
			copied = at
		}
		switch op {
		case opLoop:
			dst = append(dst, r.b[copied:r.pos]...)
			if loop != nil {
				dst = append(dst, loop...)
			} else {
				dst = append(dst, m.check(1+loops[nloop]/instrsPerUnit)...)
			}
			nloop++
			copied = r.pos
			depth++
		case opMemoryGrow:
			before(callFn(m.chargePages))
			dst = append(dst, r.b[copied:r.pos]...)
			dst = append(dst, grow...)
			copied = r.pos
		case opPrefixFC:
			switch sub {
			case fcMemoryInit, fcMemoryCopy, fcMemoryFill:
				before(callFn(m.chargeBytes))
			case fcTableInit, fcTableCopy, fcTableGrow, fcTableFill:
				before(callFn(m.chargeEntries))
			}
		case opReturn, opReturnCall, opReturnCallI:
			if counted {
				before(exit)
			}
		case opBlock, opIf:
			depth++
		case opEnd:
			depth--
		}
	}
	if !r.done() {
		return dst, errAt(r.pos, "code after the function's final end")
	}
	dst = append(dst, r.b[copied:r.pos]...)
	if !counted {
		return dst, nil
	}
	// The original final end closed the wrapping block; the epilogue and a
	// final end of our own follow.
	dst = append(dst, exit...)
	return append(dst, opEnd), nil
}

// scan reports whether the instructions from r's position to the end of
// its body call nothing, and a bound on the slots its operand stack can
// hold: the sum of what each instruction can add to the stack's height,
// net of what it takes off. Validation fixes the height at every point of
// a body, and it is the sum of the nets of the instructions before it
// (a block counting as its results less its parameters, which its own
// instructions made), so no point holds more than the positive nets all
// added up. Only these are above zero:
//
//	local.get                      width (2 when a local is a v128)
//	global.get                     2 (a global may be a v128)
//	a constant, memory.size,
//	table.size, ref.null, ref.func 1
//	call, call_indirect            results, the most of any type of the module
//	any SIMD instruction           2 (v128.const; a load or splat adds 1)
//
// Everything else takes at least as much as it gives (an operator, a
// load, a conversion, select, a store, a branch, an atomic). Counting
// every instruction instead took a Go reactor's start and calls from the
// 9,274 slots they need to 22,022.
//
// It reads a copy of r.
func (r *reader) scan(results, width uint64) (leaf bool, held uint64, err error) {
	c := *r
	leaf = true
	for !c.done() {
		op, sub, err := c.instruction()
		if err != nil {
			return false, 0, err
		}
		switch op {
		case opCall, opCallIndirect:
			leaf = false
			held += results
		case opReturnCall, opReturnCallI:
			leaf = false
		case opLocalGet:
			held += width
		case opGlobalGet, opPrefixSIMD:
			held += 2
		case opI32Const, opI64Const, opF32Const, opF64Const, opMemorySize, opRefNull, opRefFunc:
			held++
		case opPrefixFC:
			if sub == fcTableSize {
				held++
			}
		}
	}
	return leaf, held, nil
}

// lengths counts the instructions a pass runs straight: those of the
// function's body outside any loop (body), and those of each loop's body
// outside the loops within it (loops, in the order the loops open). A
// loop header charges its pass by it, a function entry its call: one
// unit a loop header whatever its body let a loop of thousands of
// instructions and no branch run 2^18 passes between two checkpoints, and
// a 1 s deadline overran by 4.6-16.7 s (issue 38). A block or an if is
// counted whole, both arms: a pass may take either, and charging more
// only stops a guest sooner.
//
// It reads a copy of r.
func (r *reader) lengths() (body uint64, loops []uint64, err error) {
	c := *r
	// open holds, for each open block, the loop it counts into: -1 the
	// function's body.
	open := []int{-1}
	for !c.done() && len(open) > 0 {
		op, _, err := c.instruction()
		if err != nil {
			return 0, nil, err
		}
		in := open[len(open)-1]
		switch op {
		case opLoop:
			loops = append(loops, 0)
			open = append(open, len(loops)-1)
			continue
		case opBlock, opIf:
			open = append(open, in)
		case opEnd:
			open = open[:len(open)-1]
		}
		if in < 0 {
			body++
		} else {
			loops[in]++
		}
	}
	return body, loops, nil
}

func callFn(fn uint32) []byte { return appendU32([]byte{opCall}, fn) }

// locals skips the local declarations, which must precede any instruction,
// and bounds their number (see maxLocals). It returns how many there are,
// and how many 8-byte slots they take (a v128 two).
func (r *reader) locals() (count, slots uint64, err error) {
	n, err := r.u32()
	if err != nil {
		return 0, 0, err
	}
	for i := uint32(0); i < n; i++ {
		at := r.pos
		k, err := r.u32()
		if err != nil {
			return 0, 0, err
		}
		if count += uint64(k); count > maxLocals {
			return 0, 0, errAt(at, "more than %d locals", maxLocals)
		}
		tat := r.pos
		c, err := r.byte()
		if err != nil {
			return 0, 0, err
		}
		if !isValType(c) {
			return 0, 0, errAt(tat, "unknown value type 0x%02x", c)
		}
		slots += uint64(k)
		if c == typeV128 {
			slots += uint64(k)
		}
	}
	return count, slots, nil
}

// instruction decodes one instruction and returns its first byte and, for
// a prefixed one, its sub-opcode. Every immediate is decoded exactly: a
// byte that looks like loop (0x03) may be an index, a constant or a lane.
func (r *reader) instruction() (op byte, sub uint32, err error) {
	at := r.pos
	if op, err = r.byte(); err != nil {
		return 0, 0, err
	}
	k := oneByte[op]
	if k == immPrefix {
		if sub, err = r.u32(); err != nil {
			return 0, 0, err
		}
		if k = prefixedImm(op, sub); k == immInvalid {
			return 0, 0, errAt(at, "unknown opcode 0x%02x 0x%02x", op, sub)
		}
	}
	if k == immInvalid {
		return 0, 0, errAt(at, "unknown opcode 0x%02x", op)
	}
	return op, sub, r.immediates(k)
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
