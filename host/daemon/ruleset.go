package daemon

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/triggers"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/regular"
)

// ruleSet is the rules as loaded now: an immutable snapshot the bus reader,
// the sequencer's resolver and Status read without locks, and a reload
// replaces whole.
type ruleSet struct {
	files map[string]*ruleFile
	seqs  []*seq.Sequence
	byID  map[string]*seq.Sequence
	defs  map[string]string // rule id → what it was compiled from (ruleDef)
	index *triggers.Index[*seq.Sequence]
	errs  []*rules.Error
}

// ruleFile is one rules file as last read.
type ruleFile struct {
	hash  [32]byte
	rules []*rules.Rule
	errs  []*rules.Error
	// kept: the file's last write did not parse, and the rules it held
	// before keep serving.
	kept bool
}

func (d *Daemon) ruleSnap() *ruleSet { return d.rules.Load() }

// loadRules reads the rules directory and publishes a new rule set. Files
// whose content did not change are not parsed again. A file that no longer
// parses keeps its previous rules (at start, with nothing previous, its
// valid rules load). A rule whose definition and plugins did not change
// keeps its sequence, so its live runs are untouched; a removed rule's live
// runs end, each with a log line. A change is announced to the other
// processes once the reload lock is free: a bus that is slow to refuse
// must not hold up the next reload.
func (d *Daemon) loadRules() {
	added, changed, removed := d.reloadRules()
	if len(added)+len(changed)+len(removed) > 0 {
		d.announce(added, changed, removed)
	}
}

// reloadRules is loadRules under the reload lock; it returns what changed.
func (d *Daemon) reloadRules() (added, changed, removed []string) {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	old := d.ruleSnap()
	set := &ruleSet{files: map[string]*ruleFile{}, byID: map[string]*seq.Sequence{}, defs: map[string]string{}}
	paths, err := ruleFiles(d.cfg.RulesDir)
	if err != nil {
		d.log.Error("rules directory unreadable; the loaded rules keep serving", "dir", d.cfg.RulesDir, "error", err)
		return
	}
	for _, path := range paths {
		set.files[path] = d.readRuleFile(path, old)
	}
	claimed := map[string]string{}
	for _, path := range paths {
		rf := set.files[path]
		set.errs = append(set.errs, rf.errs...)
		for _, r := range rf.rules {
			if first, dup := claimed[r.ID]; dup {
				set.errs = append(set.errs, &rules.Error{Pos: r.Pos, Rule: r.ID,
					Msg: fmt.Sprintf("rule %q is already defined in %s", r.ID, first)})
				continue
			}
			claimed[r.ID] = path
			def := d.ruleDef(r)
			if old != nil && old.defs[r.ID] == def {
				s := old.byID[r.ID]
				set.add(s, def)
				continue
			}
			s, err := d.compile(r)
			if err != nil {
				set.errs = append(set.errs, &rules.Error{Pos: r.Pos, Rule: r.ID, Msg: err.Error()})
				d.log.Error("rule not compiled", "rule", r.ID, "error", err)
				continue
			}
			set.add(s, def)
		}
	}
	d.logProblems(old, set)
	b := triggers.NewBuilder[*seq.Sequence]()
	for _, s := range set.seqs {
		for _, p := range s.Rule.On {
			b.On(p, s)
		}
		for _, c := range s.Rule.CancelOn {
			b.CancelOn(c.Pattern, s)
		}
	}
	set.index = b.Build()
	d.rules.Store(set)
	if old == nil {
		return
	}
	defer func() { d.syncTasks(set, removed) }()
	for id, def := range set.defs {
		switch od, ok := old.defs[id]; {
		case !ok:
			added = append(added, id)
		case od != def:
			changed = append(changed, id)
		}
	}
	for id := range old.defs {
		if _, ok := set.defs[id]; !ok {
			removed = append(removed, id)
			if d.runner != nil {
				d.runner.EndRule(id, seq.DropRuleGone)
			}
		}
	}
	if len(set.errs) > 0 && problems(set.errs) != problems(old.errs) {
		d.met.RulesReloaded(false)
	} else if len(added)+len(changed)+len(removed) > 0 {
		d.met.RulesReloaded(true)
	}
	if len(added)+len(changed)+len(removed) > 0 {
		sort.Strings(added)
		sort.Strings(changed)
		sort.Strings(removed)
		d.log.Info("rules reloaded", "added", added, "changed", changed, "removed", removed, "rules", len(set.seqs))
	}
	return added, changed, removed
}

// problems is a set of rule errors as one string, to tell a reload that
// brought new problems from one that kept the old.
func problems(errs []*rules.Error) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error() + "\n")
	}
	return b.String()
}

func (s *ruleSet) add(q *seq.Sequence, def string) {
	s.seqs = append(s.seqs, q)
	s.byID[q.Rule.ID] = q
	s.defs[q.Rule.ID] = def
}

func ruleFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() && !strings.HasPrefix(n, ".") && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	sort.Strings(out)
	return out, nil
}

// maxLoggedProblems bounds the rule problems one reload logs; ruled lint
// and Status list them all.
const maxLoggedProblems = 20

// logProblems logs the rule problems set has that old did not: a file's
// problems are logged once, when it changes, not again at every refresh
// while it stays as it is (a 50 MB file's 269,717 problems were logged
// every minute), and at most maxLoggedProblems of them.
func (d *Daemon) logProblems(old, set *ruleSet) {
	seen := map[string]bool{}
	if old != nil {
		for _, e := range old.errs {
			seen[e.Error()] = true
		}
	}
	n := 0
	for _, e := range set.errs {
		if seen[e.Error()] {
			continue
		}
		if n < maxLoggedProblems {
			d.log.Error("rule problem", "at", e.Pos.String(), "rule", e.Rule, "error", e.Msg, "hint", e.Hint)
		}
		n++
	}
	if n > maxLoggedProblems {
		d.log.Error("more rule problems not logged; ruled lint lists them all", "not-logged", n-maxLoggedProblems,
			"dir", d.cfg.RulesDir)
	}
}

// readRuleFile parses a file unless its content is what old already holds.
func (d *Daemon) readRuleFile(path string, old *ruleSet) *ruleFile {
	data, err := regular.ReadFile(path, rules.MaxFileSize)
	if err != nil {
		if old != nil && old.files[path] != nil {
			return old.files[path]
		}
		return &ruleFile{errs: []*rules.Error{{Pos: rules.Pos{File: path}, Msg: err.Error()}}}
	}
	hash := sha256.Sum256(data)
	var prev *ruleFile
	if old != nil {
		prev = old.files[path]
	}
	if prev != nil && prev.hash == hash {
		return prev
	}
	rs, errs := rules.ParseFile(path, data, d.cat)
	if len(errs) > 0 && prev != nil {
		d.log.Error("rules file does not parse; its previous rules keep serving", "file", path, "problems", len(errs))
		return &ruleFile{hash: hash, rules: prev.rules, errs: errs, kept: true}
	}
	return &ruleFile{hash: hash, rules: rs, errs: errs}
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
