package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/wasm/internal/instrument"
	"github.com/ruled-dev/ruled/internal/regular"
)

// MaxModuleSize bounds a module file LoadFile reads (and the daemon
// loads): the first-party plugins are 1-7 MB; a file that is not a
// regular file is refused too (package regular).
const MaxModuleSize = 64 << 20

// Limits bound what one plugin may use. Zero fields take the defaults.
type Limits struct {
	// Timeout is a call's deadline. default: 1s.
	Timeout time.Duration
	// Fuel is a call's budget in units of work (a loop iteration, a
	// function entry weighted by its locals, bulk memory by its length;
	// see package instrument); it makes a limit deterministic where a
	// deadline is not. default: 0, derived from Timeout at the rate
	// NewRuntime measured for the slowest kind of work on this machine
	// (Calibration), with headroom: the backstop that stops a runaway
	// within 1.5× its deadline while a garbage collection keeps the
	// deadline's timer from running. -1: unlimited, the deadline alone.
	Fuel int64
	// MemoryPages caps the plugin's linear memory, in 64 KiB pages.
	// default: 512 (32 MiB).
	MemoryPages uint32
	// StackBytes bounds a call's call stack, as the instrumenter counts it:
	// 8 bytes a parameter and local of each frame live, and 32 of its own.
	// A call deeper than that fails with CauseMemory. Values a frame keeps
	// on its operand stack across a call are not counted, so a frame that
	// holds many takes more than its count, up to wazero's own bound (400
	// MB compiled, 2,000 frames interpreted), which fails the call with
	// CauseMemory too. default: a quarter of the memory cap (8 MiB).
	StackBytes int
	// MaxResult caps an action's result in bytes. default: 1 MiB.
	MaxResult int
	// Instances caps the instances kept for concurrent calls. default: 2.
	Instances int
	// InitTimeout bounds instance start-up (_initialize), which runs outside
	// any call's budget. default: 10s.
	InitTimeout time.Duration
	// IdleTimeout is how long an instance may wait idle before it is
	// closed, beyond the one the module keeps warm: a burst that started
	// Instances of them does not hold their memory for good (a Go
	// plugin's instance holds 3-5 MiB). default: 1m; -1: never.
	IdleTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = time.Second
	}
	if l.MemoryPages == 0 {
		l.MemoryPages = 512
	}
	if l.StackBytes <= 0 {
		l.StackBytes = int(l.MemoryPages) * 65536 / 4
	}
	if l.MaxResult <= 0 {
		l.MaxResult = 1 << 20
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = time.Minute
	}
	if l.Instances <= 0 {
		l.Instances = 2
	}
	if l.InitTimeout <= 0 {
		l.InitTimeout = 10 * time.Second
	}
	return l
}

// Options are how a module is loaded.
type Options struct {
	// Name is what rules, logs and kv scopes call the plugin.
	// default: the file name without ".wasm" (LoadFile), else "plugin".
	Name string
	// Grant lists the capabilities the operator grants. default: none.
	Grant  []abi.Capability
	Limits Limits
	// Compiled, when set, is called once the module's compilation is
	// over, whatever its outcome, before its first instance starts: a
	// caller bounding its loads by the machine's cores lets the next
	// compile begin, because a start-up (a start section, _initialize)
	// is bounded by its own InitTimeout, not by the cores (issue 38: five
	// spinning starts, two at a time, held readiness 30 s).
	Compiled func()

	// unprotected skips instrumentation: no fuel, no deadline, no memory
	// cap. Only the benchmark that prices runaway protection sets it.
	unprotected bool
}

const maxDescribe = 1 << 20

// Timings are how long the stages of a load took.
type Timings struct {
	Compile     time.Duration // instrument + compile (or load from cache)
	Instantiate time.Duration // first instance, _initialize included
}

// LoadFile reads a module from disk and loads it.
func (r *Runtime) LoadFile(ctx context.Context, path string, o Options) (*Module, error) {
	b, err := regular.ReadFile(path, MaxModuleSize)
	if err != nil {
		return nil, fmt.Errorf("wasm: %w", err)
	}
	if o.Name == "" {
		o.Name = strings.TrimSuffix(filepath.Base(path), ".wasm")
	}
	return r.Load(ctx, b, o)
}

// Load checks and loads a module: instrument it, compile it (through the
// cache), check its imports against what the host provides and the grant,
// start a first instance, check its ABI version (first, so a module built
// for another ABI gets that error rather than a confusing one), check its
// exports, and read its description. The first instance is kept in the pool.
func (r *Runtime) Load(ctx context.Context, wasm []byte, o Options) (*Module, error) {
	if o.Name == "" {
		o.Name = "plugin"
	}
	if o.Compiled != nil {
		compiled := o.Compiled
		var once sync.Once
		done := func() { once.Do(compiled) }
		defer done() // a load that ends before its first instance
		o.Compiled = done
	}
	sum := sha256.Sum256(wasm)
	m := &Module{
		r: r, name: o.Name, digest: hex.EncodeToString(sum[:]), size: len(wasm),
		limits: o.Limits.withDefaults(), logs: r.pluginLog(o.Name),
	}
	for _, c := range o.Grant {
		m.grant |= capBit(c)
	}
	m.idle = make(chan *instance, m.limits.Instances)
	m.slots = make(chan struct{}, m.limits.Instances)

	t0 := time.Now()
	code := wasm
	if !o.unprotected {
		m.stackSlots = uint32(min(max(m.limits.StackBytes/8, 1), math.MaxInt32))
		ins, err := instrument.Instrument(wasm, instrument.Options{MemoryPages: m.limits.MemoryPages,
			StackSlots: m.stackSlots})
		if err != nil {
			return nil, m.loadErr(err)
		}
		m.fuelExport, m.stopExport, m.growExport = ins.FuelExport, ins.StopExport, ins.GrowExport
		m.stackExport, m.nextExport, m.startExport = ins.StackExport, ins.NextExport, ins.StartExport
		m.maxPages = ins.MaxPages
		code = ins.Bytes
	}
	quiet := r.compileNotice(o.Name, len(wasm))
	key, cm, err := r.compile(ctx, code)
	quiet()
	if err != nil {
		return nil, m.loadErr(fmt.Errorf("compile: %w", err))
	}
	m.compiled, m.codeKey = cm, key
	m.timings.Compile = time.Since(t0)
	if err := m.checkImports(); err != nil {
		r.releaseCompiled(key)
		return nil, m.loadErr(err)
	}
	if err := checkSignature(cm.ExportedFunctions(), abi.ExportABIVersion); err != nil {
		r.releaseCompiled(key)
		return nil, m.loadErr(fmt.Errorf("not a ruled plugin: %w", err))
	}

	if o.Compiled != nil {
		o.Compiled()
	}
	t1 := time.Now()
	m.slots <- struct{}{}
	in, err := m.newInstance(ctx)
	if err != nil {
		<-m.slots
		r.releaseCompiled(key)
		return nil, m.loadErr(err)
	}
	m.timings.Instantiate = time.Since(t1)
	m.busy.Add(1) // as acquire would have
	if err := m.handshake(ctx, in); err != nil {
		m.closeInstance(in)
		r.releaseCompiled(key)
		return nil, m.loadErr(err)
	}
	m.release(in)
	return m, nil
}

func (m *Module) loadErr(err error) error { return fmt.Errorf("wasm: plugin %s: %w", m.name, err) }

// checkImports refuses a module that imports anything the host does not
// provide, or a host function whose capability is not granted: better a
// clear error at load than a failed call in the middle of a run.
func (m *Module) checkImports() error {
	for _, d := range m.compiled.ImportedFunctions() {
		mod, name, _ := d.Import()
		switch mod {
		case "wasi_snapshot_preview1":
			if !m.r.wasi[name] {
				return fmt.Errorf("imports %s.%s, which the host does not provide", mod, name)
			}
		case abi.ImportModule:
			need, ok := abi.ImportCapability(name)
			if !ok {
				return fmt.Errorf("imports %s.%s, which ABI v%s does not define", mod, name, abi.VersionString(abi.Version))
			}
			if need != "" && !m.granted(need) {
				return &NotGrantedError{Capability: need, What: "imports " + mod + "." + name}
			}
		default:
			return fmt.Errorf("imports %s.%s, which the host does not provide", mod, name)
		}
	}
	if len(m.compiled.ImportedMemories()) > 0 {
		return fmt.Errorf("imports a memory, which the host does not provide")
	}
	return nil
}

var exportSigs = map[string][2][]api.ValueType{
	abi.ExportABIVersion: {nil, {i32t}},
	abi.ExportAlloc:      {{i32t}, {i32t}},
	abi.ExportDescribe:   {nil, {i64t}},
	abi.ExportConfigure:  {{i32t, i32t}, {i64t}},
	abi.ExportRelease:    {{i32t}, nil},
	abi.ExportWhen:       {{i32t, i32t, i32t}, {i32t}},
	abi.ExportAct:        {{i32t, i32t, i32t}, {i32t}},
	abi.ExportResult:     {nil, {i64t}},
	abi.ExportError:      {nil, {i64t}},
}

func checkSignature(defs map[string]api.FunctionDefinition, name string) error {
	d, ok := defs[name]
	if !ok {
		return fmt.Errorf("no export %s", name)
	}
	want := exportSigs[name]
	if !slices.Equal(d.ParamTypes(), want[0]) || !slices.Equal(d.ResultTypes(), want[1]) {
		return fmt.Errorf("export %s has signature %v -> %v, want %v -> %v", name,
			typeNames(d.ParamTypes()), typeNames(d.ResultTypes()), typeNames(want[0]), typeNames(want[1]))
	}
	return nil
}

func typeNames(ts []api.ValueType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = api.ValueTypeName(t)
	}
	return out
}

// handshake checks the ABI version, then the other exports, then reads and
// checks the description.
func (m *Module) handshake(ctx context.Context, in *instance) error {
	var stack [1]uint64
	if err := in.invoke(ctx, in.fns[fnABIVersion], m.limits.InitTimeout, 0, stack[:]); err != nil {
		return atStage(abi.ExportABIVersion, err)
	}
	v := api.DecodeU32(stack[0])
	m.abiVersion = v
	if v>>16 != abi.Major || v&0xffff > abi.Minor {
		return fmt.Errorf("built for ABI v%s; this host speaks v%s (same major, minor up to %d)",
			abi.VersionString(v), abi.VersionString(abi.Version), abi.Minor)
	}
	defs := m.compiled.ExportedFunctions()
	var missing []string
	for _, name := range exportNames {
		if err := checkSignature(defs, name); err != nil {
			missing = append(missing, err.Error())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("incomplete ABI v%s exports: %s", abi.VersionString(v), strings.Join(missing, "; "))
	}
	if m.compiled.ExportedMemories()[abi.ExportMemory] == nil {
		return fmt.Errorf("no exported memory %q", abi.ExportMemory)
	}
	if err := in.invoke(ctx, in.fns[fnDescribe], m.limits.InitTimeout, 0, stack[:]); err != nil {
		return atStage(abi.ExportDescribe, err)
	}
	b, err := in.output("describe document", stack[0], maxDescribe)
	if err != nil {
		return atStage(abi.ExportDescribe, err)
	}
	if err := json.Unmarshal(b, &m.desc); err != nil {
		return fmt.Errorf("%s: not a valid describe document: %w", abi.ExportDescribe, err)
	}
	return m.checkDescriptor()
}

func (m *Module) checkDescriptor() error {
	m.funcs = map[string]abi.Kind{}
	for _, f := range m.desc.Functions {
		if f.Name == "" {
			return fmt.Errorf("describe: a function without a name")
		}
		if _, dup := m.funcs[f.Name]; dup {
			return fmt.Errorf("describe: function %q listed twice", f.Name)
		}
		switch f.Kind {
		case "condition":
			m.funcs[f.Name] = abi.KindCondition
		case "action":
			m.funcs[f.Name] = abi.KindAction
		default:
			return fmt.Errorf("describe: function %q has kind %q, want condition or action", f.Name, f.Kind)
		}
		for _, c := range f.Needs {
			if capBit(c) == 0 {
				return fmt.Errorf("describe: function %q needs unknown capability %q", f.Name, c)
			}
			if !m.granted(c) {
				return &NotGrantedError{Capability: c, What: fmt.Sprintf("function %q", f.Name)}
			}
		}
	}
	return nil
}

func capBit(c abi.Capability) uint8 {
	for i, k := range abi.Capabilities {
		if k == c {
			return 1 << i
		}
	}
	return 0
}

// shared is one compiled module and how many loaded Modules use it.
//
// wazero keys compiled code by the module's hash inside the runtime: two
// CompileModule calls on the same bytes share it, and closing either one
// deletes it for both. A plugin reloaded back to bytes it had before (a
// revert, a pinned older digest, two loads of one file) must therefore reuse
// the first CompiledModule and close it only when the last user is gone.
type shared struct {
	cm   wazero.CompiledModule
	refs int
}

// compileNotice says, once a compilation has run for slowCompile, that
// it is still running — a 7 MB Go module compiles for seconds on a cold
// cache, many more on a small arm device, and a daemon that prints nothing
// meanwhile looks hung — and when it ended. The returned func ends the
// wait (its timer's goroutine is the runtime's: time.AfterFunc, stopped).
func (r *Runtime) compileNotice(name string, size int) (done func()) {
	began := time.Now()
	var said atomic.Bool
	t := time.AfterFunc(r.slowCompile, func() {
		said.Store(true)
		r.log.Info("compiling a plugin; the next start reads it from the compilation cache",
			"plugin", name, "size", fmt.Sprintf("%.1f MB", float64(size)/1e6), "so-far", time.Since(began).Round(100*time.Millisecond))
	})
	return func() {
		if !t.Stop() && said.Load() {
			r.log.Info("compiled", "plugin", name, "took", time.Since(began).Round(time.Millisecond))
		}
	}
}

// compile compiles code through the cache, or reuses the compiled module of
// identical code already loaded. wazero has panicked on malformed modules
// that passed instrumentation (found by fuzzing: a call to a function whose
// type index was out of range, now refused by instrument); a plugin file
// must never take the daemon down, so a panic here becomes the module's
// load error.
func (r *Runtime) compile(ctx context.Context, code []byte) (key [32]byte, cm wazero.CompiledModule, err error) {
	key = sha256.Sum256(code)
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.compiled[key]; ok {
		s.refs++
		return key, s.cm, nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("wazero panicked: %v", p)
		}
	}()
	if cm, err = r.rt.CompileModule(ctx, code); err != nil {
		return key, nil, err
	}
	r.compiled[key] = &shared{cm: cm, refs: 1}
	return key, cm, nil
}

// releaseCompiled drops a Module's use of its compiled code, closing it
// with the last.
func (r *Runtime) releaseCompiled(key [32]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.compiled[key]
	if !ok {
		return
	}
	if s.refs--; s.refs == 0 {
		delete(r.compiled, key)
		s.cm.Close(context.Background())
	}
}
