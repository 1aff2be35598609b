package wasm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/ruled-dev/ruled/host/wasm/internal/instrument"

	"github.com/ruled-dev/ruled/abi"
)

const (
	fnABIVersion = iota
	fnAlloc
	fnDescribe
	fnConfigure
	fnRelease
	fnWhen
	fnAct
	fnResult
	fnError
	nFns
)

// exportNames is indexed by the fn* constants.
var exportNames = [nFns]string{
	abi.ExportABIVersion, abi.ExportAlloc, abi.ExportDescribe, abi.ExportConfigure,
	abi.ExportRelease, abi.ExportWhen, abi.ExportAct, abi.ExportResult, abi.ExportError,
}

const maxErrorText = 64 << 10

// instance is one instantiation of a module. It is single-threaded: the pool
// gives it to one call at a time.
type instance struct {
	m *Module
	// idleSince is when it last went back to the pool (Module.reapIdle).
	idleSince time.Time
	mod       api.Module
	mem       api.Memory
	fuel      api.MutableGlobal
	stop      api.MutableGlobal // set to stop a running call; see expire
	grow      api.Global        // the last memory.grow's result
	// slots counts the slots of the guest's frames live
	// (Limits.StackBytes); reset before each call.
	slots api.MutableGlobal
	// next is the fuel at which the guest next goes through its checkpoint
	// (instrument.CheckpointUnits); set with the fuel before each call.
	next api.MutableGlobal
	// stopSet is set when stop holds a non-zero value the next call must
	// clear.
	stopSet bool
	// fns are looked up once: an export lookup per call costs 1.9 µs.
	fns   [nFns]api.Function
	stack [3]uint64
	cs    callState

	buf, bufCap uint32 // the guest's exchange buffer
	scratch     []byte
	handles     map[uint64]uint32 // host handle id -> guest handle
	relSeen     int
	// bad marks an instance a failed invoke may have corrupted; the pool
	// closes it instead of reusing it.
	bad bool

	out, errw *lineWriter
	// lastWords is what the guest said of its own trap during the call:
	// an AssemblyScript abort's "abort: <message> at <file:line:col>"
	// (logged through ruled_log before its unreachable), or a Go runtime's
	// "panic: ..." line on stderr. A trap's error carries it instead of
	// wazero's "wasm error: unreachable" and stack, which tell an operator
	// nothing the plugin did not say better.
	lastWords string
	// deadline is when the call in progress must end: a host call that
	// waits (outbound HTTP) waits no longer. httpResp is the encoded
	// response of the call's last http_request, for http_response.
	deadline time.Time
	httpResp []byte
	// hostSaid is why a host service refused or failed the call's last
	// request (outbound HTTP): the guest gets only a status, the operator
	// gets this beside the plugin's error.
	hostSaid string
	// What the running call logged (allowLog), reset at each call.
	logLines, logBytes int
	logCut             bool

	// The deadline timer is created once and re-armed per call: a timer per
	// call would allocate. mu orders the timer's callback against the call
	// that armed it, and fired hands each fire back to that call, so no fire
	// outlives the call it was armed for.
	timer   *time.Timer
	fired   chan struct{}
	mu      sync.Mutex
	armed   bool
	expired bool
	stopped time.Time // when expire set the stop global
}

func (m *Module) newInstance(ctx context.Context) (*instance, error) {
	in := &instance{m: m, handles: map[uint64]uint32{}}
	in.out = newLineWriter(m.r.log, m.name, "stdout")
	in.errw = newLineWriter(m.r.log, m.name, "stderr")
	in.errw.said = in.heard
	in.out.allow, in.errw.allow = in.allowLog, in.allowLog
	mc := wazero.NewModuleConfig().WithName("").WithStartFunctions().
		WithStdout(in.out).WithStderr(in.errw)
	// Its memory a reservation of its maximum (linmem.go): a grow never
	// holds the process.
	mod, err := m.r.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, memoryAllocator), m.compiled, mc)
	if err != nil {
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	in.mod, in.mem = mod, mod.Memory()
	m.live.Add(1)
	m.r.live.Add(1)
	in.fired = make(chan struct{}, 1)
	in.timer = time.AfterFunc(time.Hour, in.expire)
	in.timer.Stop()
	in.cs = callState{Context: context.Background(), in: in}
	// discard undoes this function on failure; the caller still holds the
	// pool slot and gives it back.
	discard := func(err error) (*instance, error) {
		in.close()
		m.live.Add(-1)
		m.r.live.Add(-1)
		return nil, err
	}
	if m.fuelExport != "" {
		in.fuel, _ = mod.ExportedGlobal(m.fuelExport).(api.MutableGlobal)
		in.stop, _ = mod.ExportedGlobal(m.stopExport).(api.MutableGlobal)
		in.grow = mod.ExportedGlobal(m.growExport)
		in.slots, _ = mod.ExportedGlobal(m.stackExport).(api.MutableGlobal)
		in.next, _ = mod.ExportedGlobal(m.nextExport).(api.MutableGlobal)
		if in.fuel == nil || in.stop == nil || in.grow == nil || in.slots == nil || in.next == nil {
			return discard(fmt.Errorf("instrumented module lost its fuel, stop, grow or stack global"))
		}
	}
	for i, name := range exportNames {
		in.fns[i] = mod.ExportedFunction(name)
	}
	// The module's start section, which the instrumenter turned into an
	// export so that it runs here, under the start-up budget, rather than
	// unbounded inside InstantiateModule.
	if m.startExport != "" {
		if err := in.invoke(ctx, mod.ExportedFunction(m.startExport), m.limits.InitTimeout, 0, nil); err != nil {
			return discard(atStage("the start section", err))
		}
	}
	if f := mod.ExportedFunction(abi.ExportInitialize); f != nil {
		if err := in.invoke(ctx, f, m.limits.InitTimeout, 0, nil); err != nil {
			return discard(atStage(abi.ExportInitialize, err))
		}
	}
	return in, nil
}

func (in *instance) close() {
	in.mu.Lock()
	in.armed = false
	in.mu.Unlock()
	in.timer.Stop()
	in.mod.Close(context.Background())
	in.out.Flush()
	in.errw.Flush()
}

// fuelHeadroom is how far past its deadline a call's default fuel budget
// reaches, at the calibrated rate of the slowest kind of guest work
// (Calibration): the timer stops a call at its deadline, and the fuel only
// while the timer cannot run — a garbage collection waits for compiled
// guest code, which cannot be preempted, and holds every other goroutine
// meanwhile. So a runaway stops within 1.5× its deadline whatever it does
// (fuelHeadroom × the slowest kind; faster kinds run out of fuel sooner),
// and code that does the cheapest kind of work at full speed runs out of
// fuel before its deadline: ~0.3× of it for calls of functions with many
// locals, on this machine.
const fuelHeadroom = 1.5

// invoke calls f under a deadline d and a fuel budget (0: derived from d;
// negative: unlimited, the deadline alone). Any error it returns is a
// *CallError and means the instance must be replaced.
func (in *instance) invoke(ctx context.Context, f api.Function, d time.Duration, fuel int64, stack []uint64) error {
	if f == nil {
		in.bad = true
		return &CallError{Plugin: in.m.name, Cause: CauseABI, Text: "missing export"}
	}
	if in.fuel == nil { // unprotected (benchmarks only)
		if err := f.CallWithStack(ctx, stack); err != nil {
			in.bad = true
			return &CallError{Plugin: in.m.name, Cause: CauseTrap, Text: err.Error(), Err: err}
		}
		return nil
	}
	switch {
	case fuel == 0:
		fuel = int64(max(d.Seconds(), 0.001) * in.m.r.calib.UnitsPerSecond * fuelHeadroom)
	case fuel < 0:
		fuel = math.MaxInt64
	}
	in.mu.Lock()
	in.armed, in.expired = true, false
	if in.stopSet {
		in.stop.Set(0)
		in.stopSet = false
	}
	in.mu.Unlock()
	in.fuel.Set(uint64(fuel))
	in.next.Set(uint64(max(fuel-instrument.CheckpointUnits, 0)))
	in.slots.Set(0) // a call that trapped left its frames counted
	in.lastWords, in.httpResp, in.hostSaid = "", nil, ""
	in.logLines, in.logBytes, in.logCut = 0, 0, false
	begun := time.Now()
	in.deadline = begun.Add(d)
	in.timer.Reset(d)
	err := f.CallWithStack(ctx, stack)
	in.mu.Lock()
	in.armed = false
	expired, stopped := in.expired, in.stopped
	in.mu.Unlock()
	if !in.timer.Stop() {
		<-in.fired // it fired during the call: wait until expire is done
	}
	if err == nil {
		return nil
	}
	in.bad = true
	ce := &CallError{Plugin: in.m.name, Cause: CauseTrap, Text: err.Error(), Err: err}
	var exit *sys.ExitError
	switch {
	case expired:
		// Measured from the deadline, not from when the timer told the
		// guest to stop: a timer held up (no P free, a collection
		// waiting for the guest) is part of the overrun.
		ce.Cause = CauseDeadline
		ce.Overrun = max(time.Since(begun)-d, 0)
		ce.Text = fmt.Sprintf("deadline of %v passed; the guest stopped %v after it (%v after it was told to)",
			d, ce.Overrun.Round(time.Microsecond), time.Since(stopped).Round(time.Microsecond))
	case strings.Contains(err.Error(), "stack overflow"):
		// wazero's own bound (400 MB compiled, 2,000 frames interpreted):
		// reached first by frames whose operand stacks hold many values
		// across a call, which the slots count does not see.
		ce.Cause = CauseMemory
		ce.Text = "call stack overflow (the runtime's bound; unbounded recursion?)"
	case in.slots != nil && int64(int32(in.slots.Get())) > int64(in.m.stackSlots):
		ce.Cause = CauseMemory
		ce.Text = fmt.Sprintf("call stack past its bound of %d KiB (unbounded recursion?)", uint64(in.m.stackSlots)*8>>10)
	case int64(in.fuel.Get()) <= 0:
		ce.Cause = CauseFuel
		took := time.Since(begun)
		ce.Text = fmt.Sprintf("used its budget of %d units in %v (deadline %v)", fuel, took.Round(time.Microsecond), d)
		if took > d {
			ce.Overrun = took - d
		}
	case int32(in.grow.Get()) == -1:
		ce.Cause = CauseMemory
		ce.Text = fmt.Sprintf("memory.grow refused at %d of %d pages; %v", in.mem.Size()/65536, in.m.maxPages, err)
	case errors.As(err, &exit):
		ce.Text = fmt.Sprintf("exited with code %d", exit.ExitCode())
		if in.lastWords != "" {
			ce.Text = in.lastWords + " (exited with code " + fmt.Sprint(exit.ExitCode()) + ")"
		}
	case in.lastWords != "":
		ce.Text = in.lastWords // the runtime's trap text and stack stay in ce.Err
	}
	return ce
}

// heard keeps the first line in which the guest explains its own trap
// (lastWords): an AssemblyScript abort logged at error, or a Go runtime
// panic or fatal error printed on stderr.
func (in *instance) heard(line string) {
	if in.lastWords != "" {
		return
	}
	for _, p := range [...]string{"abort: ", "panic: ", "fatal error: "} {
		if strings.HasPrefix(line, p) {
			in.lastWords = line
			return
		}
	}
}

// hostCallUnits is the least fuel a host call costs, however quickly it
// returns: a loop of cheap host calls (now, a log line dropped by its
// bound) spends its budget too.
const hostCallUnits = 100

// overdue reports whether the call in progress is past its deadline, or
// was told to stop: a host call it makes now is refused.
func (in *instance) overdue() bool {
	if in.deadline.IsZero() {
		return false
	}
	if time.Now().After(in.deadline) {
		return true
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.expired
}

// charge takes a host call's cost from the guest's fuel: the units the
// slowest kind of guest code burns in the time the call took
// (Calibration), at least hostCallUnits. Host calls cost no fuel before
// (issue 37): a guest looping on kv_set reached a checkpoint, where the
// stop flag is read, only every instrument.CheckpointUnits of its own
// instructions — each loop pass a millisecond-long store transaction and
// a few units — and ran on for minutes past its deadline. Charged, a
// call's budget is spent within fuelHeadroom × its deadline whatever it
// spends its time on, and a charge that takes the fuel below the next
// checkpoint makes the guest's next check go through it. It runs on the
// guest's goroutine while the guest waits for the host call to return,
// so it does not race the guest's own read-modify-write of the fuel.
func (in *instance) charge(took time.Duration) {
	units := max(int64(took.Seconds()*in.m.r.calib.UnitsPerSecond), hostCallUnits)
	in.fuel.Set(uint64(int64(in.fuel.Get()) - units))
}

// stopNow is expire for a host call made past the deadline, before the
// deadline's timer has run (it may be held up): the stop flag is set, and
// the next checkpoint is now, so the guest traps at its next check.
func (in *instance) stopNow() {
	in.mu.Lock()
	if in.armed && !in.expired {
		in.expired, in.stopped = true, time.Now()
		in.stop.Set(math.MaxInt64)
		in.stopSet = true
	}
	in.mu.Unlock()
	in.next.Set(math.MaxInt64)
}

// expire runs on the timer's goroutine when a call's deadline passes. It
// sets the stop global, which the guest only reads, so the guest traps at
// its next checkpoint (instrument.CheckpointUnits later at most). (Zeroing
// the fuel instead races with the guest's own decrement and was measured to
// take up to seconds.)
func (in *instance) expire() {
	in.mu.Lock()
	if in.armed && !in.expired {
		in.expired, in.stopped = true, time.Now()
		in.stop.Set(math.MaxInt64)
		in.stopSet = true
	}
	in.mu.Unlock()
	in.fired <- struct{}{}
}

// output copies the bytes a packed ptr|len names out of guest memory: what
// (a "result", an "error text", a "describe document") for its errors.
func (in *instance) output(what string, packed uint64, limit int) ([]byte, error) {
	ptr, n := abi.Unpack(packed)
	if n == 0 {
		return nil, nil
	}
	if int(n) > limit {
		return nil, &CallError{Plugin: in.m.name, Cause: CauseABI, Text: fmt.Sprintf("%s of %d bytes over the limit of %d", what, n, limit)}
	}
	b, ok := in.mem.Read(ptr, n)
	if !ok {
		in.bad = true
		return nil, &CallError{Plugin: in.m.name, Cause: CauseABI,
			Text: fmt.Sprintf("%s at [%#x, +%d) is outside the guest's %d bytes of memory", what, ptr, n, in.mem.Size())}
	}
	return append([]byte(nil), b...), nil
}

// errorText fetches the guest's error text, cut at maxErrorText.
func (in *instance) errorText(ctx context.Context) (string, error) {
	stack := in.stack[:1]
	if err := in.invoke(ctx, in.fns[fnError], in.m.limits.Timeout, in.m.limits.Fuel, stack); err != nil {
		return "", err
	}
	ptr, n := abi.Unpack(stack[0])
	if n > maxErrorText {
		n = maxErrorText
	}
	b, err := in.output("error text", abi.Pack(ptr, n), maxErrorText)
	return string(b), err
}

// input writes parts into the guest's exchange buffer, growing it through
// ruled_alloc when they do not fit, and returns where they start.
func (in *instance) input(ctx context.Context, parts ...[]byte) (uint32, uint32, error) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if uint64(n) > math.MaxUint32/2 {
		return 0, 0, &CallError{Plugin: in.m.name, Cause: CauseABI, Text: "input too large"}
	}
	if uint32(n) > in.bufCap {
		stack := in.stack[:1]
		stack[0] = uint64(n)
		if err := in.invoke(ctx, in.fns[fnAlloc], in.m.limits.Timeout, 0, stack); err != nil {
			return 0, 0, err
		}
		ptr := api.DecodeU32(stack[0])
		if ptr == 0 {
			// The ABI's "cannot": the guest has no room for the input
			// within its memory cap. Not a broken contract (an input near
			// the event bound meets a plugin's small cap); the instance,
			// its memory perhaps fragmented, is replaced all the same.
			in.bad = true
			return 0, 0, &CallError{Plugin: in.m.name, Cause: CauseMemory,
				Text: fmt.Sprintf("%s(%d) answered 0: the plugin cannot hold an input of %d bytes within its memory (memory-pages raises its cap)", abi.ExportAlloc, n, n)}
		}
		if uint64(ptr)+uint64(n) > uint64(in.mem.Size()) {
			in.bad = true
			return 0, 0, &CallError{Plugin: in.m.name, Cause: CauseABI,
				Text: fmt.Sprintf("%s(%d) answered %#x, outside the guest's %d bytes of memory", abi.ExportAlloc, n, ptr, in.mem.Size())}
		}
		in.buf, in.bufCap = ptr, uint32(n)
	}
	off := in.buf
	for _, p := range parts {
		if !in.mem.Write(off, p) {
			return 0, 0, &CallError{Plugin: in.m.name, Cause: CauseABI, Text: "exchange buffer outside memory"}
		}
		off += uint32(len(p))
	}
	return in.buf, uint32(n), nil
}

// dropReleased tells the guest to forget handles closed since this
// instance last looked.
func (in *instance) dropReleased() {
	m := in.m
	if int(m.nReleased.Load()) == in.relSeen {
		return
	}
	m.mu.Lock()
	rel := m.released[in.relSeen:]
	in.relSeen = len(m.released)
	m.mu.Unlock()
	for _, id := range rel {
		gh, ok := in.handles[id]
		if !ok {
			continue
		}
		delete(in.handles, id)
		stack := in.stack[:1]
		stack[0] = uint64(gh)
		// A failure here is the guest's business; the handle is gone either way.
		_ = in.invoke(context.Background(), in.fns[fnRelease], m.limits.Timeout, m.limits.Fuel, stack)
	}
}
