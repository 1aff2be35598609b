package seq

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
)

// DefaultMaxOutput is the largest step output a run keeps when
// RunnerConfig.MaxOutput is 0: enough for a booking's answer or a sensor's
// reading, small enough that a run's record, which carries every output it
// has, stays a record and not a blob.
const DefaultMaxOutput = 64 << 10

// output is what a step of a run returned, kept for its later steps
// (abi.ContextSteps): a JSON object.
type output struct {
	step string
	json []byte
}

// OutputError is a step whose action returned more than a run keeps. It
// is permanent: the same call would return as much again.
type OutputError struct {
	Size, Limit int
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("its output is %d bytes, over the limit of %d a run keeps for its later steps (max-step-output)", e.Size, e.Limit)
}

// Permanent reports that a retry would fail the same way.
func (e *OutputError) Permanent() bool { return true }

// outputOf turns an action's result into its step's output: a JSON object
// as it is; any other JSON value, or text that is not JSON, as
// {"result": …} (so that every output is reached the same way, below
// steps.<name>.); none for an empty result. Over limit bytes is an
// OutputError.
func outputOf(result []byte, limit int) ([]byte, error) {
	if len(strings.TrimSpace(string(result))) == 0 {
		return nil, nil
	}
	out := result
	v, err := abi.AppendJSONView(nil, result, false)
	var root abi.Value
	if err == nil {
		pv, _ := abi.ParseView(v)
		root, _ = pv.Find("")
	}
	if err != nil || root.Kind() != abi.ValueObject {
		val := result
		if err != nil {
			val = abi.AppendJSONString(nil, strings.ToValidUTF8(string(result), "\uFFFD"))
		}
		out = append(append([]byte(`{"result":`), val...), '}')
	}
	if len(out) > limit {
		return nil, &OutputError{Size: len(out), Limit: limit}
	}
	return slices.Clip(out), nil
}

// runContext is what a run that waits or has a context keeps beside it:
// its context (d), and where it waits. A run parked on a wait-for with
// no outputs and no variables — 100,000 of them replayed at a start —
// is 48 bytes of it, not 112 (issue 38).
type runContext struct {
	d *runData
	// waitKey and waitGroup are where Runner.waiting lists the run while
	// it is parked on a wait-for step (waitList); a group with no
	// sequence when it is not (awaiting: no flag of its own, which made
	// this a size class larger). Here, not in run, which is a size class
	// smaller without them.
	waitKey   string
	waitGroup waitGroup
	// after is the last of Runner.recent the run has seen: a wait that
	// starts takes a recent event numbered above it (one that came since
	// the run started, or since its last wait took one).
	after uint64
}

// runData is a run's context (abi.CallInput.Context): the outputs of its
// steps so far (this pass's), for its later steps under steps.<name>; the
// rule's variables worked out from the trigger when it started
// (Sequence.Vars), a JSON object or nil; and view, both as the view a
// call carries, built when first needed after a change (contextOf).
type runData struct {
	outputs []output
	vars    []byte
	// previous is the trigger's entity's state before it (bus.Event.Prior),
	// for a rule that reads it (Sequence.Previous): kept from the start,
	// in the run's records.
	previous []byte
	view     []byte
}

// data is r's context, nil when it has none.
func (r *run) data() *runData {
	if r.cx == nil {
		return nil
	}
	return r.cx.d
}

// dataFor is r's context, made when it has none.
func (r *run) dataFor() *runData {
	if r.cx == nil {
		r.cx = &runContext{}
	}
	if r.cx.d == nil {
		r.cx.d = &runData{}
	}
	return r.cx.d
}

// outputs and vars are r's (nil without a context).
func (r *run) outputs() []output {
	if d := r.data(); d != nil {
		return d.outputs
	}
	return nil
}

func (r *run) vars() []byte {
	if d := r.data(); d != nil {
		return d.vars
	}
	return nil
}

// previous is r's trigger's previous state, as the run keeps it.
func (r *run) previous() []byte {
	if d := r.data(); d != nil {
		return d.previous
	}
	return nil
}

// hasOutput reports whether r has an output of step.
func (r *run) hasOutput(step string) bool {
	return slices.ContainsFunc(r.outputs(), func(o output) bool { return o.step == step })
}

// setOutputLocked keeps out as step's output in r, replacing what an
// earlier attempt or finally step of that name left.
func (r *run) setOutputLocked(step string, out []byte) {
	if out == nil {
		return
	}
	cx := r.dataFor()
	cx.view = nil
	for i := range cx.outputs {
		if cx.outputs[i].step == step {
			cx.outputs[i].json = out
			return
		}
	}
	cx.outputs = append(cx.outputs, output{step: step, json: out})
}

// restoreLocked gives r the context its record kept.
func (r *run) restoreLocked(p *Pending) {
	if r.rare != nil {
		// A run with a record passed its vars' bound when it started:
		// they are what the record kept, not worked out again (a lowered
		// max-step-output must not fail a run part-way).
		r.rare.failErr = nil
	}
	outs := outputsOf(p.Steps)
	if len(outs) == 0 && len(p.Vars) == 0 && len(p.Previous) == 0 {
		return
	}
	d := r.dataFor()
	d.outputs, d.view = outs, nil
	if len(p.Vars) > 0 {
		d.vars = p.Vars
	}
	if len(p.Previous) > 0 {
		d.previous = p.Previous
	}
}

// stepsJSON is the run's outputs as one JSON object, by step name: what
// its pending record keeps (Pending.Steps). nil when there are none.
func stepsJSON(outs []output) []byte {
	if len(outs) == 0 {
		return nil
	}
	b := []byte{'{'}
	for i, o := range outs {
		if i > 0 {
			b = append(b, ',')
		}
		b = abi.AppendJSONString(b, o.step)
		b = append(b, ':')
		b = append(b, o.json...)
	}
	return append(b, '}')
}

// outputsOf reads a record's outputs back (stepsJSON's inverse), in name
// order; an entry that is not a JSON object is left out.
func outputsOf(steps json.RawMessage) []output {
	if len(steps) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(steps, &m) != nil {
		return nil
	}
	outs := make([]output, 0, len(m))
	for name, raw := range m {
		// Records hold objects only (stepsJSON); outputOf, unbounded,
		// keeps one as it is and wraps anything a hand-edited record holds.
		if o, err := outputOf(raw, math.MaxInt); err == nil && o != nil {
			outs = append(outs, output{step: name, json: o})
		}
	}
	slices.SortFunc(outs, func(a, b output) int { return strings.Compare(a.step, b.step) })
	return outs
}

// contextOf is the view of r's context for its next step's call
// (Call.Context): nil when it has no outputs, no variables, no previous
// state and reads no states and not the sun. It is built once per change
// of the outputs and dropped while the run waits (park), so a parked run
// holds only its outputs' JSON; a rule that reads states or the sun
// builds it at each call, since they are read as they are when the call
// is made.
func (rn *Runner) contextOf(r *run) []byte {
	var cx *runData
	var view []byte
	var outs []output
	var vars, prev []byte
	var e *bus.Event
	live := rn.live(r.seq)
	rn.view(func() {
		if cx = r.data(); cx != nil {
			view, outs, vars, prev = cx.view, cx.outputs, cx.vars, cx.previous
		}
		e = r.event
	})
	if live && len(r.seq.States) > 0 && (e == nil || e.View == nil) {
		// A parked run's trigger is cold (in its record only) or without
		// its view (a store that cannot read a record back): a wait's
		// awaited event is offered to it so. Its states' ids are filled
		// from its trigger, read here into a local copy — the run stays
		// as parked as it was.
		e = rn.triggerCopy(r, e)
	}
	if cx == nil && !live {
		return nil
	}
	if !live && (view != nil || len(outs) == 0 && vars == nil && prev == nil) {
		return view
	}
	doc := []byte{'{'}
	sep := func() {
		if len(doc) > 1 {
			doc = append(doc, ',')
		}
	}
	if len(outs) > 0 {
		doc = append(append(doc, `"`+abi.ContextSteps+`":`...), stepsJSON(outs)...)
	}
	if vars != nil {
		sep()
		doc = append(append(doc, `"`+abi.ContextVars+`":`...), vars...)
	}
	if prev != nil {
		sep()
		doc = append(append(doc, `"`+abi.ContextPrevious+`":`...), prev...)
	}
	if live {
		if doc, _ = rn.appendLive(doc, r.seq, e, rn.sch.Now()); len(doc) == 1 {
			return nil
		}
	}
	doc = append(doc, '}')
	view, err := contextView(doc)
	if err != nil { // cannot be: every part is JSON the view builder took
		rn.log.Error("cannot build a run's context; its step sees no outputs", "rule", r.seq.Rule.ID, "run", r.id, "error", err)
		return nil
	}
	if !live {
		rn.apply(func(*effects) {
			if r.data() == cx {
				cx.view = view
			}
		})
	}
	return view
}

// triggerCopy is r's trigger with its view, read back from r's record
// when e (r's trigger as parked) is nil, its view built when e has none;
// nil when its record cannot be read (its states then render from
// nothing, and its next step fails: warmLocked).
func (rn *Runner) triggerCopy(r *run, e *bus.Event) *bus.Event {
	if e == nil {
		if rn.m.store == nil {
			return nil
		}
		p, err := rn.m.store.Get(r.id)
		if err != nil {
			return nil
		}
		if e, err = eventOf(p); err != nil {
			return nil
		}
		return e
	}
	v, err := abi.AppendJSONView(nil, e.Raw, false)
	if err != nil {
		return nil
	}
	c := *e
	c.View = v
	return &c
}

// varsOf works out s's variables from the trigger e (Sequence.Vars): a
// JSON object, nil when the rule has none. A placeholder whose path the
// event lacks is null, as in any template. Past limit bytes the rendering
// stops and the answer is a *VarsError: a template naming a large field
// many times made a 40 MB variable of a 200 KB event. ctx is the
// trigger's context (the states the rule reads, the previous state), nil
// when it has none.
func varsOf(s *Sequence, e *bus.Event, ctx []byte, limit int) ([]byte, error) {
	if s.Vars == nil {
		return nil, nil
	}
	var in abi.CallInput
	v, err := abi.ParseView(e.View)
	if err != nil {
		return []byte("{}"), nil
	}
	in.Event = v
	if len(ctx) > 0 {
		in.Context, _ = abi.ParseView(ctx)
	}
	out, ok := s.Vars.RenderAtMost(nil, &in, limit)
	if !ok {
		return nil, &VarsError{Size: len(out), Limit: limit}
	}
	return out, nil
}

// VarsError is a run's variables past the bound a run keeps: they are in
// its records and every step's call, so they are bounded as a step's
// output is (max-step-output).
type VarsError struct {
	Size, Limit int // Size: what was rendered when it stopped, past Limit
}

func (e *VarsError) Error() string {
	return fmt.Sprintf("the rule's vars came out over %d bytes from this event (stopped at %d), the limit a run keeps (max-step-output)", e.Limit, e.Size)
}

// Permanent reports that a retry would fail the same way.
func (e *VarsError) Permanent() bool { return true }
