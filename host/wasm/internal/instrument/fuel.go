package instrument

import (
	"fmt"
	"math"
)

// Export names of the globals Instrument adds.
const (
	FuelExportName  = "ruled_fuel"
	StopExportName  = "ruled_stop"
	GrowExportName  = "ruled_grow"
	StackExportName = "ruled_stack"
	NextExportName  = "ruled_next"
	StartExportName = "ruled_start"
)

// initialFuel is the fuel the global starts with when Options.StartFuel
// is 0: instantiation (a start section) runs unbounded. The host sets a
// budget before each call after that.
const initialFuel = math.MaxInt64

// checkFunc returns the instructions inserted at every loop header, given
// the indices of the fuel global and of the threshold it is compared with.
// Instrument inserts checkCost's (nil); benchmarks compare others.
type checkFunc func(fuel, next uint32) []byte

// CheckpointUnits is how much fuel is spent between two checkpoints: the
// guest's trips through the host's Go code, which let the Go runtime stop
// it for a garbage collection or let a timer run, and where it reads the
// stop global. About a quarter of a millisecond of compiled guest code.
const CheckpointUnits = 1 << 18

// checkCost is the check at every loop header (one unit) and function
// entry (its entry cost): when the fuel has come down to the checkpoint
// threshold, call the checkpoint; then take the cost:
//
//	global.get $fuel  global.get $next  i64.le_s  if  call $checkpoint  end
//	global.get $fuel  i64.const cost  i64.sub  global.set $fuel
//
// The checkpoint (checkpointBody) traps when the fuel is spent or the host
// set the stop global, and sets the next threshold CheckpointUnits lower.
//
// Why a checkpoint, and not a trap on the stop global at every check, as
// before: compiled guest code cannot be preempted, so a garbage collection
// that starts while a guest runs waits for it, holding every other
// goroutine — the deadline's timer, the HTTP API, signal handling —
// meanwhile; with GOMAXPROCS ≤ 2 a guest running on fuel alone froze the
// daemon for as long as its fuel lasted (16 minutes for a memory.fill loop
// charged one unit a pass). The checkpoint takes the guest through Go
// (memory.grow of 0 pages: wazero's compiled code grows memory in Go) every
// CheckpointUnits, where the runtime can stop it and the timer can run, so
// a collection waits a quarter of a millisecond, not a deadline.
//
// The stop global exists because zeroing the fuel from another goroutine is
// not a reliable stop: the guest's load-decrement-store races with the
// host's store, and in a tight loop compiled code nearly always has its own
// store in flight, so the host's zero is overwritten by a stale value minus
// one. Measured under wazero's compiler, a spinning guest took from 0.1 ms to
// 2.8 s to notice a zero stored every millisecond. The guest never writes
// stop, so one store of any non-zero value is seen at the next checkpoint.
// The threshold next is the guest's (and the host's before a call): the
// host never writes it while the guest runs.
func checkCost(fuel, next, checkpoint uint32, cost uint64) []byte {
	b := make([]byte, 0, 32)
	b = appendU32(append(b, opGlobalGet), fuel)
	b = appendU32(append(b, opGlobalGet), next)
	b = append(b, opI64LeS, opIf, blockEmpty)
	b = appendU32(append(b, opCall), checkpoint)
	b = append(b, opEnd)
	b = appendU32(append(b, opGlobalGet), fuel)
	b = appendS64(append(b, opI64Const), int64(min(cost, math.MaxInt32)))
	b = append(b, opI64Sub)
	return appendU32(append(b, opGlobalSet), fuel)
}

// appendFuelGlobals returns the global section with the fuel and stop
// globals appended, and the number of globals the module defined. Appending
// rather than prepending keeps every existing global index: globals are
// numbered imports first, then definitions, so new last definitions take the
// next free indices and no global.get, export or name entry has to be
// rewritten.
func appendFuelGlobals(b []byte, s *section, start int64) ([]byte, uint32, error) {
	n, rest, _, err := s.vector(b)
	if err != nil {
		return nil, 0, err
	}
	if n > math.MaxUint32-5 {
		return nil, 0, fmt.Errorf("too many globals")
	}
	p := appendU32(make([]byte, 0, len(rest)+48), n+5)
	p = append(p, rest...)
	p = appendS64(append(p, typeI64, 1, opI64Const), start)
	p = append(p, opEnd, typeI64, 1, opI64Const, 0, opEnd) // stop
	p = append(p, typeI32, 1, opI32Const, 0, opEnd)        // grow: the last memory.grow's result
	p = append(p, typeI32, 1, opI32Const, 0, opEnd)        // stack: the slots of the frames live
	p = appendS64(append(p, typeI64, 1, opI64Const), max(start-CheckpointUnits, 0))
	p = append(p, opEnd) // next: the checkpoint threshold
	return p, n, nil
}

// appendFuelExports returns the export section with the fuel and stop
// globals exported, refusing a module that already uses either name.
func appendFuelExports(b []byte, s *section, fuel uint32, start *uint32) ([]byte, error) {
	n, rest, r, err := s.vector(b)
	if err != nil {
		return nil, err
	}
	if s != nil {
		if err := checkExports(r, n); err != nil {
			return nil, err
		}
	}
	if n > math.MaxUint32-6 {
		return nil, fmt.Errorf("too many exports")
	}
	added := uint32(5)
	if start != nil {
		added++
	}
	p := appendU32(make([]byte, 0, len(rest)+96), n+added)
	p = append(p, rest...)
	p = appendGlobalExport(p, FuelExportName, fuel)
	p = appendGlobalExport(p, StopExportName, fuel+1)
	p = appendGlobalExport(p, GrowExportName, fuel+2)
	p = appendGlobalExport(p, StackExportName, fuel+3)
	p = appendGlobalExport(p, NextExportName, fuel+4)
	if start != nil {
		p = appendU32(p, uint32(len(StartExportName)))
		p = append(append(p, StartExportName...), kindFunc)
		p = appendU32(p, *start)
	}
	return p, nil
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
		switch name {
		case FuelExportName, StopExportName, GrowExportName, StackExportName, NextExportName, StartExportName:
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
