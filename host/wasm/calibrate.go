package wasm

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/ruled-dev/ruled/host/wasm/internal/instrument"
)

// calibrateWasm is calibrate.wat: loops that run until their fuel is spent,
// one for each kind of work a unit of fuel stands for.
//
//go:embed calibrate.wasm
var calibrateWasm []byte

// calibrateUnits is the fuel each timed run of calibrate.wasm spends: long
// enough to time (tens of microseconds compiled), short enough that the
// whole calibration stays within a few milliseconds compiled and tens on
// the interpreter.
const calibrateUnits = 200_000

// calibrateTrials is how many times each pattern runs; the fastest counts,
// since a slower one measured the machine's other work, not the guest.
const calibrateTrials = 5

// Calibration is what a unit of fuel costs on this machine and engine, as
// NewRuntime measured it: the time per unit of each kind of work, and the
// rate a call's fuel budget is derived from (Limits.Fuel): the slowest
// kind's, so that no guest runs much past its deadline on fuel, whatever
// it does, while a garbage collection keeps the deadline's timer from
// firing.
type Calibration struct {
	// NsPerUnit is the fastest time measured per unit, by pattern: loop,
	// calls, frames, fill, copy.
	NsPerUnit map[string]float64
	// UnitsPerSecond is the budget rate: 1e9 over the slowest pattern's
	// NsPerUnit.
	UnitsPerSecond float64
	Took           time.Duration
}

// calibrationPatterns are calibrate.wat's exports.
var calibrationPatterns = []string{"loop", "calls", "frames", "fill", "copy"}

// minUnitsPerSecond bounds the rate from below: a calibration disturbed by
// a machine far busier than the guest will find (the fastest of its trials
// still slow) must not cut every call's budget to nothing.
const minUnitsPerSecond = 5e6

// calibrate times calibrate.wasm's patterns on rt.
func calibrate(ctx context.Context, rt wazero.Runtime) (Calibration, error) {
	start := time.Now()
	c := Calibration{NsPerUnit: map[string]float64{}}
	ins, err := instrument.Instrument(calibrateWasm, instrument.Options{})
	if err != nil {
		return c, fmt.Errorf("wasm: calibrate: %w", err)
	}
	cm, err := rt.CompileModule(ctx, ins.Bytes)
	if err != nil {
		return c, fmt.Errorf("wasm: calibrate: %w", err)
	}
	defer cm.Close(ctx)
	worst := 0.0
	for _, fn := range calibrationPatterns {
		best := math.Inf(1)
		for range calibrateTrials {
			ns, err := timeUnits(ctx, rt, cm, ins.FuelExport, fn)
			if err != nil {
				return c, fmt.Errorf("wasm: calibrate %s: %w", fn, err)
			}
			best = min(best, ns)
		}
		c.NsPerUnit[fn] = best
		worst = max(worst, best)
	}
	c.UnitsPerSecond = max(1e9/worst, minUnitsPerSecond)
	c.Took = time.Since(start)
	return c, nil
}

// timeUnits runs fn on a fresh instance with calibrateUnits of fuel and
// returns the time it took per unit.
func timeUnits(ctx context.Context, rt wazero.Runtime, cm wazero.CompiledModule, fuelExport, fn string) (float64, error) {
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return 0, err
	}
	defer mod.Close(ctx)
	fuel, ok := mod.ExportedGlobal(fuelExport).(api.MutableGlobal)
	f := mod.ExportedFunction(fn)
	if !ok || f == nil {
		return 0, errors.New("the calibration module lost its fuel or function")
	}
	fuel.Set(calibrateUnits)
	if next, ok := mod.ExportedGlobal(instrument.NextExportName).(api.MutableGlobal); ok {
		next.Set(0) // as the host sets it for a budget under a checkpoint's worth
	}
	begin := time.Now()
	_, err = f.Call(ctx)
	took := time.Since(begin)
	if err == nil {
		return 0, errors.New("it returned before its fuel was spent")
	}
	if left := int64(fuel.Get()); left > 0 {
		return 0, fmt.Errorf("it trapped with %d units left: %w", left, err)
	}
	return float64(took.Nanoseconds()) / calibrateUnits, nil
}
