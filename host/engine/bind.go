package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/catalog"
	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/trust"
	"github.com/ruled-dev/ruled/host/wasm"
)

// plugged is a configured plugin function as the runner's Action and
// Condition: seq.Call has wasm.Call's shape, so the call passes through
// unconverted, and neither package knows the other.
type plugged struct{ h *wasm.Handle }

func (p plugged) Act(ctx context.Context, c *seq.Call) ([]byte, error) {
	return p.h.Act(ctx, (*wasm.Call)(c))
}

func (p plugged) When(ctx context.Context, c *seq.Call) (bool, error) {
	return p.h.When(ctx, (*wasm.Call)(c))
}

// compile turns a rule into a runnable sequence with configured handles
// (ruleset.Config.Compile).
func (e *Engine) compile(r *rules.Rule) (*seq.Sequence, error) {
	s := &seq.Sequence{Rule: r}
	if r.Vars != nil {
		var v any
		if err := json.Unmarshal(r.Vars, &v); err != nil {
			return nil, fmt.Errorf("vars: %w", err)
		}
		t, err := tmpl.JSON(v)
		if err != nil {
			return nil, fmt.Errorf("vars: %w", err)
		}
		s.Vars = t
	}
	if err := e.compileStates(s); err != nil {
		return nil, err
	}
	if r.When.Native() {
		w, err := compileExpr(r.When)
		if err != nil {
			return nil, err
		}
		s.When, s.WhenDo = w, r.When.Plugin+"."+r.When.Function
		if s.WhenValues = valuesOf(r.When); s.WhenValues == nil {
			s.WhenInput = inputOf(r.When) // reads no path: the expression is the news
		}
	} else if r.When != nil {
		h, err := e.cat.Handle(r.When)
		if err != nil {
			return nil, err
		}
		s.When, s.WhenDo, s.WhenDigest = e.met.Condition(plugged{h}, r.When.Plugin, r.When.Function), r.When.Plugin+"."+r.When.Function, h.Module().Digest()
		s.WhenValues, s.WhenInput = valuesOf(r.When), inputOf(r.When)
		if s.WhenValues != nil {
			s.WhenInput = nil // the expression is in the rule; what it saw is the news
		}
	}
	for i := range r.Steps {
		cs, err := e.compileStep(&r.Steps[i])
		if err != nil {
			return nil, err
		}
		s.Steps = append(s.Steps, cs)
	}
	for i := range r.Finally {
		cs, err := e.compileStep(&r.Finally[i])
		if err != nil {
			return nil, fmt.Errorf("finally %w", err)
		}
		s.Finally = append(s.Finally, cs)
	}
	return s, nil
}

// compileStates readies the states s's rule reads (rules.Rule.States),
// and warns of a plugin it calls that was built for an ABI before 1.4:
// such a plugin looks states.<name> and previous.<path> up in the event,
// and finds nothing there.
func (e *Engine) compileStates(s *seq.Sequence) error {
	r := s.Rule
	s.Previous, s.Sun = r.ReadsPrevious, r.ReadsSun
	if e.cfg.Sun == nil && (r.ReadsSun || slices.ContainsFunc(r.Schedules, func(sc rules.Schedule) bool { return sc.Sun != 0 })) {
		e.log.Warn("the rule reads the sun, and the daemon has no location: its sun schedules never come due, and sun. is nil",
			"rule", r.ID, "fix", "set location.latitude and location.longitude in the config (--latitude, --longitude)")
	}
	for _, sr := range r.States {
		var t *tmpl.Template
		if sr.Window == "" || sr.Entity != "" {
			var err error
			if t, err = tmpl.Text(sr.Entity); err != nil {
				return fmt.Errorf("states: %s: %w", sr.Name, err)
			}
		}
		s.States = append(s.States, seq.StateRead{Name: sr.Name, Entity: t, MaxAge: sr.MaxAge, Window: sr.Window})
	}
	if len(s.States) == 0 && !s.Previous && !s.Sun {
		return nil
	}
	for _, c := range calls(r) {
		m := e.cat.Module(c.call.Plugin)
		if m == nil || m.ABIVersion()&0xffff >= 4 {
			continue
		}
		e.log.Warn("a plugin the rule calls was built for an ABI before 1.4: it does not see the states the rule reads, previous, nor the sun",
			"rule", r.ID, "plugin", c.call.Plugin, "abi", abi.VersionString(m.ABIVersion()), "fix", "rebuild it with a current SDK")
	}
	return nil
}

// compileStep binds one step (or finally step) to its plugins' handles.
func (e *Engine) compileStep(st *rules.Step) (seq.CompiledStep, error) {
	if st.Wait != nil {
		return e.compileWait(st)
	}
	act, err := e.cat.Handle(&st.Do)
	if err != nil {
		return seq.CompiledStep{}, fmt.Errorf("step %s: %w", st.Name, err)
	}
	cs := seq.CompiledStep{Name: st.Name, Do: st.Do.Plugin + "." + st.Do.Function,
		Action: e.met.Action(plugged{act}, st.Do.Plugin, st.Do.Function), After: st.After,
		Durable: st.Durable, ContinueOnError: st.ContinueOnError, Retry: st.Retry, Fingerprint: st.Fingerprint(), Digest: act.Module().Digest()}
	e.observe(&cs, st.Do.With)
	if st.When != nil {
		w, err := e.condition(st.When)
		if err != nil {
			return seq.CompiledStep{}, fmt.Errorf("step %s: %w", st.Name, err)
		}
		cs.When = w
		cs.WhenValues = valuesOf(st.When)
	}
	cs.Input = inputOf(&st.Do)
	return cs, nil
}

// compileWait binds a wait-for step: its own when and its wait's when.
func (e *Engine) compileWait(st *rules.Step) (seq.CompiledStep, error) {
	w := st.Wait
	cs := seq.CompiledStep{Name: st.Name, Do: "wait-for " + string(w.Pattern), Fingerprint: st.Fingerprint(),
		Wait: &seq.Wait{Pattern: w.Pattern, Match: w.Match, Timeout: w.Timeout, Continue: w.Continue}}
	for _, c := range []struct {
		call *rules.Call
		to   *seq.Condition
	}{{st.When, &cs.When}, {w.When, &cs.Wait.When}} {
		if c.call == nil {
			continue
		}
		w, err := e.condition(c.call)
		if err != nil {
			return seq.CompiledStep{}, fmt.Errorf("step %s: %w", st.Name, err)
		}
		*c.to = w
	}
	return cs, nil
}

// condition binds a step's or a wait's when: the host's own evaluation
// of a string when:, or the plugin's condition, timed.
func (e *Engine) condition(c *rules.Call) (seq.Condition, error) {
	if c.Native() {
		return compileExpr(c)
	}
	h, err := e.cat.Handle(c)
	if err != nil {
		return nil, err
	}
	return e.met.Condition(plugged{h}, c.Plugin, c.Function), nil
}

// observe wraps st's action when the config asks to see action calls.
func (e *Engine) observe(st *seq.CompiledStep, with []byte) {
	if e.cfg.ObserveAction == nil {
		return
	}
	st.Action = observe.Action(st.Action, st.Do, st.Digest, with, e.cfg.ObserveAction)
}

// ruleDef is what a rule was compiled from (ruleset.Config.Def): its
// definition (every field but positions) and the digests of the modules
// its calls run on. Equal defs mean the compiled sequence can be kept.
func (e *Engine) ruleDef(r *rules.Rule) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%v|%d|%v|%v|%d|%s|%v|%v|%s|", r.ID, r.Mode, r.Max, r.Cooldown, r.Repeat,
		r.Priority, r.Key, r.OnPluginChange, r.Once, r.When.Fingerprint())
	for _, p := range r.On {
		fmt.Fprintf(h, "on:%s|", p)
	}
	for _, c := range r.Changes {
		fmt.Fprintf(h, "changes:%s|", c)
	}
	fmt.Fprintf(h, "debounce:%v|throttle:%v|vars:%s|", r.Debounce, r.Throttle, r.Vars)
	for _, sr := range r.States { // as before for a rule that reads none
		if sr.Window != "" {
			fmt.Fprintf(h, "window:%s:%s:%s|", sr.Name, sr.Window, sr.Entity)
			continue
		}
		fmt.Fprintf(h, "state:%s:%s:%v|", sr.Name, sr.Entity, sr.MaxAge)
	}
	for _, c := range r.Closes {
		fmt.Fprintf(h, "closes:%s|", c.Window)
	}
	if r.ReadsPrevious {
		fmt.Fprint(h, "previous|")
	}
	if r.ReadsSun {
		fmt.Fprint(h, "sun|")
	}
	if r.MaxKeys != rules.DefaultMaxKeys { // as before for a rule that says none: its sequence is kept
		fmt.Fprintf(h, "max-keys:%d|", r.MaxKeys)
	}
	for _, s := range r.Schedules {
		fmt.Fprintf(h, "schedule:%s:%v:%v|", s.Key(), s.Missed, s.Within)
	}
	for _, c := range r.CancelOn {
		fmt.Fprintf(h, "cancel:%s:%v|", c.Pattern, c.Match)
	}
	for i := range r.Steps {
		fmt.Fprintf(h, "step:%s:%s:%v:%v|", r.Steps[i].Name, r.Steps[i].Fingerprint(), r.Steps[i].ContinueOnError, r.Steps[i].Retry)
	}
	for i := range r.Finally {
		fmt.Fprintf(h, "finally:%s:%s|", r.Finally[i].Name, r.Finally[i].Fingerprint())
	}
	for _, c := range calls(r) {
		if m := e.cat.Module(c.call.Plugin); m != nil {
			fmt.Fprintf(h, "module:%s:%s|", c.call.Plugin, m.Digest())
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// checkRulesOn refuses a module that would break a loaded rule
// (catalog.Config.Check): every function a rule calls on the plugin must
// exist with the right kind and accept the rule's config. It checks by
// preparing the handles the rules use on the new module
// (wasm.Handle.Prepare), which also warms it: the first calls after the
// swap find their config already in place.
func (e *Engine) checkRulesOn(plugin string, m *wasm.Module) error {
	for _, s := range e.rules.Current().Sequences() {
		for _, c := range calls(s.Rule) {
			if c.call.Plugin != plugin {
				continue
			}
			want := abi.KindAction
			if c.condition {
				want = abi.KindCondition
			}
			if k, ok := m.Kind(c.call.Function); !ok || k != want {
				return fmt.Errorf("it would break rule %s at %s: no %s %q", s.Rule.ID, c.call.Pos, want, c.call.Function)
			}
			h, err := e.cat.Handle(c.call)
			if err == nil {
				err = h.Prepare(e.ctx, m)
			}
			if err != nil {
				return fmt.Errorf("it would break rule %s at %s: %w", s.Rule.ID, c.call.WithPos, catalog.ConfigError(plugin, c.call.Function, err))
			}
		}
	}
	return nil
}

type ruleCall struct {
	call      *rules.Call
	condition bool
}

// calls lists every plugin call a rule makes: not its string when:s,
// which the host evaluates itself.
func calls(r *rules.Rule) []ruleCall {
	var out []ruleCall
	cond := func(c *rules.Call) {
		if c != nil && !c.Native() {
			out = append(out, ruleCall{c, true})
		}
	}
	cond(r.When)
	for _, steps := range [][]rules.Step{r.Steps, r.Finally} {
		for i := range steps {
			st := &steps[i]
			if st.Wait == nil {
				out = append(out, ruleCall{&st.Do, false})
			} else {
				cond(st.Wait.When)
			}
			cond(st.When)
		}
	}
	return out
}

// Current implements seq.Resolver: the rule as loaded now.
func (e *Engine) Current(rule string) *seq.Sequence { return e.rules.Current().Rule(rule) }

// Refused implements seq.Refuser: whether a rule not loaded now was
// refused for a problem of its file (ruleset.Set.Refused).
func (e *Engine) Refused(rule string) bool { return e.rules.Current().Refused(rule) }

// Pinned implements seq.Resolver: step idx of s configured on the module
// with the given digest, loaded from the module store if need be
// (catalog.Catalog.Pinned).
func (e *Engine) Pinned(s *seq.Sequence, idx int, digest string) (*seq.CompiledStep, error) {
	do := &s.Rule.Steps[idx].Do
	h, err := e.cat.Pinned(do.Plugin, digest, do.Function, do.With)
	if te := (*trust.Error)(nil); errors.As(err, &te) {
		return nil, fmt.Errorf("%w: %v", seq.ErrUntrusted, err)
	}
	if err != nil {
		return nil, err
	}
	st := s.Steps[idx]
	st.Action, st.Digest = e.met.Action(plugged{h}, do.Plugin, do.Function), digest
	e.observe(&st, do.With)
	e.log.Info("running a waiting step on the module it was scheduled with", "rule", s.Rule.ID,
		"step", st.Name, "plugin", do.Plugin, "digest", digest[:12])
	return &st, nil
}

var _ seq.Resolver = (*Engine)(nil)
