package instrument

import (
	"fmt"
	"math"
)

// Export names of the globals Instrument adds.
const (
	FuelExportName = "ruled_fuel"
	StopExportName = "ruled_stop"
	GrowExportName = "ruled_grow"
)

// initialFuel is the fuel the global starts with, so that instantiation and
// _initialize run unbounded; the host sets a budget before each call.
const initialFuel = math.MaxInt64

// checkFunc returns the instructions inserted at every function entry and
// loop header, given the indices of the fuel and stop globals.
type checkFunc func(fuel, stop uint32) []byte

// checkFuel traps if the fuel is at or below the stop threshold, then takes
// one unit:
//
//	global.get $fuel  global.get $stop  i64.le_s  if  unreachable  end
//	global.get $fuel  i64.const 1  i64.sub  global.set $fuel
//
// With stop at 0 and fuel n >= 0, exactly n checks pass, as with the
// baseline that decrements first and traps below zero (the fuel is left at
// 0, not -1, when the check traps), and any negative fuel stops the guest.
//
// The stop global exists because zeroing the fuel from another goroutine is
// not a reliable stop: the guest's load-decrement-store races with the
// host's store, and in a tight loop compiled code nearly always has its own
// store in flight, so the host's zero is overwritten by a stale value minus
// one. Measured under wazero's compiler, a spinning guest took from 0.1 ms to
// 2.8 s to notice a zero stored every millisecond. The guest never writes
// stop, so one store of math.MaxInt64 (any value at or above the fuel) is
// seen at the next check. Comparing against a global rather than the
// constant 0 cost nothing measurable: under the compiler every variant tried
// (this one, the baseline, a scratch local) ran the tight loop at ~1.2x
// because the second global.get reuses the loaded value; under the
// interpreter this one and the baseline are within noise and the scratch
// local variant was ~8% slower. A separate i32 stop flag tested apart from
// the fuel cost 1.6x, as its result has to be materialised and or-ed.
func checkFuel(fuel, stop uint32) []byte {
	b := make([]byte, 0, 24)
	b = appendU32(append(b, opGlobalGet), fuel)
	b = appendU32(append(b, opGlobalGet), stop)
	b = append(b, opI64LeS, opIf, blockEmpty, opUnreachable, opEnd)
	b = appendU32(append(b, opGlobalGet), fuel)
	b = append(b, opI64Const, 1, opI64Sub)
	return appendU32(append(b, opGlobalSet), fuel)
}

// appendFuelGlobals returns the global section with the fuel and stop
// globals appended, and the number of globals the module defined. Appending
// rather than prepending keeps every existing global index: globals are
// numbered imports first, then definitions, so new last definitions take the
// next free indices and no global.get, export or name entry has to be
// rewritten.
func appendFuelGlobals(b []byte, s *section) ([]byte, uint32, error) {
	var n uint32
	var rest []byte
	if s != nil {
		r := s.reader(b)
		var err error
		if n, err = r.u32(); err != nil {
			return nil, 0, err
		}
		rest = b[r.pos:s.end]
	}
	if n > math.MaxUint32-3 {
		return nil, 0, fmt.Errorf("too many globals")
	}
	p := appendU32(make([]byte, 0, len(rest)+32), n+3)
	p = append(p, rest...)
	p = appendS64(append(p, typeI64, 1, opI64Const), initialFuel)
	p = append(p, opEnd, typeI64, 1, opI64Const, 0, opEnd)
	p = append(p, typeI32, 1, opI32Const, 0, opEnd) // grow: the last memory.grow's result
	return p, n, nil
}

// appendFuelExports returns the export section with the fuel and stop
// globals exported, refusing a module that already uses either name.
func appendFuelExports(b []byte, s *section, fuel uint32) ([]byte, error) {
	var n uint32
	var rest []byte
	if s != nil {
		r := s.reader(b)
		var err error
		if n, err = r.u32(); err != nil {
			return nil, err
		}
		rest = b[r.pos:s.end]
		if err := checkExports(r, n); err != nil {
			return nil, err
		}
	}
	if n > math.MaxUint32-3 {
		return nil, fmt.Errorf("too many exports")
	}
	p := appendU32(make([]byte, 0, len(rest)+48), n+3)
	p = append(p, rest...)
	p = appendGlobalExport(p, FuelExportName, fuel)
	p = appendGlobalExport(p, StopExportName, fuel+1)
	return appendGlobalExport(p, GrowExportName, fuel+2), nil
}

func appendGlobalExport(p []byte, name string, idx uint32) []byte {
	p = appendU32(p, uint32(len(name)))
	p = append(append(p, name...), kindGlobal)
	return appendU32(p, idx)
}

func checkExports(r reader, n uint32) error {
	for i := uint32(0); i < n; i++ {
		at := r.pos
		name, err := r.name()
		if err == nil {
			_, err = r.byte()
		}
		if err == nil {
			_, err = r.u32()
		}
		if err != nil {
			return fmt.Errorf("export %d: %w", i, err)
		}
		if name == FuelExportName || name == StopExportName || name == GrowExportName {
			return errAt(at, "module already exports %q", name)
		}
	}
	if !r.done() {
		return errAt(r.pos, "unexpected bytes after the last export")
	}
	return nil
}

// recordGrow is inserted after every memory.grow: it keeps the result (the
// old size in pages, or -1 when the grow was refused) in the grow global and
// leaves it on the stack, so the host can tell a trap that follows a refused
// grow — a guest runtime aborting out of memory — from any other trap.
//
//	global.set $grow  global.get $grow
func recordGrow(grow uint32) []byte {
	b := appendU32(append(make([]byte, 0, 12), opGlobalSet), grow)
	return appendU32(append(b, opGlobalGet), grow)
}
