package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero/api"

	"github.com/ruled-dev/ruled/abi"
)

// Limits of what a guest may hand the host functions.
const (
	maxLogLine  = 4 << 10
	maxTopic    = 256
	maxPayload  = 1 << 20
	maxKVKey    = 512
	maxKVValue  = 1 << 20
	maxRuleName = 256
	// maxHTTPRequest bounds an encoded http_request: a body of up to
	// outbound's largest, and room for the URL and headers.
	maxHTTPRequest = 16<<20 + 64<<10
	// ReservedPrefix starts the topics ruled keeps for itself
	// (ruled.cmd.<rule>, ruled.triggers.changed); plugins and ingest may
	// not publish to them.
	ReservedPrefix = "ruled."
)

// callState is the context a guest call runs under. Each instance owns one
// and reuses it for every call, so passing per-call state to host functions
// costs no allocation: wazero hands host functions the context given to
// CallWithStack, and stateOf finds this struct in it.
type callState struct {
	context.Context
	in    *instance
	kind  abi.Kind
	h     *Handle
	call  *Call
	local bool // set while the instance is in a call
}

type stateKey struct{}

func (cs *callState) Value(key any) any {
	if key == (stateKey{}) {
		return cs
	}
	return cs.Context.Value(key)
}

func stateOf(ctx context.Context) *callState {
	if cs, ok := ctx.(*callState); ok {
		return cs
	}
	cs, _ := ctx.Value(stateKey{}).(*callState)
	return cs
}

func (cs *callState) origin() Origin {
	m := cs.in.m
	o := Origin{Plugin: m.name, Digest: m.digest}
	if cs.h != nil {
		o.Function = cs.h.fn
	}
	if cs.call != nil {
		o.Info, o.call = &cs.call.Info, cs.call
	}
	return o
}

func i32(v uint64) uint32 { return api.DecodeU32(v) }

func ret(stack []uint64, v int32) { stack[0] = api.EncodeI32(v) }

func fail(stack []uint64, s abi.Status) { ret(stack, -int32(s)) }

// read returns a view of guest memory; ok is false when it is out of range.
func read(mod api.Module, ptr, n uint32) ([]byte, bool) {
	if n == 0 {
		return nil, true
	}
	return mod.Memory().Read(ptr, n)
}

// allow checks the grant and the kind of call for a capability-bearing host
// function, counting refusals.
func (r *Runtime) allow(cs *callState, name string, need abi.Capability) bool {
	if cs != nil && cs.local && cs.kind == abi.KindAction && cs.in.m.granted(need) {
		return true
	}
	r.denied.Add(1)
	if cs != nil {
		cs.in.m.denied.Add(1)
		r.log.Debug("host call refused", "plugin", cs.in.m.name, "import", name, "kind", cs.kind.String())
	}
	return false
}

var (
	i32t = api.ValueTypeI32
	i64t = api.ValueTypeI64
)

var hostFuncs = []hostFunc{
	{abi.ImportLog, []api.ValueType{i32t, i32t, i32t}, nil, hostLog},
	{abi.ImportNow, nil, []api.ValueType{i64t}, hostNow},
	{abi.ImportEventRaw, []api.ValueType{i32t, i32t}, []api.ValueType{i32t}, hostEventRaw},
	{abi.ImportPublish, []api.ValueType{i32t, i32t, i32t, i32t}, []api.ValueType{i32t}, hostPublish},
	{abi.ImportKVGet, []api.ValueType{i32t, i32t, i32t, i32t}, []api.ValueType{i32t}, hostKVGet},
	{abi.ImportKVSet, []api.ValueType{i32t, i32t, i32t, i32t}, []api.ValueType{i32t}, hostKVSet},
	{abi.ImportKVDelete, []api.ValueType{i32t, i32t}, []api.ValueType{i32t}, hostKVDelete},
	{abi.ImportFire, []api.ValueType{i32t, i32t, i32t, i32t, i32t, i32t}, []api.ValueType{i32t}, hostFire},
	{abi.ImportHTTPRequest, []api.ValueType{i32t, i32t}, []api.ValueType{i32t}, hostHTTPRequest},
	{abi.ImportHTTPResponse, []api.ValueType{i32t, i32t}, []api.ValueType{i32t}, hostHTTPResponse},
}

// hostHTTPRequest sends the guest's request through Services.HTTP, which
// checks it against the plugin's allowed hosts, and keeps the encoded
// response for http_response: the guest learns its length first and
// allocates for it, and the request is never sent twice to fetch a
// response that did not fit. It waits no longer than the call's deadline.
func hostHTTPRequest(r *Runtime, cs *callState, mod api.Module, stack []uint64) {
	if !r.allow(cs, abi.ImportHTTPRequest, abi.CapHTTP) {
		fail(stack, abi.StatusDenied)
		return
	}
	if i32(stack[1]) > maxHTTPRequest {
		fail(stack, abi.StatusTooLarge)
		return
	}
	b, ok := read(mod, i32(stack[0]), i32(stack[1]))
	if !ok {
		fail(stack, abi.StatusBadInput)
		return
	}
	req, err := abi.ParseHTTPRequest(b)
	if err != nil {
		fail(stack, abi.StatusBadInput)
		return
	}
	if r.services.HTTP == nil {
		fail(stack, abi.StatusUnavailable)
		return
	}
	req.Body = bytes.Clone(req.Body) // a view of guest memory, which the request outlives
	ctx := cs.Context
	if !cs.in.deadline.IsZero() { // zero: an unprotected instance (benchmarks)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(cs.Context, cs.in.deadline)
		defer cancel()
	}
	if cs.call != nil && cs.call.Trace != "" && !hasHeader(req.Header, "traceparent") {
		// The request joins the step's trace (W3C trace context), unless
		// the plugin sent a traceparent of its own.
		req.Header = append(req.Header, [2]string{"traceparent", cs.call.Trace})
	}
	resp, err := r.services.HTTP.Do(ctx, cs.in.m.name, req)
	if err != nil {
		cs.in.hostSaid = err.Error()
		fail(stack, statusOf(err))
		return
	}
	cs.in.httpResp = abi.AppendHTTPResponse(nil, &resp)
	ret(stack, int32(len(cs.in.httpResp)))
}

// hostHTTPResponse copies the call's last response if it fits and returns
// its length either way; -StatusNotFound before any request.
func hostHTTPResponse(r *Runtime, cs *callState, mod api.Module, stack []uint64) {
	if !r.allow(cs, abi.ImportHTTPResponse, abi.CapHTTP) {
		fail(stack, abi.StatusDenied)
		return
	}
	b := cs.in.httpResp
	if b == nil {
		fail(stack, abi.StatusNotFound)
		return
	}
	if uint32(len(b)) <= i32(stack[1]) && !mod.Memory().Write(i32(stack[0]), b) {
		fail(stack, abi.StatusBadInput)
		return
	}
	ret(stack, int32(len(b)))
}

var levels = [...]hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error}

func hostLog(r *Runtime, cs *callState, mod api.Module, stack []uint64) {
	lvl := int32(i32(stack[0]))
	n := i32(stack[2])
	if n > maxLogLine {
		n = maxLogLine
	}
	msg, ok := read(mod, i32(stack[1]), n)
	if !ok {
		return
	}
	if lvl < 0 || int(lvl) >= len(levels) {
		lvl = int32(abi.LevelInfo)
	}
	args := []any{"plugin", "?"}
	if cs != nil {
		args[1] = cs.in.m.name
		if cs.h != nil {
			args = append(args, "function", cs.h.fn)
		}
		if cs.call != nil && cs.call.Info.Rule != "" {
			args = append(args, "rule", cs.call.Info.Rule, "step", cs.call.Info.Step)
		}
	}
	text := CleanText(string(msg))
	if cs != nil && levels[lvl] == hclog.Error {
		cs.in.heard(text) // the guest's own last words, even when not logged
	}
	if cs != nil && !cs.in.allowLog(len(msg)) {
		return
	}
	r.log.Log(levels[lvl], text, args...)
}

func hostNow(r *Runtime, cs *callState, _ api.Module, stack []uint64) {
	if cs != nil && cs.local && cs.kind == abi.KindCondition && cs.call != nil {
		stack[0] = uint64(cs.call.Info.Time)
		return
	}
	stack[0] = uint64(r.clock().UnixNano())
}

func hostEventRaw(_ *Runtime, cs *callState, mod api.Module, stack []uint64) {
	if cs == nil || !cs.local || cs.call == nil {
		fail(stack, abi.StatusUnavailable)
		return
	}
	raw := cs.call.Raw
	if uint32(len(raw)) <= i32(stack[1]) && len(raw) > 0 {
		if !mod.Memory().Write(i32(stack[0]), raw) {
			fail(stack, abi.StatusBadInput)
			return
		}
	}
	ret(stack, int32(len(raw)))
}

func hostPublish(r *Runtime, cs *callState, mod api.Module, stack []uint64) {
	if !r.allow(cs, abi.ImportPublish, abi.CapPublish) {
		fail(stack, abi.StatusDenied)
		return
	}
	if i32(stack[1]) > maxTopic || i32(stack[3]) > maxPayload {
		fail(stack, abi.StatusTooLarge)
		return
	}
	topic, ok1 := read(mod, i32(stack[0]), i32(stack[1]))
	payload, ok2 := read(mod, i32(stack[2]), i32(stack[3]))
	if !ok1 || !ok2 {
		fail(stack, abi.StatusBadInput)
		return
	}
	t := string(topic)
	if t == "" || strings.HasPrefix(t, ReservedPrefix) {
		fail(stack, abi.StatusDenied)
		return
	}
	p, ok := jsonObject(payload)
	if !ok {
		fail(stack, abi.StatusBadInput)
		return
	}
	pub := r.services.Publisher
	if pub == nil {
		fail(stack, abi.StatusUnavailable)
		return
	}
	err := pub.Publish(cs.Context, cs.origin(), t, p)
	if err != nil {
		cs.in.hostSaid = err.Error() // why, beside the plugin's "denied"
	}
	fail(stack, statusOf(err))
}

func hostKVGet(r *Runtime, cs *callState, mod api.Module, stack []uint64) {
	key, st := kvKey(r, cs, mod, abi.ImportKVGet, stack)
	if st != abi.StatusOK {
		fail(stack, st)
		return
	}
	v, found, err := r.services.KV.Get(cs.Context, cs.in.m.name, key)
	switch {
	case err != nil:
		fail(stack, statusOf(err))
	case !found:
		fail(stack, abi.StatusNotFound)
	default:
		if uint32(len(v)) <= i32(stack[3]) && len(v) > 0 && !mod.Memory().Write(i32(stack[2]), v) {
			fail(stack, abi.StatusBadInput)
			return
		}
		ret(stack, int32(len(v)))
	}
}

func hostKVSet(r *Runtime, cs *callState, mod api.Module, stack []uint64) {
	key, st := kvKey(r, cs, mod, abi.ImportKVSet, stack)
	if st != abi.StatusOK {
		fail(stack, st)
		return
	}
	if i32(stack[3]) > maxKVValue {
		fail(stack, abi.StatusTooLarge)
		return
	}
	v, ok := read(mod, i32(stack[2]), i32(stack[3]))
	if !ok {
		fail(stack, abi.StatusBadInput)
		return
	}
	err := r.services.KV.Set(cs.Context, cs.in.m.name, key, bytes.Clone(v))
	if err == nil {
		cs.call.noteEffect("kv set", key)
	}
	fail(stack, statusOf(err))
}

func hostKVDelete(r *Runtime, cs *callState, mod api.Module, stack []uint64) {
	key, st := kvKey(r, cs, mod, abi.ImportKVDelete, stack)
	if st != abi.StatusOK {
		fail(stack, st)
		return
	}
	err := r.services.KV.Delete(cs.Context, cs.in.m.name, key)
	if err == nil {
		cs.call.noteEffect("kv delete", key)
	}
	fail(stack, statusOf(err))
}

// kvKey checks a kv call and reads its key, the first two parameters.
func kvKey(r *Runtime, cs *callState, mod api.Module, name string, stack []uint64) (string, abi.Status) {
	if !r.allow(cs, name, abi.CapKV) {
		return "", abi.StatusDenied
	}
	if r.services.KV == nil {
		return "", abi.StatusUnavailable
	}
	if i32(stack[1]) > maxKVKey {
		return "", abi.StatusTooLarge
	}
	k, ok := read(mod, i32(stack[0]), i32(stack[1]))
	if !ok || len(k) == 0 {
		return "", abi.StatusBadInput
	}
	return string(k), abi.StatusOK
}

func hostFire(r *Runtime, cs *callState, mod api.Module, stack []uint64) {
	if !r.allow(cs, abi.ImportFire, abi.CapFire) {
		fail(stack, abi.StatusDenied)
		return
	}
	if i32(stack[1]) > maxRuleName || i32(stack[3]) > maxPayload {
		fail(stack, abi.StatusTooLarge)
		return
	}
	rule, ok1 := read(mod, i32(stack[0]), i32(stack[1]))
	payload, ok2 := read(mod, i32(stack[2]), i32(stack[3]))
	if !ok1 || !ok2 || len(rule) == 0 {
		fail(stack, abi.StatusBadInput)
		return
	}
	p, ok := jsonObject(payload)
	if !ok {
		fail(stack, abi.StatusBadInput)
		return
	}
	if r.services.Firer == nil {
		fail(stack, abi.StatusUnavailable)
		return
	}
	id, err := r.services.Firer.Fire(cs.Context, cs.origin(), string(rule), p)
	if err != nil {
		fail(stack, statusOf(err))
		return
	}
	if len(id) > abi.MaxExecID {
		r.log.Error("execution id over the ABI's limit; cut", "plugin", cs.in.m.name, "id", id)
		id = id[:abi.MaxExecID]
	}
	// A prefix when the buffer is short: fire cannot be called again for
	// the rest without starting a second run.
	out := []byte(id)[:min(len(id), int(i32(stack[5])))]
	if len(out) > 0 && !mod.Memory().Write(i32(stack[4]), out) {
		fail(stack, abi.StatusBadInput)
		return
	}
	ret(stack, int32(len(id)))
}

// jsonObject checks that a payload is a JSON object and copies it out of
// guest memory; an empty payload means {}.
func jsonObject(payload []byte) ([]byte, bool) {
	p := bytes.TrimSpace(payload)
	if len(p) == 0 {
		return []byte("{}"), true
	}
	if p[0] != '{' || !json.Valid(p) {
		return nil, false
	}
	return bytes.Clone(p), true
}

// hasHeader reports whether h names header name (case aside).
func hasHeader(h [][2]string, name string) bool {
	for _, kv := range h {
		if strings.EqualFold(kv[0], name) {
			return true
		}
	}
	return false
}
