package seq

import (
	"errors"
	"slices"

	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq/core"
)

// waitFor identifies the step a run waits for, as it was when the run
// parked (or when its record was written).
type waitFor struct {
	name        string
	fingerprint string
	digest      string
}

// Resolver is the rules as loaded now: what a waiting step is judged
// against when it comes due, live or after a restart.
type Resolver interface {
	// Current is the rule's sequence as loaded now, nil when the rule is gone.
	Current(rule string) *Sequence
	// Pinned returns step idx of s configured on the module with the given
	// digest — the plugin's code when the step was scheduled — or an error
	// when that module can no longer be had (ErrUntrusted when it is had
	// but no key trusted now signed it).
	Pinned(s *Sequence, idx int, digest string) (*CompiledStep, error)
}

// Refuser is an optional interface of a Resolver: whether a rule it does
// not hold now was refused for a problem of its file (a typo, a plugin
// that did not load) that an operator may mend. Replay keeps such a
// rule's records waiting for it (ReplayAbsent) instead of dropping them
// as the records of a rule that is gone: a typo and a reboot must not
// throw away accepted work.
type Refuser interface {
	Refused(rule string) bool
}

// ErrUntrusted is a Resolver's answer for a module no key trusted now
// signed (revoked since the step was scheduled): the step is dropped with
// DropUntrusted, never run.
var ErrUntrusted = errors.New("the module is not trusted")

// Reasons a waiting step is dropped when it comes due.
const (
	DropPluginChanged = "plugin changed and the rule says drop"
	DropPinMissing    = "the module it was scheduled with is gone"
	DropUntrusted     = "the module it was scheduled with is no longer trusted"
)

// verdict is what a waiting step does when it comes due.
type verdict struct {
	seq    *Sequence
	idx    int
	pinned *CompiledStep // run this instead of seq.Steps[idx]
	drop   string
}

// judge applies the one rule for waiting steps, the same live and across a
// restart: the step of that name in the rule as loaded now runs if its
// configuration is the one the wait was scheduled with; a changed module
// runs the pinned digest (or the new module, or nothing, as the rule's
// on-plugin-change says); a changed configuration, a missing step or a
// missing rule drops it. After the due step the run continues with the rule
// as loaded now, matched by step name.
//
// It may load a module (Pinned): call it without the runner's lock.
func (rn *Runner) judge(rule string, w waitFor, fallback func(string) *Sequence) verdict {
	var cur *Sequence
	if rn.resolver != nil {
		cur = rn.resolver.Current(rule)
	} else {
		cur = fallback(rule)
	}
	if cur == nil {
		return verdict{drop: DropRuleGone}
	}
	idx := slices.IndexFunc(cur.Steps, func(st CompiledStep) bool { return st.Name == w.name })
	if idx < 0 {
		return verdict{drop: DropStepGone}
	}
	st := &cur.Steps[idx]
	if st.Fingerprint != w.fingerprint {
		return verdict{drop: DropStepChanged}
	}
	if w.digest == "" || st.Digest == w.digest {
		return verdict{seq: cur, idx: idx}
	}
	switch cur.Rule.OnPluginChange {
	case rules.PluginUpgrade:
		return verdict{seq: cur, idx: idx}
	case rules.PluginDrop:
		return verdict{drop: DropPluginChanged}
	}
	if rn.resolver == nil {
		return verdict{seq: cur, idx: idx}
	}
	pinned, err := rn.resolver.Pinned(cur, idx, w.digest)
	if errors.Is(err, ErrUntrusted) {
		rn.log.Warn("not running a waiting step: the module it was scheduled with is no longer trusted", "rule", rule,
			"step", w.name, "digest", w.digest, "error", err)
		return verdict{drop: DropUntrusted}
	}
	if err != nil {
		rn.log.Warn("cannot load the module a waiting step was scheduled with", "rule", rule, "step", w.name,
			"digest", w.digest, "error", err)
		return verdict{drop: DropPinMissing}
	}
	return verdict{seq: cur, idx: idx, pinned: pinned}
}

// dropRunLocked drops r's waiting step for reason: logged, counted, and
// the run ended (dropped). It returns the records to drop.
func (sm *machine) dropRunLocked(r *run, rule, reason string) []string {
	sm.noteDropLocked(r.id, rule, r.waitingFor().name, reason)
	r.more().reason = reason
	return sm.endLocked(r, core.Dropped)
}

// noteDropLocked logs and counts a waiting step dropped for reason.
func (sm *machine) noteDropLocked(run, rule, step, reason string) {
	sm.log.Warn("dropping a waiting step", "run", run, "rule", rule, "step", step, "reason", reason)
	if sm.dropped == nil {
		sm.dropped = map[string]uint64{}
	}
	kind := reason
	for _, k := range []string{DropOverdue, DropTooEarly} {
		if len(reason) >= len(k) && reason[:len(k)] == k {
			kind = k
		}
	}
	sm.dropped[kind]++
}

// WaitingDigests counts, by module digest, the live runs parked for a step
// or about to run one on a pinned module: what a module store must keep.
func (rn *Runner) WaitingDigests() map[string]int {
	out := map[string]int{}
	rn.view(func() {
		for _, r := range rn.m.runs {
			switch {
			case r.few().override != nil: // judged, about to run on its pinned module
				out[r.rare.override.Digest]++
			case r.timer != nil && r.waitingFor().digest != "":
				out[r.waitingFor().digest]++
			}
		}
	})
	return out
}

// EndRule ends every live run of a rule that was removed, dropping their
// records and what the rule held queued, and returns how many runs it
// ended. A run waiting for a step is dropped with the same line (and
// reason) Replay gives a record of a rule that is gone, so a rule removed
// while a step waits and one removed while the daemon was down look the
// same in the log; a run between steps ends with a line of its own.
func (rn *Runner) EndRule(rule, reason string) int {
	n := 0
	rn.apply(func(fx *effects) {
		rn.m.heldTriggersLocked(rule, true)
		if rs := rn.m.rules[rule]; rs != nil {
			fx.drop(rn.m.dropDebouncedLocked(rs, nil, false)...)
			for _, ks := range rs.keys {
				for _, t := range ks.few().queue {
					t.tk.settle() // dropped with its rule: settled, not left in the journal
				}
				if ks.m != nil {
					ks.m.queue = nil
				}
				dropThrottledLocked(ks, nil, false)
				for len(ks.live) > 0 {
					r := ks.live[0]
					if r.timer != nil {
						fx.drop(rn.m.dropRunLocked(r, rule, reason)...)
					} else {
						rn.log.Warn("ending a run of a removed rule", "run", r.id, "rule", rule, "reason", reason)
						r.more().reason = reason
						fx.drop(rn.m.endLocked(r, core.Dropped)...)
					}
					n++
				}
			}
		}
	})
	return n
}
