package instrument

import (
	"fmt"
	"math"
)

// Options configures Instrument.
type Options struct {
	// MemoryPages caps the module's memory in 64 KiB pages: the declared
	// maximum is lowered to it, so memory.grow fails past it. 0 = no cap.
	MemoryPages uint32
	// StackSlots bounds the call stack: the 8-byte slots of the frames
	// live at once (see frameSlots). A call that would take it past the
	// bound traps. 0 = no bound (wazero's own, 400 MB).
	StackSlots uint32
}

// Module is an instrumented module.
type Module struct {
	Bytes []byte // the instrumented module

	// FuelExport names the exported mutable i64 fuel global
	// (FuelExportName). It starts at math.MaxInt64; each function entry and
	// loop iteration takes its cost, bulk memory and memory.grow theirs
	// (meter.go), and the guest traps (unreachable) at the checkpoint that
	// finds it spent. The host sets the budget before a call, with
	// NextExport.
	FuelExport string

	// StopExport names the exported mutable i64 stop global
	// (StopExportName), 0 at start and never written by the guest. To stop a
	// running call, for a deadline, the host stores any non-zero value in it
	// from any goroutine: the guest traps at its next checkpoint, at most
	// CheckpointUnits later. Zeroing the fuel instead works only eventually
	// (see checkCost). The host must store 0 again before reusing the
	// instance.
	StopExport string

	// StackExport names the exported i32 global (StackExportName) that
	// counts the slots of the frames live (Options.StackSlots). A trap
	// leaves it as it was: the host stores 0 before each call.
	StackExport string

	// StartExport names the exported function the module's start section
	// named (StartExportName), "" when it had none: the start section is
	// dropped, and the host calls this first, under a budget and a
	// deadline, instead of leaving it to instantiation.
	StartExport string

	// NextExport names the exported mutable i64 global (NextExportName)
	// holding the fuel at which the guest next goes through its
	// checkpoint (see checkCost): the host sets it CheckpointUnits below
	// the fuel before each call, and the guest lowers it at each
	// checkpoint.
	NextExport string

	// GrowExport names the exported i32 global (GrowExportName) that holds
	// the result of the guest's last memory.grow: -1 after a refused grow.
	// The host reads it to report a trap that follows a refused grow as
	// running out of memory.
	GrowExport string

	// MinPages and MaxPages are the memory limits after capping; MaxPages is
	// 65536 when the module declares no maximum and no cap is set.
	MinPages, MaxPages uint32

	Functions int // number of function bodies instrumented
}

// Instrument returns wasm with fuel checks inserted and its memory capped. It
// does not modify wasm and is safe for concurrent use. Errors say what is
// wrong and where, with offsets into wasm.
func Instrument(wasm []byte, o Options) (*Module, error) {
	m, err := instrument(wasm, o, nil)
	if err != nil {
		return nil, fmt.Errorf("instrument: %w", err)
	}
	return m, nil
}

func instrument(b []byte, o Options, check checkFunc) (*Module, error) {
	secs, err := splitSections(b)
	if err != nil {
		return nil, err
	}
	if err := checkCounts(b, secs); err != nil {
		return nil, err
	}
	find := secs.find
	var im imports
	if s := find(secImport); s != nil {
		if im, err = countImports(s.reader(b)); err != nil {
			return nil, fmt.Errorf("import section: %w", err)
		}
	}
	mem, err := capMemory(b, find(secMemory), im, o.MemoryPages)
	if err != nil {
		return nil, err
	}
	replace, add := map[byte][]byte{}, map[byte][]byte{}
	if mem.payload != nil {
		replace[secMemory] = mem.payload
	}
	tables, err := capTables(b, find(secTable))
	if err != nil {
		return nil, err
	}
	if tables != nil {
		replace[secTable] = tables
	}
	start, err := dropStart(b, find(secStart), replace)
	if err != nil {
		return nil, err
	}
	fuel, err := addFuel(b, find(secGlobal), find(secExport), im, start, replace, add)
	if err != nil {
		return nil, err
	}
	var loop []byte // nil: checkCost's, with the checkpoint
	if check != nil {
		loop = check(fuel, fuel+4)
	}
	n, err := addChecks(b, secs, im, fuel, o.StackSlots, find(secMemory) != nil, loop, recordGrow(fuel+2), replace, add)
	if err != nil {
		return nil, err
	}
	startExport := ""
	if start != nil {
		startExport = StartExportName
	}
	return &Module{
		Bytes:       assemble(b, secs, replace, add),
		StartExport: startExport,
		FuelExport:  FuelExportName,
		StopExport:  StopExportName,
		GrowExport:  GrowExportName,
		StackExport: StackExportName,
		NextExport:  NextExportName,
		MinPages:    mem.min,
		MaxPages:    mem.max,
		Functions:   n,
	}, nil
}

// dropStart removes the start section, if any, and returns the function it
// named: a start function runs while the module is instantiated, before the
// host can give it a budget or arm a timer, so one that never ends hung the
// host there (issue 21). Its function is exported instead (StartExportName),
// for the host to call first, as any other call.
func dropStart(b []byte, s *section, replace map[byte][]byte) (*uint32, error) {
	if s == nil {
		return nil, nil
	}
	r := s.reader(b)
	fn, err := r.u32()
	if err != nil {
		return nil, fmt.Errorf("start section: %w", err)
	}
	if !r.done() {
		return nil, errAt(r.pos, "start section: unexpected bytes after the function index")
	}
	replace[secStart] = nil
	return &fn, nil
}

// addFuel appends the fuel and stop globals and their exports, creating the
// sections if the module has none, and returns the fuel global's index (stop
// follows it).
func addFuel(b []byte, global, export *section, im imports, start *uint32, replace, add map[byte][]byte) (uint32, error) {
	gp, defined, err := appendFuelGlobals(b, global, initialFuel)
	if err != nil {
		return 0, fmt.Errorf("global section: %w", err)
	}
	idx := uint64(im.globals) + uint64(defined)
	if idx > math.MaxUint32-5 {
		return 0, fmt.Errorf("global section: too many globals")
	}
	ep, err := appendFuelExports(b, export, uint32(idx), start)
	if err != nil {
		return 0, fmt.Errorf("export section: %w", err)
	}
	put(global, secGlobal, gp, replace, add)
	put(export, secExport, ep, replace, add)
	return uint32(idx), nil
}

// put records a new payload for section id: a replacement if the module has
// the section, an addition if not.
func put(s *section, id byte, payload []byte, replace, add map[byte][]byte) {
	if s != nil {
		replace[id] = payload
	} else {
		add[id] = payload
	}
}

// addChecks meters the code (see meter.go): it rewrites every body, adds
// the charging helpers to the function and code sections, and adds the
// types they and the wrapping blocks need. It returns the number of the
// module's own bodies.
func addChecks(b []byte, secs sections, im imports, fuel, maxSlots uint32, hasMemory bool, loop, grow []byte, replace, add map[byte][]byte) (int, error) {
	declared, err := countFunctions(b, secs.find(secType), secs.find(secFunction), im)
	if err != nil {
		return 0, fmt.Errorf("function section: %w", err)
	}
	types, err := readTypes(b, secs.find(secType))
	if err != nil {
		return 0, fmt.Errorf("type section: %w", err)
	}
	byFunc, err := funcTypes(b, secs.find(secFunction))
	if err != nil {
		return 0, fmt.Errorf("function section: %w", err)
	}
	if uint64(im.funcs)+uint64(declared)+4 > math.MaxUint32 {
		return 0, fmt.Errorf("function section: too many functions")
	}
	m := &meter{fuel: fuel, stop: fuel + 1, grow: fuel + 2, slots: fuel + 3, next: fuel + 4, maxSlots: maxSlots,
		hasMemory: hasMemory, types: types, ntypes: len(types), byFunc: byFunc, resultT: map[string]uint32{}}
	m.chargeBytes = im.funcs + declared
	m.chargePages = m.chargeBytes + 1
	m.chargeEntries = m.chargeBytes + 2
	m.checkpoint = m.chargeBytes + 3
	charge := m.i32ToI32()
	helperTypes := []uint32{charge, charge, charge, m.voidType()}
	code := secs.find(secCode)
	var p []byte
	n := 0
	if code == nil {
		if declared != 0 {
			return 0, fmt.Errorf("function section declares %d functions but there is no code section", declared)
		}
		p, _, err = rewriteCode(reader{b: []byte{0}, end: 1}, im, 0, m, loop, grow)
	} else {
		p, n, err = rewriteCode(code.reader(b), im, declared, m, loop, grow)
	}
	if err != nil {
		return 0, fmt.Errorf("code section: %w", err)
	}
	put(code, secCode, p, replace, add)
	fp, err := functionSection(b, secs.find(secFunction), helperTypes)
	if err != nil {
		return 0, fmt.Errorf("function section: %w", err)
	}
	put(secs.find(secFunction), secFunction, fp, replace, add)
	if tp := m.typeSection(b, secs.find(secType)); tp != nil {
		put(secs.find(secType), secType, tp, replace, add)
	}
	return n, nil
}

// countFunctions returns the number of functions the module defines, and
// checks their type indices: wazero v1.12.0 panics compiling a call to a
// function whose type index is out of range, so such a module is refused
// here rather than crash the host.
func countFunctions(b []byte, types, fn *section, im imports) (uint32, error) {
	if fn == nil {
		return 0, nil
	}
	var ntypes uint32
	if types != nil {
		r := types.reader(b)
		var err error
		if ntypes, err = r.u32(); err != nil {
			return 0, fmt.Errorf("type section: %w", err)
		}
	}
	r := fn.reader(b)
	n, err := r.u32()
	for i := uint32(0); i < n && err == nil; i++ {
		at := r.pos
		var t uint32
		if t, err = r.u32(); err == nil && t >= ntypes {
			err = errAt(at, "function %d has type %d but the module has %d types", uint64(im.funcs)+uint64(i), t, ntypes)
		}
	}
	if err == nil && !r.done() {
		err = errAt(r.pos, "unexpected bytes after the last function")
	}
	return n, err
}
