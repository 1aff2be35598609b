package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ruled-dev/ruled/internal/golden"
	"github.com/ruled-dev/ruled/internal/schema/schematest"
)

// TestSchemaFile: the published schema is what Schema generates (go test
// -rewrite writes it).
func TestSchemaFile(t *testing.T) {
	golden.CheckPath(t, filepath.Join("..", "..", "..", "docs", "schema", "scenario.schema.json"), string(Schema()))
}

// TestSchemaTakesEveryScenario: every scenario file the parser takes — the
// package's and the examples' — the schema takes too; and it flags what an
// editor should as it is typed.
func TestSchemaTakesEveryScenario(t *testing.T) {
	s := schematest.Compile(t, SchemaID, Schema())
	files, _ := filepath.Glob("testdata/*.yaml")
	more, _ := filepath.Glob("../../../examples/*/tests/*.yaml")
	n := 0
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(f, data); err != nil {
			continue // a file meant to be refused
		}
		n++
		for _, doc := range schematest.Docs(t, data) {
			if err := s.Validate(doc); err != nil {
				t.Errorf("%s: the parser takes it, the schema does not:\n%v", f, err)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d scenario files validated", n)
	}
	for _, tc := range []struct{ name, yaml string }{
		{"misspelt key", "name: a\nrules: r\nstpes: []\n"},
		{"two actions... a step with an unknown one", "name: a\nrules: r\nsteps: [{pubish: {topic: x}}]\n"},
		{"an expectation that is not one", "name: a\nrules: r\nsteps: [{expect: {publshed: []}}]\n"},
		{"a stat that is not one", "name: a\nrules: r\nsteps: [{expect: {stats: {r: {startd: 1}}}}]\n"},
		{"a command that is not one", "name: a\nrules: r\nsteps: [{command: {rule: r, do: stop}}]\n"},
		{"a duration without a unit", "name: a\nrules: r\nsteps: [{advance: 30}]\n"},
		{"an unknown capability", "name: a\nrules: r\ngrants: {p: [disk]}\nsteps: [{advance: 1s}]\n"},
	} {
		for _, doc := range schematest.Docs(t, []byte(tc.yaml)) {
			if err := s.Validate(doc); err == nil {
				t.Errorf("%s: the schema takes it", tc.name)
			}
		}
	}
}
