package daemon

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/ruleset"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/wasm"
)

func (d *Daemon) ruleSnap() *ruleset.Set { return d.rules.Current() }

// loadRules reads the rules directory and publishes a new rule set
// (ruleset.Loader.Load); a removed rule's live runs end, each with a log
// line, and the rules' states follow. A change is announced to the other
// processes once the reload lock is free: a bus that is slow to refuse
// must not hold up the next reload.
func (d *Daemon) loadRules() {
	if ch := d.reloadRules(); ch.Any() {
		d.announce(ch.Added, ch.Changed, ch.Removed)
	}
}

// reloadRules is loadRules under the reload lock; it returns what changed.
func (d *Daemon) reloadRules() ruleset.Change {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	ch := d.rules.Load()
	if ch.First {
		return ch // Start reads the states of the rules it found
	}
	for _, id := range ch.Removed {
		if d.runner != nil {
			d.runner.EndRule(id, seq.DropRuleGone)
		}
	}
	if ch.NewProblems {
		d.met.RulesReloaded(false)
	} else if ch.Any() {
		d.met.RulesReloaded(true)
	}
	d.syncTasks(d.ruleSnap(), ch.Removed)
	return ch
}

// ruleDef is what a rule was compiled from: its definition (every field
// but positions) and the digests of the modules its calls run on. Equal
// defs mean the compiled sequence can be kept.
func (d *Daemon) ruleDef(r *rules.Rule) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%v|%d|%v|%v|%d|%s|%v|%v|%s|", r.ID, r.Mode, r.Max, r.Cooldown, r.Repeat,
		r.Priority, r.Key, r.OnPluginChange, r.Once, r.When.Fingerprint())
	for _, p := range r.On {
		fmt.Fprintf(h, "on:%s|", p)
	}
	for _, c := range r.CancelOn {
		fmt.Fprintf(h, "cancel:%s:%v|", c.Pattern, c.Match)
	}
	for i := range r.Steps {
		fmt.Fprintf(h, "step:%s:%s|", r.Steps[i].Name, r.Steps[i].Fingerprint())
	}
	for _, c := range calls(r) {
		if m := d.cat.Module(c.call.Plugin); m != nil {
			fmt.Fprintf(h, "module:%s:%s|", c.call.Plugin, m.Digest())
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

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

// compile turns a rule into a runnable sequence with configured handles.
func (d *Daemon) compile(r *rules.Rule) (*seq.Sequence, error) {
	s := &seq.Sequence{Rule: r}
	if r.When != nil {
		h, err := d.cat.Handle(r.When)
		if err != nil {
			return nil, err
		}
		s.When, s.WhenDo, s.WhenDigest = d.met.Condition(plugged{h}, r.When.Plugin, r.When.Function), r.When.Plugin+"."+r.When.Function, h.Module().Digest()
	}
	for i := range r.Steps {
		st := &r.Steps[i]
		act, err := d.cat.Handle(&st.Do)
		if err != nil {
			return nil, fmt.Errorf("step %s: %w", st.Name, err)
		}
		cs := seq.CompiledStep{Name: st.Name, Do: st.Do.Plugin + "." + st.Do.Function,
			Action: d.met.Action(plugged{act}, st.Do.Plugin, st.Do.Function), After: st.After,
			Durable: st.Durable, Fingerprint: st.Fingerprint(), Digest: act.Module().Digest()}
		d.observe(&cs, st.Do.With)
		if st.When != nil {
			w, err := d.cat.Handle(st.When)
			if err != nil {
				return nil, fmt.Errorf("step %s: %w", st.Name, err)
			}
			cs.When = d.met.Condition(plugged{w}, st.When.Plugin, st.When.Function)
		}
		s.Steps = append(s.Steps, cs)
	}
	return s, nil
}
