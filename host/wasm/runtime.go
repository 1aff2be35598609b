package wasm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// Config configures a Runtime. The zero value is usable: no compilation
// cache, the compiler engine where wazero has one, a null logger, no
// services.
type Config struct {
	// CacheDir holds wazero's compiled code between runs (a Go plugin
	// compiles in about a second and loads from the cache in about 40 ms).
	// "" keeps compiled code in memory only. The directory must be writable
	// only by ruled: wazero trusts what it finds there.
	CacheDir string
	// CacheMaxBytes bounds CacheDir: at start, the files written longest
	// ago are removed until the rest fit (pruneCache). default:
	// DefaultCacheMaxBytes; -1: no bound.
	CacheMaxBytes int64
	// Interpreter selects wazero's interpreter instead of its compiler. On
	// platforms without a compiler (32-bit arm) wazero interprets anyway.
	Interpreter bool
	// Logger receives plugin log lines and guest stdout/stderr.
	// default: hclog.NewNullLogger().
	Logger hclog.Logger
	// Services are what actions reach through host functions.
	Services Services
	// Clock is what `now` answers during an action. default: time.Now.
	Clock func() time.Time
}

// Runtime holds one wazero runtime with WASI and ruled's host functions, and
// the modules loaded into it.
type Runtime struct {
	rt       wazero.Runtime
	cache    wazero.CompilationCache
	wasi     map[string]bool // functions wasi_snapshot_preview1 exports
	log      hclog.Logger
	services Services
	clock    func() time.Time
	interp   bool

	mu       sync.Mutex
	compiled map[[32]byte]*shared

	// live counts instances across all modules; tests compare it with a
	// baseline to prove that nothing leaks.
	live atomic.Int64
	// denied counts host calls refused for a missing grant or because the
	// call was a condition's.
	denied atomic.Uint64
	// calib is what a unit of fuel costs here (calibrate), measured at
	// start: a call's budget is its deadline at calib.UnitsPerSecond.
	calib Calibration
	// slowCompile is how long a compilation runs before the runtime says
	// so in the log (compileNotice); tests shorten it.
	slowCompile time.Duration
	// warns folds the warnings a plugin's behaviour triggers (its dropped
	// log lines) to one a second per plugin.
	warns lograte.Limiter
	// logs is each plugin's log bound and count, by name (pluginLog).
	logs sync.Map
}

// NewRuntime starts a runtime. Close it to release its compiled code.
func NewRuntime(ctx context.Context, cfg Config) (*Runtime, error) {
	r := &Runtime{log: cfg.Logger, services: cfg.Services, clock: cfg.Clock, interp: cfg.Interpreter,
		compiled: map[[32]byte]*shared{}, slowCompile: time.Second}
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	if r.clock == nil {
		r.clock = time.Now
	}
	rc := wazero.NewRuntimeConfig()
	if cfg.Interpreter {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	if cfg.CacheDir != "" {
		if err := os.MkdirAll(cfg.CacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
		if max := cfg.CacheMaxBytes; max >= 0 {
			if max == 0 {
				max = DefaultCacheMaxBytes
			}
			if freed, err := pruneCache(cfg.CacheDir, max); err != nil {
				r.log.Warn("compilation cache: cannot prune", "dir", cfg.CacheDir, "error", err)
			} else if freed > 0 {
				r.log.Info("compilation cache: removed the oldest compiled code", "dir", cfg.CacheDir,
					"freed-mb", freed>>20, "bound-mb", max>>20)
			}
		}
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache %s: %w", cfg.CacheDir, err)
		}
		r.cache = c
		rc = rc.WithCompilationCache(c)
	}
	r.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	wasi, err := wasi_snapshot_preview1.NewBuilder(r.rt).Compile(ctx)
	if err == nil {
		_, err = r.rt.InstantiateModule(ctx, wasi, wazero.NewModuleConfig())
	}
	if err != nil {
		r.rt.Close(ctx)
		return nil, fmt.Errorf("wasm: wasi: %w", err)
	}
	r.wasi = map[string]bool{}
	for name := range wasi.ExportedFunctions() {
		r.wasi[name] = true
	}
	if err := r.instantiateHost(ctx); err != nil {
		r.rt.Close(ctx)
		return nil, fmt.Errorf("wasm: host module: %w", err)
	}
	if r.calib, err = calibrate(ctx, r.rt); err != nil {
		r.rt.Close(ctx)
		return nil, err
	}
	r.log.Debug("fuel calibrated", "units-per-second", fmt.Sprintf("%.3g", r.calib.UnitsPerSecond),
		"ns-per-unit", r.calib.NsPerUnit, "took", r.calib.Took)
	return r, nil
}

// Calibration is what a unit of fuel was measured to cost at start.
func (r *Runtime) Calibration() Calibration { return r.calib }

// Close closes every module and releases the runtime. Calls in flight fail.
func (r *Runtime) Close(ctx context.Context) error {
	err := r.rt.Close(ctx)
	if r.cache != nil {
		err = errors.Join(err, r.cache.Close(ctx))
	}
	return err
}

// LiveInstances is the number of instances alive across every module.
func (r *Runtime) LiveInstances() int { return int(r.live.Load()) }

// Denied is how many host calls were refused (capability not granted, or
// not allowed in a condition) since the runtime started.
func (r *Runtime) Denied() uint64 { return r.denied.Load() }

// Interpreter reports whether the runtime interprets rather than compiles.
func (r *Runtime) Interpreter() bool { return r.interp }

// DefaultCacheDir is where the compilation cache goes under a data dir.
func DefaultCacheDir(dataDir string) string { return filepath.Join(dataDir, "cache", "wazero") }

// hostFunc is one of ABI v1's host functions.
type hostFunc struct {
	name    string
	params  []api.ValueType
	results []api.ValueType
	fn      func(r *Runtime, cs *callState, mod api.Module, stack []uint64)
}

func (r *Runtime) instantiateHost(ctx context.Context) error {
	b := r.rt.NewHostModuleBuilder(abi.ImportModule)
	for _, hf := range hostFuncs {
		hf := hf
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				cs := stateOf(ctx)
				if cs == nil || cs.in == nil || cs.in.fuel == nil { // unprotected (benchmarks)
					hf.fn(r, cs, mod, stack)
					return
				}
				if cs.in.overdue() {
					// Past the deadline: nothing more is done for this call,
					// and the guest stops at its next check, even one that
					// loops on host calls and never looks at their answer.
					cs.in.stopNow()
					if len(hf.results) > 0 {
						fail(stack, abi.StatusUnavailable)
					}
					return
				}
				began := time.Now()
				hf.fn(r, cs, mod, stack)
				cs.in.charge(time.Since(began))
			}), hf.params, hf.results).
			WithName(hf.name).
			Export(hf.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}
