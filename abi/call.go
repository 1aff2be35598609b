package abi

import (
	"encoding/binary"
	"errors"
	"math"
)

// CallInfo is the header in front of the event view in every ExportWhen and
// ExportAct input. It tells the plugin which run it serves and gives actions
// their idempotency key.
//
// Layout (little-endian):
//
//	0   u32  header size H; the event view starts at H
//	4   u32  pass: the rule's repeat pass, from 0
//	8   i64  event time, unix nanoseconds
//	16  five strings, each u16 length + bytes: topic, rule, step, run, key
//	    u32  attempt: the step's attempt, from 1 (since 1.2)
//	    u32  context: where the run's context view starts, from the
//	         start of the input; 0 when there is none (since 1.3)
//
// A later minor may append fields before H; readers skip to H, so an older
// guest keeps working, and a reader of a newer minor takes a field the
// header is too short for as its zero value.
type CallInfo struct {
	Pass  uint32
	Time  int64  // the event's time, unix nanoseconds
	Topic string // the event's topic
	Rule  string // the rule's id
	Step  string // the step's name ("" for a rule-level condition)
	Run   string // the run's execution id
	// Key is the idempotency key of an action call: the same for every
	// delivery of one step of one pass of one run, different otherwise.
	// Actions run at least once; a plugin with an effect outside ruled
	// uses Key to make a repeat harmless.
	Key string
	// Attempt counts the tries of this step of this pass of this run, from
	// 1: a step the rule retries is called again with the same Key and the
	// next Attempt (since 1.2). 0 for a condition.
	Attempt uint32
}

const callFixed = 16

// ErrBadCallInfo is returned for a header that does not decode.
var ErrBadCallInfo = errors.New("abi: malformed call header")

// AppendCallInfo appends c's header to dst, for an input with no context.
// Strings longer than 65535 bytes are cut to that length.
func AppendCallInfo(dst []byte, c *CallInfo) []byte { return AppendCallHeader(dst, c, 0, 0) }

// AppendCallHeader appends c's header to dst for an input whose event view,
// written right after it, is eventLen bytes long, and whose context view
// (none when contextLen is 0) follows the event's. The caller writes the
// two views itself, so a host need not copy an event's view into each
// call's input.
func AppendCallHeader(dst []byte, c *CallInfo, eventLen, contextLen int) []byte {
	start := len(dst)
	var fixed [callFixed]byte
	binary.LittleEndian.PutUint32(fixed[4:], c.Pass)
	binary.LittleEndian.PutUint64(fixed[8:], uint64(c.Time))
	dst = append(dst, fixed[:]...)
	for _, s := range [...]string{c.Topic, c.Rule, c.Step, c.Run, c.Key} {
		dst = appendStr16(dst, s)
	}
	dst = binary.LittleEndian.AppendUint32(dst, c.Attempt)
	h := len(dst) + 4 - start
	ctx := 0
	if contextLen > 0 {
		ctx = h + eventLen
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(ctx))
	binary.LittleEndian.PutUint32(dst[start:], uint32(h))
	return dst
}

// AppendCallInput appends a whole ExportWhen or ExportAct input: c's
// header, the event's view (without its raw section) and, when the run has
// one, its context's view (the run's step outputs and variables, see
// CallInput.Find). A guest of a minor before 1.3 reads the event's view at
// H and never looks past its pool, so the context after it is invisible
// to it.
func AppendCallInput(dst []byte, c *CallInfo, event, context []byte) []byte {
	dst = AppendCallHeader(dst, c, len(event), len(context))
	dst = append(dst, event...)
	return append(dst, context...)
}

func appendStr16(dst []byte, s string) []byte {
	if len(s) > math.MaxUint16 {
		s = s[:math.MaxUint16]
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

// CallInput is a decoded ExportWhen or ExportAct input. Its byte fields are
// views into the input: copy them to keep them.
type CallInput struct {
	Pass  uint32
	Time  int64
	Topic []byte
	Rule  []byte
	Step  []byte
	Run   []byte
	Key   []byte
	// Attempt is CallInfo.Attempt; 0 from a host older than 1.2.
	Attempt uint32
	Event   View
	// Context is the run's context (since 1.3): the outputs of the steps
	// that ran before this one under "steps.<name>", and the rule's
	// variables under "vars.<name>"; since 1.4 the states the rule reads
	// under "states.<name>", the trigger's previous state under
	// "previous" and the sun's place under "sun". Empty (Len 0) when the
	// run has none.
	Context View
}

// Context roots: the names under which a run's step outputs, variables,
// and since 1.4 the states it reads, its trigger's previous state and the
// sun's place are found (CallInput.Find).
const (
	ContextSteps    = "steps"
	ContextVars     = "vars"
	ContextStates   = "states"
	ContextPrevious = "previous"
	ContextSun      = "sun"
)

// Find returns the value at path in what a call sees: a path below
// "steps.", "vars.", "states.", "previous." or "sun." is the run's context's —
// missing when the context does not hold it, never the event's —, and
// every other path is the event's. So `steps.quote.price` is the output
// of the step named quote, and a trigger cannot pass off a field of its
// own as a step's output, a variable or a state: an event's own steps,
// vars, states or previous field is reached only whole, by its bare name.
func (in *CallInput) Find(path string) (Value, bool) {
	if InContext(path) {
		return in.Context.Find(path)
	}
	return in.Event.Find(path)
}

// Decode is Find's value as plain Go values (View.Decode).
func (in *CallInput) Decode(path string) (any, bool) {
	if InContext(path) {
		return in.Context.Decode(path)
	}
	return in.Event.Decode(path)
}

// InContext reports whether path is one a run's context may hold: below
// "steps.", "vars.", "states.", "previous." or "sun.".
func InContext(path string) bool {
	return below(path, ContextSteps) || below(path, ContextVars) ||
		below(path, ContextStates) || below(path, ContextPrevious) || below(path, ContextSun)
}

// below reports whether path is below root: root, a dot, and more.
func below(path, root string) bool {
	return len(path) > len(root)+1 && path[len(root)] == '.' && path[:len(root)] == root
}

// ParseCallInput splits an input into its header and its event view without
// copying.
func ParseCallInput(b []byte) (CallInput, error) {
	var in CallInput
	if len(b) < callFixed {
		return in, ErrBadCallInfo
	}
	h := binary.LittleEndian.Uint32(b)
	if h < callFixed || uint64(h) > uint64(len(b)) {
		return in, ErrBadCallInfo
	}
	in.Pass = binary.LittleEndian.Uint32(b[4:])
	in.Time = int64(binary.LittleEndian.Uint64(b[8:]))
	hdr := b[callFixed:h]
	for _, dst := range [...]*[]byte{&in.Topic, &in.Rule, &in.Step, &in.Run, &in.Key} {
		if len(hdr) < 2 {
			return in, ErrBadCallInfo
		}
		n := int(binary.LittleEndian.Uint16(hdr))
		if len(hdr) < 2+n {
			return in, ErrBadCallInfo
		}
		*dst, hdr = hdr[2:2+n:2+n], hdr[2+n:]
	}
	var ctx uint32
	if len(hdr) >= 4 {
		in.Attempt = binary.LittleEndian.Uint32(hdr)
	}
	if len(hdr) >= 8 {
		ctx = binary.LittleEndian.Uint32(hdr[4:])
	}
	event := b[h:]
	if ctx != 0 {
		if ctx < h || uint64(ctx) > uint64(len(b)) {
			return in, ErrBadCallInfo
		}
		event = b[h:ctx]
		c, err := ParseView(b[ctx:])
		if err != nil {
			return in, err
		}
		in.Context = c
	}
	v, err := ParseView(event)
	if err != nil {
		return in, err
	}
	in.Event = v
	return in, nil
}

// AppendConfigureInput appends an ExportConfigure input: the function's name
// (u16 length + bytes) followed by the config's view.
func AppendConfigureInput(dst []byte, function string, config View) []byte {
	dst = appendStr16(dst, function)
	return append(dst, config.Bytes()...)
}

// ParseConfigureInput is the inverse of AppendConfigureInput. The name is a
// view into b.
func ParseConfigureInput(b []byte) (function []byte, config View, err error) {
	if len(b) < 2 {
		return nil, View{}, ErrBadCallInfo
	}
	n := int(binary.LittleEndian.Uint16(b))
	if len(b) < 2+n {
		return nil, View{}, ErrBadCallInfo
	}
	config, err = ParseView(b[2+n:])
	return b[2 : 2+n], config, err
}
