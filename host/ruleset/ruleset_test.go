package ruleset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq"
)

// actions is a catalog whose one plugin, p, has every action asked for.
type actions struct{}

func (actions) Function(plugin, fn string) (abi.Kind, bool) { return abi.KindAction, plugin == "p" }
func (actions) Plugins() []string                           { return []string{"p"} }

type env struct {
	*Loader
	dir      string
	compiled []string // rule ids, in the order compiled
	refuse   string   // a rule id Compile refuses
}

func newEnv(t *testing.T) *env {
	e := &env{dir: t.TempDir()}
	e.Loader = New(Config{Dir: e.dir, Catalog: actions{},
		Compile: func(r *rules.Rule) (*seq.Sequence, error) {
			if r.ID == e.refuse {
				return nil, errors.New("refused by the test")
			}
			e.compiled = append(e.compiled, r.ID)
			return &seq.Sequence{Rule: r}, nil
		},
		Def: func(r *rules.Rule) string {
			def := r.ID
			for _, p := range r.On {
				def += "|" + fmt.Sprint(p)
			}
			for i := range r.Steps {
				def += "|" + r.Steps[i].Fingerprint()
			}
			return def
		}})
	return e
}

func (e *env) write(t *testing.T, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func rule(id, topic, fn string) string {
	return "- id: " + id + "\n  on: " + topic + "\n  steps:\n    - name: s\n      do: p." + fn + "\n"
}

func ids(s *Set) []string {
	var out []string
	for _, q := range s.Sequences() {
		out = append(out, q.Rule.ID)
	}
	return out
}

func TestLoadFollowsTheDirectory(t *testing.T) {
	e := newEnv(t)
	if e.Current() != nil {
		t.Fatal("a set before the first Load")
	}
	e.write(t, "a.yaml", rule("a", "x.a", "one")+rule("b", "x.b", "one"))
	e.write(t, ".hidden.yaml", rule("hidden", "x", "one"))
	e.write(t, "notes.txt", "not rules")
	ch := e.Load()
	if !ch.First || ch.Any() {
		t.Errorf("first load: %+v", ch)
	}
	set := e.Current()
	if got := ids(set); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("rules %v, want [a b]", got)
	}
	if got := set.Index().Triggered("x.a"); len(got) != 1 || got[0] != set.Rule("a") {
		t.Errorf("x.a triggers %v, want rule a", got)
	}

	// Unchanged files are not parsed again, unchanged rules not compiled.
	e.compiled = nil
	if ch := e.Load(); ch.Any() || ch.First || len(e.compiled) != 0 || e.Current().Rule("a") != set.Rule("a") {
		t.Errorf("a load with nothing changed: %+v, compiled %v", ch, e.compiled)
	}

	tests := []struct {
		name                    string
		write                   map[string]string
		remove                  string
		added, changed, removed []string
		rules                   []string
		problem                 string // in the set's problems
	}{
		{name: "a rule changes, one is added in a new file",
			write: map[string]string{"a.yaml": rule("a", "x.a", "two") + rule("b", "x.b", "one"), "c.yml": rule("c", "x.c", "one")},
			added: []string{"c"}, changed: []string{"a"}, rules: []string{"a", "b", "c"}},
		{name: "a file that stops parsing keeps its rules",
			write: map[string]string{"a.yaml": "- id: a\n  on: [unclosed\n"},
			rules: []string{"a", "b", "c"}, problem: "a.yaml"},
		{name: "a rule defined twice is refused where it is defined again",
			write: map[string]string{"a.yaml": rule("a", "x.a", "two") + rule("b", "x.b", "one"), "d.yaml": rule("c", "x.d", "one")},
			rules: []string{"a", "b", "c"}, problem: `rule "c" is already defined in`},
		{name: "a removed file's rules go",
			remove: "c.yml", write: map[string]string{"d.yaml": ""},
			changed: []string{}, removed: []string{"c"}, rules: []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for name, body := range tc.write {
				e.write(t, name, body)
			}
			if tc.remove != "" {
				os.Remove(filepath.Join(e.dir, tc.remove))
			}
			ch := e.Load()
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"added", ch.Added, tc.added}, {"changed", ch.Changed, tc.changed}, {"removed", ch.Removed, tc.removed}} {
				if len(c.got)+len(c.want) > 0 && !slices.Equal(c.got, c.want) {
					t.Errorf("%s %v, want %v", c.what, c.got, c.want)
				}
			}
			if got := ids(e.Current()); !slices.Equal(got, tc.rules) {
				t.Errorf("rules %v, want %v", got, tc.rules)
			}
			var probs []string
			for _, p := range e.Current().Problems() {
				probs = append(probs, p.Error())
			}
			joined := strings.Join(probs, "\n")
			if tc.problem == "" && len(probs) > 0 || tc.problem != "" && !strings.Contains(joined, tc.problem) {
				t.Errorf("problems %q, want %q", joined, tc.problem)
			}
			if ch.NewProblems != (tc.problem != "") {
				t.Errorf("NewProblems %v with problem %q", ch.NewProblems, tc.problem)
			}
		})
	}
}

func TestCompileErrorIsAProblem(t *testing.T) {
	e := newEnv(t)
	e.refuse = "bad"
	e.write(t, "r.yaml", rule("good", "x", "one")+rule("bad", "x", "one"))
	e.Load()
	if got := ids(e.Current()); !slices.Equal(got, []string{"good"}) {
		t.Errorf("rules %v, want [good]", got)
	}
	p := e.Current().Problems()
	if len(p) != 1 || p[0].Rule != "bad" || !strings.Contains(p[0].Msg, "refused by the test") {
		t.Errorf("problems %v, want bad's compile error", p)
	}
}

func TestUnreadableDirectory(t *testing.T) {
	e := newEnv(t)
	os.RemoveAll(e.dir)
	ch := e.Load()
	set := e.Current()
	if !ch.First || set == nil || len(set.Sequences()) != 0 || len(set.Problems()) != 1 {
		t.Fatalf("first load of a missing directory: %+v, set %+v", ch, set)
	}
	if got := set.Index().Triggered("x"); len(got) != 0 {
		t.Errorf("an empty set triggers %v", got)
	}
	var none *Set
	if none.Rule("a") != nil || none.Sequences() != nil || none.Problems() != nil || len(none.Index().Triggered("x")) != 0 {
		t.Error("a nil set is not an empty one")
	}
}

// late is a catalog whose plugin q loads late, its generation counting it.
type late struct {
	q   *bool
	gen *uint64
}

func (c late) Function(plugin, fn string) (abi.Kind, bool) {
	return abi.KindAction, plugin == "p" || plugin == "q" && *c.q
}
func (c late) Plugins() []string {
	if *c.q {
		return []string{"p", "q"}
	}
	return []string{"p"}
}
func (c late) Generation() uint64 { return *c.gen }

// TestPluginLoadedLateMakesRulesValid: a file refused for a plugin that
// had not loaded is read again once the plugins changed, though its
// content did not (an outside tester's rules stayed refused after the
// plugin file was mended, SIGHUP or not); while nothing changed, the
// file is not parsed again.
func TestPluginLoadedLateMakesRulesValid(t *testing.T) {
	e := newEnv(t)
	q, gen := false, uint64(1)
	e.cfg.Catalog = late{&q, &gen}
	e.write(t, "r.yaml", rule("a", "t", "f")+strings.Replace(rule("b", "u", "f"), "p.f", "q.f", 1))
	e.Load()
	if got := ids(e.Current()); !slices.Equal(got, []string{"a"}) || len(e.Current().Problems()) == 0 {
		t.Fatalf("rules %v, problems %v: want a alone, b refused for q", got, e.Current().Problems())
	}
	e.Load() // nothing changed: the refusal stands
	if len(e.Current().Problems()) == 0 {
		t.Fatal("the refusal went with nothing changed")
	}
	q, gen = true, 2
	e.Load()
	if got := ids(e.Current()); !slices.Equal(got, []string{"a", "b"}) || len(e.Current().Problems()) != 0 {
		t.Errorf("rules %v, problems %v once q loaded: want a and b, none", got, e.Current().Problems())
	}
}

// TestRefused: a rule the set lacks is refused while a problem names it
// or a problem names no rule (a file that did not parse); a rule no
// problem can be is gone, and a rule the set holds is not refused.
func TestRefused(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a.yaml", rule("good", "x", "one")+"- id: typo\n  on: x\n  steps:\n    - do: p.one\n      wiht: {}\n")
	e.Load()
	for rule, want := range map[string]bool{"good": false, "typo": true, "deleted": false} {
		if got := e.Current().Refused(rule); got != want {
			t.Errorf("Refused(%s) = %v; want %v", rule, got, want)
		}
	}
	e.write(t, "b.yaml", "- id: [unclosed\n")
	e.Load()
	if !e.Current().Refused("deleted") || e.Current().Refused("good") {
		t.Error("with a file that does not parse, any rule the set lacks may be in it")
	}
}
