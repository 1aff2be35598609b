package instrument

import (
	"fmt"
	"math"
	"slices"
)

// Metering: what a check charges, and the call stack's bound.
//
// A unit of fuel must stand for about the same time whatever the guest
// does, or the budget that bounds a deadline for one kind of code lets
// another run on for many times as long. One unit a loop iteration and one
// a function entry made a 32 MiB memory.fill a single unit (the fill loop
// never ran out: a 531-byte module froze the daemon once a garbage
// collection waited for it), and a function with 2,000 locals, which zeroes
// them at every entry, cost what an empty one does. So:
//
//   - a loop iteration costs 1 (about a nanosecond compiled here), and
//     its body's instructions outside inner loops / instrsPerUnit;
//   - a function entry costs entryUnits + its locals / localsPerUnit (a
//     call of an empty function measured ~2.4 ns against a loop pass's
//     0.8: see host/wasm's calibration), and its instructions outside
//     loops / instrsPerUnit;
//   - memory.fill, memory.copy and memory.init cost 1 + their length /
//     2^bytesShift, charged before they run (a helper function reads the
//     length from the top of the stack and hands it back);
//   - the table ops (table.init, .copy, .fill, .grow) cost 1 + entries *
//     2^entryShift: an entry is an 8-byte Go value the host allocates or
//     writes, and table.grow allocates (a grow loop measured ~170 ns a
//     unit charged by bytes); tables are capped too (MaxTableEntries);
//   - memory.grow costs 1 + pages * 2^pageShift, before it runs.
//
// The call stack is bounded apart from memory: wazero lets a guest's call
// stack grow to 400 MB, whatever its memory cap. Each function entry adds
// its frame (frameSlots: its parameters and locals and a few words of
// frame) to a slots global and its exits take it back; a call that takes
// it past the bound traps. Exits are the function's end, return, tail
// calls, and branches to the function's own label, which a block wrapped
// around the original body turns into a fall-through to the epilogue. A
// function that calls nothing is not counted (its one frame is the most it
// adds). A trap leaves the count wherever it was: the host resets the
// global before each call, as it does the fuel.
const (
	entryUnits    = 3
	localsPerUnit = 64 // zeroing a local costs ~0.02 ns: 48 locals measured 0.66 ns a unit at 16
	bytesShift    = 4  // 16 bytes a unit
	pageShift     = 10 // 1,024 units a 64 KiB page
	entryShift    = 3  // 8 units a table entry
	// instrsPerUnit: a straight run of instructions, charged where its
	// loop pass or its call begins (reader.lengths). Simple compiled
	// instructions take ~0.1-0.3 ns; eight of them are about a loop
	// pass's unit, and slow ones (a division, ~25 ns) still come to a
	// checkpoint every ~50 ms.
	instrsPerUnit = 8
)

// frameSlots is what one call of a function with the given parameters and
// locals adds to the slots global: one 8-byte slot a value (two for a
// v128), and four for the frame itself (return address, saved registers).
// The rewrite adds the most its operand stack can hold (reader.scan),
// which a call spills to the stack.
func frameSlots(params, locals uint64) uint64 { return 4 + params + locals }

// funcType is a function type's parameter and result types.
type funcType struct {
	params, results []byte
}

// readTypes reads the type section (nil: none). checkCounts has already
// bounded its counts.
func readTypes(b []byte, s *section) ([]funcType, error) {
	if s == nil {
		return nil, nil
	}
	r := s.reader(b)
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	types := make([]funcType, 0, min(n, 1<<16))
	for i := uint32(0); i < n; i++ {
		at := r.pos
		form, err := r.byte()
		if err != nil {
			return nil, err
		}
		if form != 0x60 {
			return nil, errAt(at, "unsupported type form 0x%02x", form)
		}
		var t funcType
		if t.params, err = r.valTypeList(); err == nil {
			t.results, err = r.valTypeList()
		}
		if err != nil {
			return nil, err
		}
		types = append(types, t)
	}
	return types, nil
}

func (r *reader) valTypeList() ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if uint64(n) > uint64(r.end-r.pos) {
		return nil, errAt(r.pos, "%d value types in %d bytes", n, r.end-r.pos)
	}
	out := make([]byte, 0, n)
	for i := uint32(0); i < n; i++ {
		at := r.pos
		c, err := r.byte()
		if err != nil {
			return nil, err
		}
		if !isValType(c) {
			return nil, errAt(at, "unknown value type 0x%02x", c)
		}
		out = append(out, c)
	}
	return out, nil
}

// slotsOf counts 8-byte slots: two for a v128, one for anything else.
func slotsOf(types []byte) uint64 {
	var n uint64
	for _, t := range types {
		n++
		if t == typeV128 {
			n++
		}
	}
	return n
}

// funcTypes returns the type index of every defined function, in order
// (countFunctions checked them against the type section).
func funcTypes(b []byte, fn *section) ([]uint32, error) {
	if fn == nil {
		return nil, nil
	}
	r := fn.reader(b)
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	out := make([]uint32, 0, min(n, 1<<16))
	for i := uint32(0); i < n; i++ {
		t, err := r.u32()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// meter is what the rewrite of one module needs to meter and bound its
// functions: the globals' indices, the charging helpers' function indices,
// the stack bound, and the types it may add (block types for functions with
// several results, and the helpers' (i32) -> i32).
type meter struct {
	fuel, stop, grow, slots, next                       uint32 // global indices
	chargeBytes, chargePages, chargeEntries, checkpoint uint32 // function indices of the helpers
	maxSlots                                            uint32 // 0: no stack bound
	hasMemory                                           bool   // the checkpoint can take the guest through Go

	types   []funcType // the module's, then those added
	ntypes  int        // how many the module had
	byFunc  []uint32   // each defined function's type index
	resultT map[string]uint32
	results uint64 // maxResultSlots, once known; 0: not yet
}

// maxResultSlots is the most slots any function type of the module
// returns: what a call can add to its caller's operand stack. (A call's
// own type would be tighter, but the types of imported functions are not
// kept; modules return one value or none.)
func (m *meter) maxResultSlots() uint64 {
	if m.results == 0 {
		m.results = 1
		for _, t := range m.types[:m.ntypes] {
			m.results = max(m.results, slotsOf(t.results))
		}
	}
	return m.results
}

// blockType returns the block type of a block producing results: empty, a
// value type, or the index of a type [] -> results, added when the module
// has none.
func (m *meter) blockType(results []byte) []byte {
	switch len(results) {
	case 0:
		return []byte{blockEmpty}
	case 1:
		return []byte{results[0]}
	}
	idx, ok := m.resultT[string(results)]
	if !ok {
		for i, t := range m.types {
			if len(t.params) == 0 && slices.Equal(t.results, results) {
				idx, ok = uint32(i), true
				break
			}
		}
		if !ok {
			idx = uint32(len(m.types))
			m.types = append(m.types, funcType{results: results})
		}
		m.resultT[string(results)] = idx
	}
	return appendS64(nil, int64(idx)) // a type index is an s33
}

// i32ToI32 returns the index of a type (i32) -> i32, added when missing.
func (m *meter) i32ToI32() uint32 {
	for i, t := range m.types {
		if slices.Equal(t.params, []byte{typeI32}) && slices.Equal(t.results, []byte{typeI32}) {
			return uint32(i)
		}
	}
	m.types = append(m.types, funcType{params: []byte{typeI32}, results: []byte{typeI32}})
	return uint32(len(m.types) - 1)
}

// entry is what a function with the given locals and frame starts with:
// the fuel check, charging its entry cost, and the frame pushed on the slots
// count.
func (m *meter) entry(cost uint64, frame uint32) []byte {
	b := m.check(cost)
	if m.maxSlots == 0 {
		return b
	}
	//	global.get $slots  i32.const frame  i32.add  global.tee $slots
	//	i32.const max  i32.gt_u  if  unreachable  end
	b = appendU32(append(b, opGlobalGet), m.slots)
	b = appendS64(append(b, opI32Const), int64(frame))
	b = append(b, opI32Add)
	b = appendU32(append(b, opGlobalSet), m.slots)
	b = appendU32(append(b, opGlobalGet), m.slots)
	b = appendS64(append(b, opI32Const), int64(int32(m.maxSlots)))
	return append(b, opI32GtU, opIf, blockEmpty, opUnreachable, opEnd)
}

// exit takes a function's frame off the slots count.
func (m *meter) exit(frame uint32) []byte {
	if m.maxSlots == 0 {
		return nil
	}
	//	global.get $slots  i32.const frame  i32.sub  global.set $slots
	b := appendU32(append(make([]byte, 0, 12), opGlobalGet), m.slots)
	b = appendS64(append(b, opI32Const), int64(frame))
	b = append(b, opI32Sub)
	return appendU32(append(b, opGlobalSet), m.slots)
}

// check is checkCost with this module's globals and checkpoint.
func (m *meter) check(cost uint64) []byte { return checkCost(m.fuel, m.next, m.checkpoint, cost) }

// chargeBody is the body of a helper (param $n i32) (result i32) that takes
// 1 + n>>shift (or n<<shift, left) units of fuel, calls the checkpoint when
// that takes the fuel to its threshold, and returns n: inserted before an
// instruction whose operand n is on top of the stack, it leaves the stack
// as it found it.
//
//	global.get $fuel  local.get 0  i64.extend_i32_u  i64.const shift  i64.shr_u|i64.shl
//	i64.const 1  i64.add  i64.sub  global.set $fuel
//	global.get $fuel  global.get $next  i64.le_s  if  call $checkpoint  end
//	local.get 0
func (m *meter) chargeBody(shift byte, left bool) []byte {
	b := []byte{0} // no locals
	b = appendU32(append(b, opGlobalGet), m.fuel)
	b = append(b, opLocalGet, 0, opI64ExtendI32U, opI64Const, shift)
	if left {
		b = append(b, opI64Shl)
	} else {
		b = append(b, opI64ShrU)
	}
	b = append(b, opI64Const, 1, opI64Add, opI64Sub)
	b = appendU32(append(b, opGlobalSet), m.fuel)
	b = appendU32(append(b, opGlobalGet), m.fuel)
	b = appendU32(append(b, opGlobalGet), m.next)
	b = append(b, opI64LeS, opIf, blockEmpty)
	b = appendU32(append(b, opCall), m.checkpoint)
	return append(b, opEnd, opLocalGet, 0, opEnd)
}

// checkpointBody is the body of the checkpoint, () -> (): a trip through
// the host's Go code (see checkCost), then a trap if the host set the stop
// global or the fuel is spent, else the next threshold, CheckpointUnits
// below the fuel left (0 at the lowest, where the fuel runs out).
//
//	i32.const 0  memory.grow  drop          (when the module has a memory)
//	global.get $stop  i64.eqz  i32.eqz  if  unreachable  end
//	global.get $fuel  i64.const 0  i64.le_s  if  unreachable  end
//	global.get $fuel  i64.const CheckpointUnits  i64.sub  global.set $next
//	global.get $next  i64.const 0  i64.lt_s  if  i64.const 0  global.set $next  end
func (m *meter) checkpointBody() []byte {
	b := []byte{0} // no locals
	if m.hasMemory {
		b = append(b, opI32Const, 0, opMemoryGrow, 0, opDrop)
	}
	b = appendU32(append(b, opGlobalGet), m.stop)
	b = append(b, opI64Eqz, opI32Eqz, opIf, blockEmpty, opUnreachable, opEnd)
	b = appendU32(append(b, opGlobalGet), m.fuel)
	b = append(b, opI64Const, 0, opI64LeS, opIf, blockEmpty, opUnreachable, opEnd)
	b = appendU32(append(b, opGlobalGet), m.fuel)
	b = appendS64(append(b, opI64Const), CheckpointUnits)
	b = append(b, opI64Sub)
	b = appendU32(append(b, opGlobalSet), m.next)
	b = appendU32(append(b, opGlobalGet), m.next)
	b = append(b, opI64Const, 0, opI64LtS, opIf, blockEmpty, opI64Const, 0)
	b = appendU32(append(b, opGlobalSet), m.next)
	return append(b, opEnd, opEnd)
}

// voidType returns the index of a type () -> (), added when missing.
func (m *meter) voidType() uint32 {
	for i, t := range m.types {
		if len(t.params) == 0 && len(t.results) == 0 {
			return uint32(i)
		}
	}
	m.types = append(m.types, funcType{})
	return uint32(len(m.types) - 1)
}

// typeSection returns the type section with the added types, or nil when
// none was added.
func (m *meter) typeSection(b []byte, s *section) []byte {
	if len(m.types) == m.ntypes {
		return nil
	}
	_, rest, _, _ := s.vector(b) // the count was read once already
	p := appendU32(make([]byte, 0, len(rest)+16), uint32(len(m.types)))
	p = append(p, rest...)
	for _, t := range m.types[m.ntypes:] {
		p = append(p, 0x60)
		p = appendU32(p, uint32(len(t.params)))
		p = append(p, t.params...)
		p = appendU32(p, uint32(len(t.results)))
		p = append(p, t.results...)
	}
	return p
}

// functionSection returns the function section with the helpers' entries
// appended, of the given types.
func functionSection(b []byte, s *section, helperTypes []uint32) ([]byte, error) {
	n, rest, _, err := s.vector(b)
	if err != nil {
		return nil, err
	}
	if uint64(n)+uint64(len(helperTypes)) > math.MaxUint32 {
		return nil, fmt.Errorf("too many functions")
	}
	p := appendU32(make([]byte, 0, len(rest)+8), n+uint32(len(helperTypes)))
	p = append(p, rest...)
	for _, t := range helperTypes {
		p = appendU32(p, t)
	}
	return p, nil
}
