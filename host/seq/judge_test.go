package seq

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// fakeRules is a hand-written Resolver: the rules as "loaded now", which a
// test edits while a step waits.
type fakeRules struct {
	mu   sync.Mutex
	seqs map[string]*Sequence
	j    *journal
	pins []string
	gone map[string]bool // digests whose module is no longer available
}

func (f *fakeRules) Current(rule string) *Sequence {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seqs[rule]
}

func (f *fakeRules) Pinned(s *Sequence, idx int, digest string) (*CompiledStep, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone[digest] {
		return nil, fmt.Errorf("no module %s", digest)
	}
	f.pins = append(f.pins, digest)
	st := s.Steps[idx]
	st.Action = &act{j: f.j, name: st.Name + "@" + digest}
	st.Digest = digest
	return &st, nil
}

func (f *fakeRules) set(s *Sequence) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seqs[s.Rule.ID] = s
}

func (f *fakeRules) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.seqs, id)
}

// TestWaitingStepMatrix is the one rule for waiting steps (ARCHITECTURE.md, "Fingerprints"), run live
// (the rules change while a step waits) and across a restart (they change
// while the process is down): the outcome must be the same.
func TestWaitingStepMatrix(t *testing.T) {
	type edit func(e *env, f *fakeRules)
	build := func(e *env, r rules.Rule, digest string, steps ...string) *Sequence {
		s := e.rule(r, steps...)
		for i := range s.Steps {
			s.Steps[i].Digest = digest
		}
		return s
	}
	base := rules.Rule{ID: "r"}
	tests := []struct {
		name    string
		edit    edit
		journal string // after the wait
		dropped string // the reason, "" when it ran
	}{
		{"(a) module changed: the pinned digest runs", func(e *env, f *fakeRules) {
			f.set(build(e, base, "d2", "a", "b+5m!", "c"))
		}, "a:0: b@d1:0: c:0:", ""},
		{"(b) module changed, upgrade: the new module runs", func(e *env, f *fakeRules) {
			r := base
			r.OnPluginChange = rules.PluginUpgrade
			f.set(build(e, r, "d2", "a", "b+5m!", "c"))
		}, "a:0: b:0: c:0:", ""},
		{"(c) module changed, drop", func(e *env, f *fakeRules) {
			r := base
			r.OnPluginChange = rules.PluginDrop
			f.set(build(e, r, "d2", "a", "b+5m!", "c"))
		}, "a:0:", DropPluginChanged},
		{"(d) step config changed", func(e *env, f *fakeRules) {
			f.set(build(e, base, "d1", "a", "b+7m!", "c"))
		}, "a:0:", DropStepChanged},
		{"(e) step renamed", func(e *env, f *fakeRules) {
			f.set(build(e, base, "d1", "a", "b2+5m!", "c"))
		}, "a:0:", DropStepGone},
		{"(f) rule removed", func(e *env, f *fakeRules) {
			f.remove("r")
		}, "a:0:", DropRuleGone},
		{"(g) nothing changed", func(e *env, f *fakeRules) {
			f.set(build(e, base, "d1", "a", "b+5m!", "c"))
		}, "a:0: b:0: c:0:", ""},
		{"(a') module changed, its old module gone", func(e *env, f *fakeRules) {
			f.set(build(e, base, "d2", "a", "b+5m!", "c"))
			f.gone = map[string]bool{"d1": true}
		}, "a:0:", DropPinMissing},
	}
	for _, tc := range tests {
		for _, across := range []bool{false, true} {
			name := tc.name + map[bool]string{false: " / live", true: " / across a restart"}[across]
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, 2, 100)
				f := &fakeRules{seqs: map[string]*Sequence{}, j: e.j}
				e.configure(func(c *RunnerConfig) { c.Resolver = f })
				s := build(e, base, "d1", "a", "b+5m!", "c")
				f.set(s)
				e.fire(s, `{"topic":"t"}`)
				if across {
					e.restart() // still resolving with f
					tc.edit(e, f)
					e.rn.Replay(nil, time.Hour)
				} else {
					tc.edit(e, f)
				}
				e.advance(5 * time.Minute)
				if got := e.j.String(); got != tc.journal {
					t.Errorf("journal %q; want %q", got, tc.journal)
				}
				if tc.dropped != "" {
					if d := e.rn.Counts().Dropped; d[tc.dropped] != 1 || !e.log.Has(tc.dropped) {
						t.Errorf("dropped %v; want one %q with a log line", d, tc.dropped)
					}
				} else if len(e.rn.Counts().Dropped) != 0 {
					t.Errorf("dropped %v; want none", e.rn.Counts().Dropped)
				}
				if e.h.Len(PendingHash) != 0 || e.rn.Counts().Active != 0 {
					t.Errorf("records %d, active %d after the wait", e.h.Len(PendingHash), e.rn.Counts().Active)
				}
				if strings.Contains(tc.name, "pinned digest runs") {
					// Judged at replay and again when due: the rules may change
					// in between.
					if len(f.pins) == 0 || strings.Trim(strings.Join(f.pins, ""), "d1") != "" {
						t.Errorf("pins %v; want only d1", f.pins)
					}
				}
			})
		}
	}
}

func TestEndRuleAndWaitingDigests(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.rule(rules.Rule{ID: "r", Mode: rules.ModeParallel}, "a", "b+5m!")
	for i := range s.Steps {
		s.Steps[i].Digest = "dd"
	}
	e.fire(s, `{"topic":"t"}`)
	e.fire(s, `{"topic":"t"}`)
	if d := e.rn.WaitingDigests(); d["dd"] != 2 {
		t.Errorf("waiting digests %v; want dd: 2", d)
	}
	if n := e.rn.EndRule("r", DropRuleGone); n != 2 {
		t.Errorf("EndRule ended %d; want 2", n)
	}
	if d := e.rn.Counts().Dropped; e.h.Len(PendingHash) != 0 || d[DropRuleGone] != 2 || !e.log.Has("dropping a waiting step") {
		t.Errorf("records %d; log %v", e.h.Len(PendingHash), e.log.Lines())
	}
	e.advance(10 * time.Minute)
	if got := e.j.String(); got != "a:0: a:0:" {
		t.Errorf("journal %q", got)
	}
}

// refusingRules is fakeRules whose missing rules were refused for a
// problem of their files (Refuser) while refused says so.
type refusingRules struct {
	*fakeRules
	refused bool
}

func (r *refusingRules) Refused(rule string) bool { return r.refused && r.Current(rule) == nil }

// refusedAtRestart is a run of rule r waiting out b's five minutes, and a
// restart (not replayed yet) that finds r refused for a problem of its
// file; s is r as it was, to mend it with.
func refusedAtRestart(t *testing.T) (e *env, f *refusingRules, s *Sequence) {
	e = newEnv(t, 2, 100)
	f = &refusingRules{fakeRules: &fakeRules{seqs: map[string]*Sequence{}, j: e.j}}
	e.configure(func(c *RunnerConfig) { c.Resolver = f })
	s = e.rule(rules.Rule{ID: "r"}, "a", "b+5m!")
	f.set(s)
	e.fire(s, `{"topic":"t"}`)
	e.restart()
	f.remove("r")
	f.refused = true
	return e, f, s
}

// TestRecordsWaitForARefusedRule: a start that finds a record's rule
// refused for a problem of its file (a typo, a plugin that did not load)
// keeps the record waiting, in the store and off the clock; a reload
// that loads the rule takes it up, judged as Replay judges (a changed
// step is dropped); one that leaves the rule refused keeps waiting; one
// that finds no file refusing it drops it as gone. An outside tester's
// soak lost every waiting step of a rule with a typo at a reboot.
func TestRecordsWaitForARefusedRule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mend    func(e *env, f *refusingRules, s *Sequence)
		journal string
		dropped string
	}{
		{"mended", func(e *env, f *refusingRules, s *Sequence) { f.set(s) }, "a:0: b:0:", ""},
		{"mended with the step changed", func(e *env, f *refusingRules, s *Sequence) {
			f.set(e.rule(rules.Rule{ID: "r"}, "a", "b+9m!"))
		}, "a:0:", DropStepChanged},
		{"deleted", func(e *env, f *refusingRules, s *Sequence) { f.refused = false }, "a:0:", DropRuleGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f, s := refusedAtRestart(t)
			if n := e.rn.Replay(nil, time.Hour); n != 0 || e.rn.Absent() != 1 || !e.log.Has("wait for them") {
				t.Fatalf("replay resumed %d, %d absent; want the record kept waiting, told", n, e.rn.Absent())
			}
			e.advance(10 * time.Minute) // its due time passes while its rule is refused
			if e.h.Len(PendingHash) != 1 || len(e.rn.Counts().Dropped) != 0 {
				t.Fatalf("records %d, dropped %v while the rule is refused", e.h.Len(PendingHash), e.rn.Counts().Dropped)
			}
			if e.rn.ReplayAbsent(nil, time.Hour); e.rn.Absent() != 1 {
				t.Fatalf("a reload that left the rule refused: %d absent", e.rn.Absent())
			}
			tc.mend(e, f, s)
			e.rn.ReplayAbsent(nil, time.Hour)
			e.advance(time.Minute)
			if got := e.j.String(); got != tc.journal {
				t.Errorf("journal %q; want %q", got, tc.journal)
			}
			if d := e.rn.Counts().Dropped; tc.dropped != "" && d[tc.dropped] != 1 || tc.dropped == "" && len(d) != 0 {
				t.Errorf("dropped %v; want %q", d, tc.dropped)
			}
			if e.h.Len(PendingHash) != 0 || e.rn.Absent() != 0 {
				t.Errorf("records %d, absent %d after", e.h.Len(PendingHash), e.rn.Absent())
			}
		})
	}
}

// TestStartDropRunsFinally: a waiting step a start drops because it
// changed (or its module did, under on-plugin-change: drop) ends its run,
// and the run's finally steps run, as for the same drop while the
// process runs; a rule that is gone has none to run. An outside tester's
// soak saw them skipped at a start only.
func TestStartDropRunsFinally(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(e *env, f *fakeRules)
		journal string
		dropped string
	}{
		{"step changed", func(e *env, f *fakeRules) {
			f.set(e.withFinally(e.rule(rules.Rule{ID: "r"}, "a", "b+7m!"), "f"))
		}, "a:0: f:0:", DropStepChanged},
		{"plugin changed, drop", func(e *env, f *fakeRules) {
			s := e.withFinally(e.rule(rules.Rule{ID: "r", OnPluginChange: rules.PluginDrop}, "a", "b+5m!"), "f")
			for i := range s.Steps {
				s.Steps[i].Digest = "d2"
			}
			f.set(s)
		}, "a:0: f:0:", DropPluginChanged},
		{"rule gone", func(e *env, f *fakeRules) { f.remove("r") }, "a:0:", DropRuleGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			f := &fakeRules{seqs: map[string]*Sequence{}, j: e.j}
			e.configure(func(c *RunnerConfig) { c.Resolver = f })
			s := e.withFinally(e.rule(rules.Rule{ID: "r"}, "a", "b+5m!"), "f")
			for i := range s.Steps {
				s.Steps[i].Digest = "d1"
			}
			f.set(s)
			e.fire(s, `{"topic":"t"}`)
			e.restart()
			tc.edit(e, f)
			e.rn.Replay(nil, time.Hour)
			e.advance(time.Minute)
			if got := e.j.String(); got != tc.journal {
				t.Errorf("journal %q; want %q", got, tc.journal)
			}
			if d := e.rn.Counts().Dropped; d[tc.dropped] != 1 {
				t.Errorf("dropped %v; want one %q", d, tc.dropped)
			}
			if e.h.Len(PendingHash) != 0 || e.rn.Counts().Active != 0 {
				t.Errorf("records %d, active %d after", e.h.Len(PendingHash), e.rn.Counts().Active)
			}
		})
	}
}

// TestRefusedRecordsOnce: records kept for a refused rule are kept once
// however often they are replayed (a fleet member that takes a shard
// again), and a shard let go takes its kept records with it: a mended rule
// does not run one record twice (a review found it did).
func TestRefusedRecordsOnce(t *testing.T) {
	e, f, s := refusedAtRestart(t)
	e.rn.Replay(nil, time.Hour)
	e.rn.Replay(nil, time.Hour) // the same records again
	if n := e.rn.Absent(); n != 1 {
		t.Fatalf("%d kept; want the record once", n)
	}
	f.set(s)
	e.rn.ReplayAbsent(nil, time.Hour)
	e.advance(10 * time.Minute)
	if got := e.j.String(); got != "a:0: b:0:" {
		t.Errorf("journal %q; want b once", got)
	}

	g, _, _ := refusedAtRestart(t)
	g.rn.Replay(nil, time.Hour)
	g.rn.ReleaseWhere(func(rule, key string) bool { return rule == "r" }, time.Second)
	if n := g.rn.Absent(); n != 0 {
		t.Errorf("%d kept after their shard was let go", n)
	}
}
