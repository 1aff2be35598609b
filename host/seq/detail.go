package seq

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/runlog"
)

// What a log node shows beside its outcome: the trigger, a step's config
// as rendered, what a condition's paths held, what a step did. Made only
// while the log is on (Runner.book), each kept up to its limit, so
// that "why did it, or didn't it" is answered from the tree.

// bounded is v when the log keeps it; otherwise nil and a note of its
// size, for the node's Detail.
func (b *logbook) bounded(what string, v []byte) (json.RawMessage, string) {
	return boundedTo(b.limit, what, v)
}

// boundedTo is v when it is at most limit bytes; otherwise nil and a note
// of its size.
func boundedTo(limit int, what string, v []byte) (json.RawMessage, string) {
	if len(v) > limit {
		return nil, fmt.Sprintf("%s of %d bytes, not shown", what, len(v))
	}
	return v, ""
}

// inputs are the abi.CallInputs render reads through: a template reads
// its source through an interface, so a CallInput on render's stack would
// move to the heap on every call — 200 bytes, four times a run.
var inputs = sync.Pool{New: func() any { return new(abi.CallInput) }}

// render is t rendered for c's event and run context; nil without t.
func render(t *tmpl.Template, c *Call) []byte {
	if t == nil {
		return nil
	}
	in := inputs.Get().(*abi.CallInput)
	in.Event, _ = abi.ParseView(c.View)
	in.Context = abi.View{}
	if len(c.Context) > 0 {
		in.Context, _ = abi.ParseView(c.Context)
	}
	scratch := renders.Get().(*[]byte)
	*scratch = t.Render((*scratch)[:0], in)
	out := append([]byte(nil), *scratch...) // the node keeps it: one allocation of its size
	*in = abi.CallInput{}                   // holds no view past the call
	inputs.Put(in)
	if cap(*scratch) <= 64<<10 {
		renders.Put(scratch)
	}
	return out
}

// renders are the buffers render writes into before it keeps the result
// at its size.
var renders = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// stepDetail fills a step node with its input, its condition's values
// (when it had a condition) and its effects.
func (b *logbook) stepDetail(n *runlog.Node, st *CompiledStep, c *Call, effects []string) {
	var note, vnote string
	if n.Outcome != runlog.Skipped { // the call it was configured for did not happen
		n.Input, note = b.bounded("input", render(st.Input, c))
	}
	if st.When != nil {
		n.Values, vnote = b.bounded("condition values", render(st.WhenValues, c))
	}
	n.Effects = effects
	n.Detail = joinDetail(joinDetail(n.Detail, note), vnote)
}

// triggerDetail fills a trigger node with its event, or a preview of it
// when the event is larger than the log keeps.
func (b *logbook) triggerDetail(n *runlog.Node, raw []byte) {
	if len(raw) <= b.limit {
		n.Input = raw
		return
	}
	preview := string(raw)
	if len(preview) > maxDetail {
		preview = preview[:maxDetail] + "…"
	}
	n.Detail = joinDetail(n.Detail, fmt.Sprintf("event of %d bytes, not kept: %s", len(raw), preview))
}

// conditionDetail fills the rule's condition node with what its paths
// held (an expression's), or a condition plugin's config as rendered.
func (b *logbook) conditionDetail(n *runlog.Node, s *Sequence, c *Call) {
	var note string
	if s.WhenValues != nil {
		n.Values, note = b.bounded("condition values", render(s.WhenValues, c))
	} else {
		n.Input, note = b.bounded("input", render(s.WhenInput, c))
	}
	n.Detail = joinDetail(n.Detail, note)
}
