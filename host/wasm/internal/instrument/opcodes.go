package instrument

// Opcodes the rewrite emits or must recognise.
const (
	opUnreachable   = 0x00
	opBlock         = 0x02
	opLoop          = 0x03
	opIf            = 0x04
	opEnd           = 0x0b
	opReturn        = 0x0f
	opCall          = 0x10
	opCallIndirect  = 0x11
	opReturnCall    = 0x12
	opReturnCallI   = 0x13
	opDrop          = 0x1a
	opLocalGet      = 0x20
	opGlobalGet     = 0x23
	opGlobalSet     = 0x24
	opMemoryGrow    = 0x40
	opMemorySize    = 0x3f
	opI32Const      = 0x41
	opI64Const      = 0x42
	opF32Const      = 0x43
	opF64Const      = 0x44
	opI32Eqz        = 0x45
	opI32GtU        = 0x4b
	opI64Eqz        = 0x50
	opI64LtS        = 0x53
	opI64LeS        = 0x57
	opI32Add        = 0x6a
	opI32Sub        = 0x6b
	opI64Add        = 0x7c
	opI64Sub        = 0x7d
	opI64Shl        = 0x86
	opI64ShrU       = 0x88
	opI64ExtendI32U = 0xad
	opRefNull       = 0xd0
	opRefFunc       = 0xd2
	opPrefixFC      = 0xfc // saturating truncation, bulk memory, table ops
	opPrefixSIMD    = 0xfd
	opPrefixAtom    = 0xfe
)

// 0xFC sub-opcodes the rewrite charges fuel for.
const (
	fcMemoryInit = 8
	fcMemoryCopy = 10
	fcMemoryFill = 11
	fcTableInit  = 12
	fcTableCopy  = 14
	fcTableGrow  = 15
	fcTableSize  = 16
	fcTableFill  = 17
)

// imm says how to skip an instruction's immediates.
type imm uint8

const (
	immInvalid    imm = iota // not a supported opcode
	immNone                  // no immediates
	immBlockType             // 0x40, a value type, or an s33 type index
	immU32                   // one index
	immU32x2                 // two indices
	immBrTable               // vec(labelidx) labelidx
	immMemarg                // align, [memidx,] offset
	immI32                   // s32
	immI64                   // s64
	immF32                   // 4 bytes
	immF64                   // 8 bytes
	immSelectT               // vec(valtype)
	immHeapType              // ref.null's reference type byte
	immLane                  // one lane index byte
	immMemargLane            // memarg, then a lane index byte
	immV128                  // 16 bytes (v128.const, i8x16.shuffle)
	immZeroByte              // a reserved 0x00 byte (atomic.fence)
	immPrefix                // a u32 sub-opcode follows
)

// oneByte gives the immediates of every supported single-byte opcode.
var oneByte = func() (t [256]imm) {
	set := func(from, to int, k imm) {
		for op := from; op <= to; op++ {
			t[op] = k
		}
	}
	set(0x00, 0x01, immNone)      // unreachable nop
	set(0x02, 0x04, immBlockType) // block loop if
	set(0x05, 0x05, immNone)      // else
	set(0x0b, 0x0b, immNone)      // end
	set(0x0c, 0x0d, immU32)       // br br_if
	set(0x0e, 0x0e, immBrTable)
	set(0x0f, 0x0f, immNone)  // return
	set(0x10, 0x10, immU32)   // call
	set(0x11, 0x11, immU32x2) // call_indirect typeidx tableidx
	set(0x12, 0x12, immU32)   // return_call
	set(0x13, 0x13, immU32x2) // return_call_indirect
	set(0x1a, 0x1b, immNone)  // drop select
	set(0x1c, 0x1c, immSelectT)
	set(0x20, 0x26, immU32)    // local.get/set/tee global.get/set table.get/set
	set(0x28, 0x3e, immMemarg) // loads and stores
	set(0x3f, 0x40, immU32)    // memory.size memory.grow (memidx)
	set(0x41, 0x41, immI32)
	set(0x42, 0x42, immI64)
	set(0x43, 0x43, immF32)
	set(0x44, 0x44, immF64)
	set(0x45, 0xc4, immNone) // numeric, including sign extension
	set(0xd0, 0xd0, immHeapType)
	set(0xd1, 0xd1, immNone) // ref.is_null
	set(0xd2, 0xd2, immU32)  // ref.func
	set(0xfc, 0xfe, immPrefix)
	return t
}()

// prefixFC gives the immediates of the 0xFC sub-opcodes.
var prefixFC = [...]imm{
	0: immNone, 1: immNone, 2: immNone, 3: immNone, // i32.trunc_sat_*
	4: immNone, 5: immNone, 6: immNone, 7: immNone, // i64.trunc_sat_*
	8:  immU32x2, // memory.init dataidx memidx
	9:  immU32,   // data.drop
	10: immU32x2, // memory.copy memidx memidx
	11: immU32,   // memory.fill memidx
	12: immU32x2, // table.init elemidx tableidx
	13: immU32,   // elem.drop
	14: immU32x2, // table.copy
	15: immU32,   // table.grow
	16: immU32,   // table.size
	17: immU32,   // table.fill
}

// simdGaps are the unassigned sub-opcodes below 0x100 in the final SIMD
// proposal; relaxed SIMD (0x100 and up) is not supported.
var simdGaps = map[uint32]bool{
	0x9a: true, 0xa2: true, 0xa5: true, 0xa6: true, 0xaf: true, 0xb0: true,
	0xb2: true, 0xb3: true, 0xb4: true, 0xbb: true, 0xc2: true, 0xc5: true,
	0xc6: true, 0xcf: true, 0xd0: true, 0xd2: true, 0xd3: true, 0xe2: true,
	0xee: true,
}

func simdImm(sub uint32) imm {
	switch {
	case sub <= 0x0b: // loads, splat/extend loads, store
		return immMemarg
	case sub <= 0x0d: // v128.const i8x16.shuffle
		return immV128
	case sub >= 0x15 && sub <= 0x22: // extract_lane replace_lane
		return immLane
	case sub >= 0x54 && sub <= 0x5b: // load*_lane store*_lane
		return immMemargLane
	case sub == 0x5c || sub == 0x5d: // load32_zero load64_zero
		return immMemarg
	case sub <= 0xff && !simdGaps[sub]:
		return immNone
	}
	return immInvalid
}

func atomicImm(sub uint32) imm {
	switch {
	case sub <= 0x02: // memory.atomic.notify wait32 wait64
		return immMemarg
	case sub == 0x03: // atomic.fence
		return immZeroByte
	case sub >= 0x10 && sub <= 0x4e: // atomic loads, stores, rmw, cmpxchg
		return immMemarg
	}
	return immInvalid
}

func prefixedImm(prefix byte, sub uint32) imm {
	switch prefix {
	case opPrefixFC:
		if sub < uint32(len(prefixFC)) {
			return prefixFC[sub]
		}
	case opPrefixSIMD:
		return simdImm(sub)
	case opPrefixAtom:
		return atomicImm(sub)
	}
	return immInvalid
}
