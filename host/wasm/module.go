package wasm

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/ruled-dev/ruled/abi"
)

// Module is a loaded plugin: its compiled code, its description, and a pool
// of instances.
type Module struct {
	r          *Runtime
	name       string
	digest     string
	size       int
	abiVersion uint32
	desc       abi.Descriptor
	funcs      map[string]abi.Kind
	grant      uint8
	limits     Limits
	compiled   wazero.CompiledModule
	codeKey    [32]byte // the compiled code's key in Runtime.compiled
	codeGone   atomic.Bool
	fuelExport string
	stopExport string
	growExport string
	// stackExport names the slots global (instrument.Module.StackExport);
	// stackSlots is its bound (Limits.StackBytes / 8).
	stackExport string
	stackSlots  uint32
	nextExport  string // the checkpoint threshold (instrument.Module.NextExport)
	startExport string // the start section's function, "" for none
	maxPages    uint32
	timings     Timings

	// idle holds instances ready for a call; slots holds one token per live
	// instance, so at most Limits.Instances exist.
	idle  chan *instance
	slots chan struct{}
	// reaper closes instances idle past Limits.IdleTimeout (reapIdle); armed
	// while more than one instance is idle, stopped by Close.
	reapMu  sync.Mutex
	reaper  *time.Timer
	reaping bool

	closed   atomic.Bool
	live     atomic.Int64
	busy     atomic.Int64
	peakBusy atomic.Int64
	denied   atomic.Uint64
	// logs bounds and counts the plugin's log lines (loglimit.go),
	// across its instances and its versions.
	logs     *pluginLog
	failed   [len(causeNames)]atomic.Uint64 // failed calls by Cause
	replaced atomic.Uint64
	reaped   atomic.Uint64 // instances closed for idling (reapIdle)

	mu       sync.Mutex
	released []uint64 // host handle ids closed; instances drop them lazily
	// nReleased is len(released), read without mu on every acquire so that
	// the common case (nothing new) takes no lock.
	nReleased atomic.Int64
}

// Name is what rules call the plugin.
func (m *Module) Name() string { return m.name }

// Digest is the hex sha256 of the module's bytes as shipped: what a pending
// step pins and what the content-addressed store is keyed by.
func (m *Module) Digest() string { return m.digest }

// Size is the module's size in bytes.
func (m *Module) Size() int { return m.size }

// ABIVersion is what the module's handshake answered.
func (m *Module) ABIVersion() uint32 { return m.abiVersion }

// Descriptor is the module's description of itself.
func (m *Module) Descriptor() abi.Descriptor { return m.desc }

// Kind says whether name is a condition or an action; ok is false when the
// module has no such function.
func (m *Module) Kind(name string) (k abi.Kind, ok bool) {
	k, ok = m.funcs[name]
	return k, ok
}

// Granted lists the capabilities the module was loaded with.
func (m *Module) Granted() []abi.Capability {
	var out []abi.Capability
	for _, c := range abi.Capabilities {
		if m.granted(c) {
			out = append(out, c)
		}
	}
	return out
}

// Limits are the module's limits, defaults filled in.
func (m *Module) Limits() Limits { return m.limits }

// Timings are how long loading took.
func (m *Module) Timings() Timings { return m.timings }

// MaxPages is the memory cap the module was instrumented with.
func (m *Module) MaxPages() uint32 { return m.maxPages }

// Live is the number of instances alive; PeakBusy the most that served
// calls at once; Replaced how many were thrown away after a failed call;
// Denied how many host calls were refused.
func (m *Module) Live() int        { return int(m.live.Load()) }
func (m *Module) PeakBusy() int    { return int(m.peakBusy.Load()) }
func (m *Module) Replaced() uint64 { return m.replaced.Load() }
func (m *Module) Denied() uint64   { return m.denied.Load() }

// Reaped is how many instances were closed after idling past
// Limits.IdleTimeout.
func (m *Module) Reaped() uint64 { return m.reaped.Load() }

// LogDropped is how many of the plugin's log lines were dropped past its
// bounds (per call and per second; see loglimit.go), by all its versions.
func (m *Module) LogDropped() uint64 { return m.logs.dropped.Load() }

// Declared is every capability the module's functions say they need, once
// each, in the order they first appear: what `ruled call` and ruletest
// grant a module by default.
func (m *Module) Declared() []abi.Capability {
	var caps []abi.Capability
	for _, f := range m.desc.Functions {
		for _, c := range f.Needs {
			if !slices.Contains(caps, c) {
				caps = append(caps, c)
			}
		}
	}
	return caps
}

// Failures counts this module's failed calls by cause (Cause.String),
// since it was loaded: a limit that refused (deadline, fuel, memory, the
// result size as "abi violation"), a trap, or the plugin's own error.
// Causes that never happened are left out.
func (m *Module) Failures() map[string]uint64 {
	out := map[string]uint64{}
	for c := range m.failed {
		if n := m.failed[c].Load(); n > 0 {
			out[Cause(c).String()] = n
		}
	}
	return out
}
func (m *Module) granted(c abi.Capability) bool {
	b := capBit(c)
	return b != 0 && m.grant&b == b
}

// Close stops serving: idle instances close now, busy ones when their call
// returns. Calls that have not yet got an instance fail.
func (m *Module) Close(ctx context.Context) error {
	if m.closed.Swap(true) {
		return nil
	}
	m.reapMu.Lock()
	if m.reaper != nil {
		m.reaper.Stop()
	}
	m.reapMu.Unlock()
	m.drainIdle()
	if m.live.Load() == 0 {
		m.releaseCode()
	}
	return nil
}

// errClosed is acquire's answer from a module that was closed (replaced);
// a handle that follows a Slot retries on the slot's current module.
var errClosed = errors.New("module closed")

// acquire takes an idle instance, or starts one if the pool has room, or
// waits for one to come back.
func (m *Module) acquire(ctx context.Context) (*instance, error) {
	var in *instance
	select {
	case in = <-m.idle:
	default:
		if m.closed.Load() {
			return nil, errClosed
		}
		select {
		case in = <-m.idle:
		case m.slots <- struct{}{}:
			var err error
			if in, err = m.newInstance(ctx); err != nil {
				<-m.slots
				if m.closed.Load() {
					return nil, errClosed
				}
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if m.closed.Load() {
		m.busy.Add(1) // release undoes it
		m.release(in)
		return nil, errClosed
	}
	if b := m.busy.Add(1); b > m.peakBusy.Load() {
		m.peakBusy.Store(b) // a racy max is fine for a statistic
	}
	in.dropReleased()
	if in.bad {
		// A release trapped on it: it may be corrupt. Replace it.
		m.release(in)
		return m.acquire(ctx)
	}
	return in, nil
}

// release returns an instance to the pool, or closes it when it is bad (a
// call on it failed in a way that may have corrupted it) or the module is
// closing.
func (m *Module) release(in *instance) {
	m.busy.Add(-1)
	if in.bad {
		m.replaced.Add(1)
	}
	if in.bad || m.closed.Load() {
		m.closeInstance(in)
		return
	}
	in.idleSince = time.Now()
	m.idle <- in
	// Close may have drained the idle instances between the check above and
	// the send: the instance would sit in a closed module's pool for good.
	// Close sets closed before it drains, so seeing it false here means any
	// drain still to come will find the instance.
	if m.closed.Load() {
		m.drainIdle()
		return
	}
	if len(m.idle) > 1 {
		m.armReaper()
	}
}

// armReaper schedules reapIdle after the idle timeout, unless it is
// scheduled already or the module keeps instances for good. The timer's
// function runs on its own goroutine, once per arming; Close stops it.
func (m *Module) armReaper() {
	if m.limits.IdleTimeout < 0 {
		return
	}
	m.reapMu.Lock()
	defer m.reapMu.Unlock()
	if m.reaping || m.closed.Load() {
		return
	}
	m.reaping = true
	if m.reaper == nil {
		m.reaper = time.AfterFunc(m.limits.IdleTimeout, m.reapIdle)
	} else {
		m.reaper.Reset(m.limits.IdleTimeout)
	}
}

// reapIdle closes the instances idle longer than the timeout but the most
// recently used one, and arms itself again while more than one is idle.
// It takes the idle instances out of the pool for a moment: a call that
// comes meanwhile waits for one to come back, or starts one if there is
// room.
func (m *Module) reapIdle() {
	m.reapMu.Lock()
	m.reaping = false
	m.reapMu.Unlock()
	var idle []*instance
	for len(idle) < cap(m.idle) {
		select {
		case in := <-m.idle:
			idle = append(idle, in)
			continue
		default:
		}
		break
	}
	// The channel is first in, first out: the last one is the most recent.
	cutoff := time.Now().Add(-m.limits.IdleTimeout)
	for i, in := range idle {
		if i < len(idle)-1 && !in.idleSince.After(cutoff) {
			m.closeInstance(in)
			m.reaped.Add(1)
			continue
		}
		m.idle <- in
	}
	if m.closed.Load() {
		m.drainIdle()
	} else if len(m.idle) > 1 {
		m.armReaper()
	}
}

// drainIdle closes every idle instance.
func (m *Module) drainIdle() {
	for {
		select {
		case in := <-m.idle:
			m.closeInstance(in)
		default:
			return
		}
	}
}

func (m *Module) closeInstance(in *instance) {
	in.close()
	m.live.Add(-1)
	m.r.live.Add(-1)
	<-m.slots
	if m.closed.Load() && m.live.Load() == 0 {
		m.releaseCode()
	}
}

// releaseCode gives the compiled code back to the runtime, once: both Close
// and the last instance's close may get here.
func (m *Module) releaseCode() {
	if !m.codeGone.Swap(true) {
		m.r.releaseCompiled(m.codeKey)
	}
}
