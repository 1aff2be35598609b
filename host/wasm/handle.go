package wasm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tetratelabs/wazero/api"

	"github.com/ruled-dev/ruled/abi"
)

// Call is one call's input: the header the guest reads first and the event,
// decoded once by the caller and shared by every rule the event triggers.
type Call struct {
	Info abi.CallInfo
	// View is the event as abi.ViewBuilder built it, without the raw
	// section (the guest fetches Raw through event_raw when it wants it).
	View []byte
	// Raw is the event's JSON.
	Raw []byte
	// Context is the view of the run's context (abi.CallInput.Context):
	// the outputs of its steps so far and its variables; nil when it has
	// none.
	Context []byte
	// Effects, when not nil, is told what the call did beyond its answer,
	// one line each, for the execution log: the events it published and
	// the kv keys it wrote or deleted, at most MaxEffects lines.
	Effects *[]string
	// Hops and Chain are the run's trigger's (bus.Event): an event the
	// call publishes or fires is one hop further, for the host's bound on
	// loops of rules. Not part of the ABI.
	Hops  int
	Chain string
	// Owed, when not nil, takes what the call's services still owe it when
	// it returns: a write they queued (a publish into the MQTT outbox)
	// that must be in the store before the call's result counts. Its
	// caller runs each (each waits, and returns the write's error) before
	// it acts on the result, and may do so on a goroutine other than the
	// worker's, so that the writes of the calls after it share one
	// commit. With Owed nil a service waits itself, inside the host call.
	Owed *[]func() error
	// Published counts the events the call has published so far
	// (Origin.NextPublish). Not part of the ABI.
	Published int
	// Trace is the traceparent of the step's span, "" for none: an
	// outbound request carries it as a header, and an event the call
	// publishes or fires carries it on (Origin.Trace). Not part of the ABI.
	Trace string
}

// NewCall decodes an event's JSON into a Call. Callers that decode many
// events keep their own abi.ViewBuilder instead.
func NewCall(info abi.CallInfo, eventJSON []byte) (*Call, error) {
	v, err := abi.AppendJSONView(nil, eventJSON, false)
	if err != nil {
		return nil, err
	}
	return &Call{Info: info, View: v, Raw: eventJSON}, nil
}

// Handle is a function of a module with one config: what a rule's step or
// condition holds. The config is turned into a guest handle once per
// instance (the plugin parses or compiles it there), lazily.
type Handle struct {
	m      *Module // the module configured on; see module()
	slot   *Slot   // set: the handle follows the slot's current module
	id     uint64
	fn     string
	kind   abi.Kind
	config []byte // the config's view, raw section included
	closed atomic.Bool
}

// Function is the function's name.
func (h *Handle) Function() string { return h.fn }

// Kind is the function's kind.
func (h *Handle) Kind() abi.Kind { return h.kind }

// Module is the module the handle calls now.
func (h *Handle) Module() *Module { return h.module() }

func (h *Handle) module() *Module {
	if h.slot != nil {
		return h.slot.Module()
	}
	return h.m
}

// handleSeq numbers handles across every module: an instance keys the
// handles it configured by this id, and a handle that follows a Slot meets
// instances of several modules.
var handleSeq atomic.Uint64

// Configure checks that fn exists and accepts configJSON (nil means {}),
// by configuring it on an instance, and returns the handle to call it with.
// A refused config is a *CallError with CauseConfig and the plugin's text.
func (m *Module) Configure(ctx context.Context, fn string, configJSON []byte) (*Handle, error) {
	kind, ok := m.funcs[fn]
	if !ok {
		names := make([]string, 0, len(m.funcs))
		for n := range m.funcs {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("wasm: plugin %s has no function %q (it has %s)", m.name, fn, strings.Join(names, ", "))
	}
	if len(configJSON) == 0 {
		configJSON = []byte("{}")
	}
	v, err := abi.AppendJSONView(nil, configJSON, true)
	if err != nil {
		return nil, fmt.Errorf("wasm: plugin %s: %s config: %w", m.name, fn, err)
	}
	h := &Handle{m: m, id: handleSeq.Add(1), fn: fn, kind: kind, config: v}
	in, err := m.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer m.release(in)
	if _, err := in.configure(ctx, h); err != nil {
		return nil, err
	}
	return h, nil
}

// Close releases the handle on every instance (lazily, as each is next
// used). Calls after Close fail.
func (h *Handle) Close() {
	if h.closed.Swap(true) {
		return
	}
	m := h.module()
	m.mu.Lock()
	m.released = append(m.released, h.id)
	m.nReleased.Store(int64(len(m.released)))
	m.mu.Unlock()
}

// configure returns the instance's guest handle for h, configuring it
// first if this instance has not seen h.
func (in *instance) configure(ctx context.Context, h *Handle) (uint32, error) {
	if gh, ok := in.handles[h.id]; ok {
		return gh, nil
	}
	in.scratch = abi.AppendConfigureInput(in.scratch[:0], h.fn, mustView(h.config))
	ptr, n, err := in.input(ctx, in.scratch)
	if err != nil {
		return 0, err
	}
	stack := in.stack[:2]
	stack[0], stack[1] = uint64(ptr), uint64(n)
	// The call's state names the function in the plugin's log lines, and
	// hears its last words: a configure that panics says why, as a call does.
	cs := &in.cs
	cs.Context, cs.h = ctx, h
	err = in.invoke(cs, in.fns[fnConfigure], in.m.limits.Timeout, in.m.limits.Fuel, stack)
	cs.Context, cs.h = context.Background(), nil
	if err != nil {
		return 0, named(err, h.fn)
	}
	st, gh := abi.UnpackConfigure(stack[0])
	if st != abi.StatusOK || gh == 0 {
		text, err := in.errorText(ctx)
		if err != nil {
			return 0, named(err, h.fn)
		}
		return 0, &CallError{Plugin: in.m.name, Function: h.fn, Cause: CauseConfig, Status: st, Text: text}
	}
	in.handles[h.id] = gh
	return gh, nil
}

func mustView(b []byte) abi.View {
	v, err := abi.ParseView(b)
	if err != nil {
		panic("wasm: a handle's own config view does not parse: " + err.Error())
	}
	return v
}

func named(err error, fn string) error {
	if ce, ok := err.(*CallError); ok && ce.Function == "" {
		ce.Function = fn
	}
	return err
}

// When evaluates a condition.
func (h *Handle) When(ctx context.Context, c *Call) (bool, error) {
	st, _, err := h.call(ctx, abi.KindCondition, c)
	if err != nil {
		h.count(err)
	}
	return st == abi.StatusTrue, err
}

// Act runs an action and returns its result.
func (h *Handle) Act(ctx context.Context, c *Call) ([]byte, error) {
	_, out, err := h.call(ctx, abi.KindAction, c)
	if err != nil {
		h.count(err)
	}
	return out, err
}

// count adds a failed call to its module's Failures.
func (h *Handle) count(err error) {
	var ce *CallError
	if errors.As(err, &ce) && int(ce.Cause) < len(causeNames) {
		h.module().failed[ce.Cause].Add(1)
	}
}

func (h *Handle) call(ctx context.Context, kind abi.Kind, c *Call) (abi.Status, []byte, error) {
	if h.kind != kind {
		return 0, nil, fmt.Errorf("wasm: plugin %s: %s is %s, not %s", h.m.name, h.fn, article(h.kind.String()), article(kind.String()))
	}
	if h.closed.Load() {
		return 0, nil, fmt.Errorf("wasm: plugin %s: %s: call on a closed handle", h.m.name, h.fn)
	}
	// A handle that follows a slot may meet a module the slot just replaced:
	// it is closed, and the call moves to the slot's new module. Calls that
	// already hold an instance of the old one finish there.
	var m *Module
	var in *instance
	for attempt := 0; ; attempt++ {
		m = h.module()
		if k, ok := m.funcs[h.fn]; !ok || k != kind {
			return 0, nil, fmt.Errorf("wasm: plugin %s (%s) has no %s %q", m.name, m.digest[:12], kind, h.fn)
		}
		var err error
		in, err = m.acquire(ctx)
		if err == nil {
			break
		}
		if err == errClosed && h.slot != nil && attempt < 100 {
			continue
		}
		return 0, nil, named(&CallError{Plugin: m.name, Function: h.fn, Cause: CauseABI, Text: err.Error(), Err: err}, h.fn)
	}
	defer m.release(in)
	gh, err := in.configure(ctx, h)
	if err != nil {
		return 0, nil, err
	}
	in.scratch = abi.AppendCallHeader(in.scratch[:0], &c.Info, len(c.View), len(c.Context))
	ptr, n, err := in.input(ctx, in.scratch, c.View, c.Context)
	if err != nil {
		return 0, nil, named(err, h.fn)
	}
	f := in.fns[fnWhen]
	if kind == abi.KindAction {
		f = in.fns[fnAct]
	}
	cs := &in.cs
	cs.Context, cs.kind, cs.h, cs.call, cs.local = ctx, kind, h, c, true
	stack := in.stack[:3]
	stack[0], stack[1], stack[2] = uint64(gh), uint64(ptr), uint64(n)
	err = in.invoke(cs, f, m.limits.Timeout, m.limits.Fuel, stack)
	cs.Context, cs.h, cs.call, cs.local = context.Background(), nil, nil, false
	if err != nil {
		return 0, nil, named(err, h.fn)
	}
	st := abi.Status(int32(api.DecodeU32(stack[0])))
	hostSaid := in.hostSaid // the next invoke (ruled_error) clears it
	switch {
	case st == abi.StatusOK && kind == abi.KindAction:
		stack := in.stack[:1]
		if err := in.invoke(ctx, in.fns[fnResult], m.limits.Timeout, m.limits.Fuel, stack); err != nil {
			return 0, nil, named(err, h.fn)
		}
		out, err := in.output("result", stack[0], m.limits.MaxResult)
		return st, out, named(err, h.fn)
	case st == abi.StatusOK, st == abi.StatusTrue && kind == abi.KindCondition:
		return st, nil, nil
	}
	text, err := in.errorText(ctx)
	if err != nil {
		return st, nil, named(err, h.fn)
	}
	if hostSaid != "" && !strings.Contains(text, hostSaid) {
		text += " (the host: " + hostSaid + ")"
	}
	if st == abi.StatusPermanent && m.abiVersion&0xffff < 2 {
		st = abi.StatusError // a status its minor does not define
	}
	return st, nil, &CallError{Plugin: m.name, Function: h.fn, Cause: CausePlugin, Status: st, Text: text}
}

// MaxEffects bounds the lines a call's Effects gets: a plugin that
// publishes in a loop is one to see, not to log a thousand times.
const MaxEffects = 32

// maxEffectLine bounds one line of Effects (a published payload is cut).
const maxEffectLine = 256

// noteEffect adds a line to c's Effects when someone listens.
func (c *Call) noteEffect(parts ...string) {
	if c == nil || c.Effects == nil {
		return
	}
	switch n := len(*c.Effects); {
	case n > MaxEffects:
		return
	case n == MaxEffects:
		*c.Effects = append(*c.Effects, "… and more, not shown")
		return
	}
	var b []byte
	for i, p := range parts {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, p...)
	}
	if len(b) > maxEffectLine {
		b = append(b[:maxEffectLine:maxEffectLine], "…"...)
	}
	*c.Effects = append(*c.Effects, string(b))
}

// article is a kind with its article: "a condition", "an action".
func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
