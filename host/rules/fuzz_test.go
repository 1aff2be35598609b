package rules

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/ruled-dev/ruled/internal/fuzzmem"
)

// FuzzParseFile checks that no input panics the parser, that every problem
// points inside the file, and that every rule it accepts is whole: an id,
// patterns that pass the checks, at least one step, configs that are JSON.
func FuzzParseFile(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.y*ml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var rules []*Rule
		var errs []*Error
		// YAML's node tree costs more per byte than a flat decoder.
		fuzzmem.Check(t, data, 512, 256<<10, func() { rules, errs = ParseFile("f.yaml", data, plugins) })
		lines := lines(data)
		for _, e := range errs {
			if e.Pos.File != "f.yaml" || e.Pos.Line < 1 || e.Pos.Line > len(lines) || e.Pos.Col < 1 ||
				e.Pos.Col > utf8.RuneCount(lines[e.Pos.Line-1])+1 {
				t.Fatalf("error outside the file (%d lines): %v", len(lines), e)
			}
			if e.Msg == "" {
				t.Fatalf("error without a message at %v", e.Pos)
			}
		}
		for _, r := range rules {
			checkRule(t, r)
		}
	})
}

func checkRule(t *testing.T, r *Rule) {
	t.Helper()
	if !nameRE.MatchString(r.ID) || len(r.On) == 0 || len(r.Steps) == 0 || r.Max < 1 || r.Repeat.Passes < 1 {
		t.Fatalf("accepted an incomplete rule: %+v", r)
	}
	for _, p := range append(r.On, cancelPatterns(r)...) {
		if msg, _ := checkPattern(string(p)); msg != "" {
			t.Fatalf("accepted pattern %q: %s", p, msg)
		}
	}
	calls := []*Call{r.When}
	names := map[string]bool{}
	for i := range r.Steps {
		s := &r.Steps[i]
		if names[s.Name] || s.Index != i || s.Durable && s.After == 0 {
			t.Fatalf("accepted step %d: %+v", i, s)
		}
		names[s.Name] = true
		calls = append(calls, &s.Do, s.When)
		s.Fingerprint()
	}
	for _, c := range calls {
		if c != nil && (!json.Valid(c.With) || c.With[0] != '{') {
			t.Fatalf("accepted config %q of %s.%s", c.With, c.Plugin, c.Function)
		}
	}
}

func cancelPatterns(r *Rule) []Pattern {
	var ps []Pattern
	for _, c := range r.CancelOn {
		ps = append(ps, c.Pattern)
	}
	return ps
}
