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
}

// Module is an instrumented module.
type Module struct {
	Bytes []byte // the instrumented module

	// FuelExport names the exported mutable i64 fuel global
	// (FuelExportName). It starts at math.MaxInt64; each function entry and
	// loop iteration takes one unit, and the guest traps (unreachable) at a
	// check that finds it at or below the stop global. The host sets the
	// budget before a call.
	FuelExport string

	// StopExport names the exported mutable i64 stop global
	// (StopExportName), 0 at start and never written by the guest. To stop a
	// running call, for a deadline, the host stores math.MaxInt64 in it from
	// any goroutine: the guest traps at its next check. Zeroing the fuel
	// instead works only eventually (see checkFuel). The host must store 0
	// again before reusing the instance. A store only helps while the
	// storing goroutine can run: a garbage collection waits for a spinning
	// guest and stops it meanwhile, so a finite fuel budget is the backstop.
	StopExport string

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
	m, err := instrument(wasm, o, checkFuel)
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
	fuel, err := addFuel(b, find(secGlobal), find(secExport), im, replace, add)
	if err != nil {
		return nil, err
	}
	n, err := addChecks(b, secs, im, check(fuel, fuel+1), recordGrow(fuel+2), replace)
	if err != nil {
		return nil, err
	}
	return &Module{
		Bytes:      assemble(b, secs, replace, add),
		FuelExport: FuelExportName,
		StopExport: StopExportName,
		GrowExport: GrowExportName,
		MinPages:   mem.min,
		MaxPages:   mem.max,
		Functions:  n,
	}, nil
}

// addFuel appends the fuel and stop globals and their exports, creating the
// sections if the module has none, and returns the fuel global's index (stop
// follows it).
func addFuel(b []byte, global, export *section, im imports, replace, add map[byte][]byte) (uint32, error) {
	gp, defined, err := appendFuelGlobals(b, global)
	if err != nil {
		return 0, fmt.Errorf("global section: %w", err)
	}
	idx := uint64(im.globals) + uint64(defined)
	if idx > math.MaxUint32-1 {
		return 0, fmt.Errorf("global section: too many globals")
	}
	ep, err := appendFuelExports(b, export, uint32(idx))
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

// addChecks rewrites the code section and returns the number of bodies.
func addChecks(b []byte, secs sections, im imports, check, grow []byte, replace map[byte][]byte) (int, error) {
	declared, err := countFunctions(b, secs.find(secType), secs.find(secFunction), im)
	if err != nil {
		return 0, fmt.Errorf("function section: %w", err)
	}
	code := secs.find(secCode)
	if code == nil {
		if declared != 0 {
			return 0, fmt.Errorf("function section declares %d functions but there is no code section", declared)
		}
		return 0, nil
	}
	p, n, err := rewriteCode(code.reader(b), im, declared, check, grow)
	if err != nil {
		return 0, fmt.Errorf("code section: %w", err)
	}
	replace[secCode] = p
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
