package daemon

import (
	"fmt"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/catalog"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/wasm"
)

// Current implements seq.Resolver: the rule as loaded now.
func (d *Daemon) Current(rule string) *seq.Sequence {
	if set := d.ruleSnap(); set != nil {
		return set.Rule(rule)
	}
	return nil
}

// Pinned implements seq.Resolver: step idx of s configured on the module
// with the given digest, loaded from the module store if need be
// (catalog.Catalog.Pinned).
func (d *Daemon) Pinned(s *seq.Sequence, idx int, digest string) (*seq.CompiledStep, error) {
	do := &s.Rule.Steps[idx].Do
	h, err := d.cat.Pinned(do.Plugin, digest, do.Function, do.With)
	if err != nil {
		return nil, err
	}
	st := s.Steps[idx]
	st.Action, st.Digest = d.met.Action(plugged{h}, do.Plugin, do.Function), digest
	d.observe(&st, do.With)
	d.log.Info("running a waiting step on the module it was scheduled with", "rule", s.Rule.ID,
		"step", st.Name, "plugin", do.Plugin, "digest", digest[:12])
	return &st, nil
}

// references counts what needs each digest: the plugins' current modules,
// live waiting runs, pending records.
func (d *Daemon) references() (current map[string]string, pinned map[string]*api.PinnedBy) {
	current = d.cat.Current()
	pinned = map[string]*api.PinnedBy{}
	get := func(dg string) *api.PinnedBy {
		if pinned[dg] == nil {
			pinned[dg] = &api.PinnedBy{}
		}
		return pinned[dg]
	}
	for dg, n := range d.runner.WaitingDigests() {
		get(dg).Waiting += n
	}
	if recs, err := d.pending.List(); err == nil {
		for _, p := range recs {
			if p.Digest != "" {
				get(p.Digest).Records++
			}
		}
	}
	return current, pinned
}

// collect removes the modules nothing references any more
// (catalog.Catalog.Collect): neither a plugin's serving module, nor a live
// waiting run's, nor a pending record's.
func (d *Daemon) collect() {
	_, pinned := d.references()
	d.cat.Collect(func(dg string) bool { _, ok := pinned[dg]; return ok })
}

// checkRulesOn refuses a module that would break a loaded rule
// (catalog.Config.Check): every function a rule calls on the plugin must
// exist with the right kind and accept the rule's config. It checks by
// preparing the handles the rules use on the new module
// (wasm.Handle.Prepare), which also warms it: the first calls after the
// swap find their config already in place.
func (d *Daemon) checkRulesOn(plugin string, m *wasm.Module) error {
	set := d.ruleSnap()
	if set == nil {
		return nil
	}
	for _, s := range set.Sequences() {
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
			h, err := d.cat.Handle(c.call)
			if err == nil {
				err = h.Prepare(d.ctx, m)
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

// calls lists every plugin call a rule makes.
func calls(r *rules.Rule) []ruleCall {
	var out []ruleCall
	if r.When != nil {
		out = append(out, ruleCall{r.When, true})
	}
	for i := range r.Steps {
		st := &r.Steps[i]
		out = append(out, ruleCall{&st.Do, false})
		if st.When != nil {
			out = append(out, ruleCall{st.When, true})
		}
	}
	return out
}

var _ seq.Resolver = (*Daemon)(nil)
