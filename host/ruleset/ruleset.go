package ruleset

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/triggers"
	"github.com/ruled-dev/ruled/host/trust"
	"github.com/ruled-dev/ruled/internal/regular"
)

// Set is the rules as loaded at one moment: immutable once published, so
// the bus reader, the sequencer's resolver and Status read it without
// locks, and a reload replaces it whole. Its methods answer on a nil Set
// as on an empty one.
type Set struct {
	files map[string]*file
	seqs  []*seq.Sequence
	byID  map[string]*seq.Sequence
	defs  map[string]string // rule id → what it was compiled from (Config.Def)
	// written are the rules as their files have them now, by id: a rule
	// whose definition did not change keeps its old sequence, and with it
	// the text, description and line it was first loaded with.
	written map[string]*rules.Rule
	index   *triggers.Index[*seq.Sequence]
	errs    []*rules.Error
	// windows are the windows the files define (rules.CheckWindows kept).
	windows []*rules.Window
}

// Windows are the windows the rule files define, in file order.
func (s *Set) Windows() []*rules.Window {
	if s == nil {
		return nil
	}
	return s.windows
}

// Sequences lists the compiled rules, in the order of their files.
func (s *Set) Sequences() []*seq.Sequence {
	if s == nil {
		return nil
	}
	return s.seqs
}

// Rule is the compiled rule with the given id; nil when none is loaded.
func (s *Set) Rule(id string) *seq.Sequence {
	if s == nil {
		return nil
	}
	return s.byID[id]
}

// Index is the topic → rule index of the set's triggers and cancel-ons.
func (s *Set) Index() *triggers.Index[*seq.Sequence] {
	if s == nil {
		return triggers.NewBuilder[*seq.Sequence]().Build()
	}
	return s.index
}

// Problems are the rule files' errors: what did not parse, check or
// compile (its rules are not in the set, or kept from before).
func (s *Set) Problems() []*rules.Error {
	if s == nil {
		return nil
	}
	return s.errs
}

// Refused reports whether rule, which the set does not hold, may be one
// its files' problems refused: a problem names it (a typo in it, a plugin
// of its that did not load), or a problem names no rule (a file that did
// not parse: which rules it defines is not known). What waits for such a
// rule — its pending records, its journaled events — waits for its file
// to be mended, rather than go as the rule of a file an operator deleted.
func (s *Set) Refused(rule string) bool {
	if s == nil || s.byID[rule] != nil {
		return false
	}
	for _, e := range s.errs {
		if e.Rule == rule || e.Rule == "" {
			return true
		}
	}
	return false
}

// Written is rule id as its file has it now — its Source, Description
// and Pos, which a reload that changes nothing else does not recompile —
// nil when none is loaded.
func (s *Set) Written(id string) *rules.Rule {
	if s == nil {
		return nil
	}
	return s.written[id]
}

func (s *Set) add(q *seq.Sequence, def string, written *rules.Rule) {
	s.written[q.Rule.ID] = written
	s.seqs = append(s.seqs, q)
	s.byID[q.Rule.ID] = q
	s.defs[q.Rule.ID] = def
}

// file is one rules file as last read.
type file struct {
	hash [32]byte
	// gen is the catalog's generation the file was parsed at: a file with
	// problems is parsed again once the plugins changed, since a plugin
	// that did not load then may serve now.
	gen     uint64
	rules   []*rules.Rule
	windows []*rules.Window
	errs    []*rules.Error
	// kept: the file's last write did not parse, and the rules it held
	// before keep serving.
	kept bool
}

// Config is what a Loader is built from.
type Config struct {
	// Dir is the rules directory: its *.yaml and *.yml files (not hidden
	// ones) are the rules.
	Dir string
	// Catalog is the plugins as the parser checks calls against them.
	Catalog rules.Catalog
	// Compile binds a parsed rule to the plugins it calls.
	Compile func(*rules.Rule) (*seq.Sequence, error)
	// Def is what a rule is compiled from (its definition and the
	// digests of the modules it calls): a rule whose Def is unchanged
	// keeps its compiled sequence.
	Def func(*rules.Rule) string
	// Trust, when set, checks each rule file against its signature file
	// (trust.Gate) where the operator requires signatures: a file refused
	// adds no rule, and the rules it held before keep serving.
	Trust Verifier
	Log   hclog.Logger
}

// Verifier checks a file against its signature (trust.Gate) and forgets a
// file that is gone.
type Verifier interface {
	Required(place string) bool
	Check(place, path string, content, sig []byte) (key string, err error)
	CheckRead(place, path string, content, sig []byte, readErr error) (key string, err error)
	Forget(path string)
}

// Loader reads the rules directory and publishes Sets.
type Loader struct {
	cfg Config
	log hclog.Logger
	mu  sync.Mutex // one Load at a time
	cur atomic.Pointer[Set]
}

// New returns a Loader with no Set yet (Current is nil until Load).
func New(cfg Config) *Loader {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	return &Loader{cfg: cfg, log: cfg.Log}
}

// Current is the Set published last; nil before the first Load.
func (l *Loader) Current() *Set { return l.cur.Load() }

// Change is what a Load changed, rule ids sorted. First is the first
// Load (every rule is new; the lists are empty). NewProblems says the
// set's problems differ from the last set's and are not none.
type Change struct {
	Added, Changed, Removed []string
	First, NewProblems      bool
}

// Any reports whether a rule was added, changed or removed.
func (c Change) Any() bool { return len(c.Added)+len(c.Changed)+len(c.Removed) > 0 }

// Load reads the rules directory and publishes a new Set. Files whose
// content did not change are not parsed again. A file that no longer
// parses keeps its previous rules (at the first Load, with nothing
// previous, its valid rules load). A rule whose Def did not change keeps
// its sequence. A directory that cannot be read keeps the current Set
// (the first Load publishes an empty one with the error as its problem).
func (l *Loader) Load() Change {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.cur.Load()
	set := &Set{files: map[string]*file{}, byID: map[string]*seq.Sequence{}, defs: map[string]string{},
		written: map[string]*rules.Rule{}}
	paths, err := ruleFiles(l.cfg.Dir)
	if err != nil {
		l.log.Error("rules directory unreadable; the loaded rules keep serving", "dir", l.cfg.Dir, "error", err)
		if old != nil {
			return Change{}
		}
		set.errs = []*rules.Error{{Pos: rules.Pos{File: l.cfg.Dir}, Msg: err.Error()}}
		set.index = triggers.NewBuilder[*seq.Sequence]().Build()
		l.cur.Store(set)
		return Change{First: true, NewProblems: true}
	}
	for _, path := range paths {
		set.files[path] = l.read(path, old)
	}
	if old != nil && l.cfg.Trust != nil {
		for path := range old.files {
			if set.files[path] == nil {
				l.cfg.Trust.Forget(path)
			}
		}
	}
	var all []*rules.Rule
	var windows []*rules.Window
	for _, path := range paths {
		all = append(all, set.files[path].rules...)
		windows = append(windows, set.files[path].windows...)
	}
	// A rule that reads, or is triggered by, a window no file defines is
	// refused as a rule with a problem is.
	kept, windows, werrs := rules.CheckWindows(all, windows)
	set.windows = windows
	ok := make(map[*rules.Rule]bool, len(kept))
	for _, r := range kept {
		ok[r] = true
	}
	claimed := map[string]string{}
	for _, path := range paths {
		rf := set.files[path]
		set.errs = append(set.errs, rf.errs...)
		for _, r := range rf.rules {
			if !ok[r] {
				continue
			}
			if first, dup := claimed[r.ID]; dup {
				set.errs = append(set.errs, &rules.Error{Pos: r.Pos, Rule: r.ID,
					Msg: fmt.Sprintf("rule %q is already defined in %s", r.ID, first)})
				continue
			}
			claimed[r.ID] = path
			def := l.cfg.Def(r)
			if old != nil && old.defs[r.ID] == def {
				set.add(old.byID[r.ID], def, r)
				continue
			}
			s, err := l.cfg.Compile(r)
			if err != nil {
				set.errs = append(set.errs, &rules.Error{Pos: r.Pos, Rule: r.ID, Msg: err.Error()})
				l.log.Error("rule not compiled", "rule", r.ID, "error", err)
				continue
			}
			set.add(s, def, r)
		}
	}
	set.errs = append(set.errs, werrs...)
	l.logProblems(old, set)
	b := triggers.NewBuilder[*seq.Sequence]()
	for _, s := range set.seqs {
		for _, p := range s.Rule.On {
			b.On(p, s)
		}
		for _, c := range s.Rule.Changes { // ingest asks the change of each event (state.Fires)
			b.On(c.Topic, s)
		}
		for _, c := range s.Rule.CancelOn {
			b.CancelOn(c.Pattern, s)
		}
		for _, st := range s.Rule.Steps {
			if st.Wait != nil {
				b.AwaitOn(st.Wait.Pattern, s)
			}
		}
	}
	set.index = b.Build()
	l.cur.Store(set)
	if old == nil {
		return Change{First: true, NewProblems: len(set.errs) > 0}
	}
	var ch Change
	for id, def := range set.defs {
		switch od, ok := old.defs[id]; {
		case !ok:
			ch.Added = append(ch.Added, id)
		case od != def:
			ch.Changed = append(ch.Changed, id)
		}
	}
	for id := range old.defs {
		if _, ok := set.defs[id]; !ok {
			ch.Removed = append(ch.Removed, id)
		}
	}
	ch.NewProblems = len(set.errs) > 0 && problems(set.errs) != problems(old.errs)
	if ch.Any() {
		sort.Strings(ch.Added)
		sort.Strings(ch.Changed)
		sort.Strings(ch.Removed)
		l.log.Info("rules reloaded", "added", ch.Added, "changed", ch.Changed, "removed", ch.Removed, "rules", len(set.seqs))
	}
	return ch
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
func (l *Loader) logProblems(old, set *Set) {
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
			l.log.Error("rule problem", "at", e.Pos.String(), "rule", e.Rule, "error", e.Msg, "hint", e.Hint)
		}
		n++
	}
	if n > maxLoggedProblems {
		l.log.Error("more rule problems not logged; ruled lint lists them all", "not-logged", n-maxLoggedProblems,
			"dir", l.cfg.Dir)
	}
}

// read parses a file unless its content is what old already holds.
func (l *Loader) read(path string, old *Set) *file {
	data, err := regular.ReadFile(path, rules.MaxFileSize)
	if err != nil {
		if old != nil && old.files[path] != nil {
			return old.files[path]
		}
		return &file{errs: []*rules.Error{{Pos: rules.Pos{File: path}, Msg: err.Error()}}}
	}
	hash := sha256.Sum256(data)
	checked := l.cfg.Trust != nil && l.cfg.Trust.Required(trust.PlaceRules)
	var sig []byte
	var sigErr error
	if checked {
		if sig, sigErr = trust.ReadSig(path); sigErr != nil {
			sig = []byte(sigErr.Error()) // part of the cache key below
		}
		// The signature is part of what was read: a signature that
		// arrives after its file makes the file read again.
		h := sha256.New()
		h.Write(hash[:])
		h.Write(sig)
		h.Sum(hash[:0])
	}
	var prev *file
	if old != nil {
		prev = old.files[path]
	}
	gen := l.generation()
	if prev != nil && prev.hash == hash && (len(prev.errs) == 0 || prev.gen == gen) {
		return prev
	}
	if checked {
		if _, err := l.cfg.Trust.CheckRead(trust.PlaceRules, path, data, sig, sigErr); err != nil {
			e := &rules.Error{Pos: rules.Pos{File: path}, Msg: "not trusted: " + err.Error()}
			if prev != nil {
				l.log.Error("rules file refused: its signature does not check; its previous rules keep serving", "file", path, "error", err)
				return &file{hash: hash, rules: prev.rules, windows: prev.windows, errs: []*rules.Error{e}, kept: true}
			}
			l.log.Error("rules file refused: its signature does not check", "file", path, "error", err)
			return &file{hash: hash, errs: []*rules.Error{e}}
		}
	}
	rs, ws, errs := rules.ParseFileWindows(path, data, l.cfg.Catalog)
	if len(errs) > 0 && prev != nil {
		if !(prev.hash == hash && prev.kept) { // said once a write, not at each plugin change
			l.log.Error("rules file does not parse; its previous rules keep serving", "file", path, "problems", len(errs))
		}
		return &file{hash: hash, gen: gen, rules: prev.rules, windows: prev.windows, errs: errs, kept: true}
	}
	return &file{hash: hash, gen: gen, rules: rs, windows: ws, errs: errs}
}

// generation is the catalog's (catalog.Catalog.Generation), 0 for one
// that does not count.
func (l *Loader) generation() uint64 {
	if g, ok := l.cfg.Catalog.(interface{ Generation() uint64 }); ok {
		return g.Generation()
	}
	return 0
}
