package rules

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/internal/golden"
	"github.com/ruled-dev/ruled/internal/schema/schematest"
)

// TestSchemaFile: the published schema is what Schema generates (go test
// -rewrite ./host/rules writes it).
func TestSchemaFile(t *testing.T) {
	golden.CheckPath(t, filepath.Join("..", "..", "docs", "schema", "rules.schema.json"), string(Schema()))
}

// TestSchemaTakesEveryExample: every rule file of the repository that the
// parser takes whole — the examples, the scenarios' rules, the tests'
// good files, the reference's example — the schema takes too.
func TestSchemaTakesEveryExample(t *testing.T) {
	s := schematest.Compile(t, SchemaID, Schema())
	root := filepath.Join("..", "..")
	n := 0
	check := func(name string, data []byte) {
		rs, errs := ParseFile(name, data, nil)
		if len(errs) > 0 || len(rs) == 0 {
			return // not a rule file, or one meant to be refused
		}
		n++
		for _, doc := range schematest.Docs(t, data) {
			if err := s.Validate(doc); err != nil {
				t.Errorf("%s: the parser takes it, the schema does not:\n%v", name, err)
			}
		}
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == ".build" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			if data, err := os.ReadFile(p); err == nil {
				check(p, data)
			}
		}
		return nil
	})
	check("doc.go", []byte(docExample(t)))
	if n < 20 {
		t.Errorf("only %d rule files found: the walk missed the repository's", n)
	}
	t.Logf("%d rule files validated", n)
}

// TestSchemaRefuses: what an editor flags as the author types — a
// misspelt key, a wrong type, a bad enum, a duration without its unit.
func TestSchemaRefuses(t *testing.T) {
	s := schematest.Compile(t, SchemaID, Schema())
	for _, tc := range []struct{ name, yaml string }{
		{"misspelt key", "- id: a\n  on: x\n  stesp: []\n"},
		{"no on", "- id: a\n  steps: [{do: log.log}]\n"},
		{"a mode that is not one", "- id: a\n  on: x\n  mode: serial\n  steps: [{do: log.log}]\n"},
		{"a duration without a unit", "- id: a\n  on: x\n  cooldown: 30\n  steps: [{do: log.log}]\n"},
		{"a step key that is not one", "- id: a\n  on: x\n  steps: [{do: log.log, wiht: {}}]\n"},
		{"an upper-case id", "- id: Alarm\n  on: x\n  steps: [{do: log.log}]\n"},
		{"do without a function", "- id: a\n  on: x\n  steps: [{do: log}]\n"},
		{"a wait-for without a timeout", "- id: a\n  on: x\n  steps: [{name: w, wait-for: {topic: y}}]\n"},
	} {
		for _, doc := range schematest.Docs(t, []byte(tc.yaml)) {
			if err := s.Validate(doc); err == nil {
				t.Errorf("%s: the schema takes it", tc.name)
			}
		}
	}
}
