package scenario

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/ruled-dev/ruled/internal/golden"
)

// TestSchemaFile: the published schema is what Schema generates (go test
// -rewrite writes it).
func TestSchemaFile(t *testing.T) {
	golden.CheckPath(t, filepath.Join("..", "..", "..", "docs", "schema", "scenario.schema.json"), string(Schema()))
}

func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func jsonDocs(t *testing.T, data []byte) []any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []any
	for {
		var v any
		if dec.Decode(&v) != nil {
			return out
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		j, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
}

// TestSchemaTakesEveryScenario: every scenario file the parser takes — the
// package's and the examples' — the schema takes too; and it flags what an
// editor should as it is typed.
func TestSchemaTakesEveryScenario(t *testing.T) {
	s := compiledSchema(t)
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
		for _, doc := range jsonDocs(t, data) {
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
		for _, doc := range jsonDocs(t, []byte(tc.yaml)) {
			if err := s.Validate(doc); err == nil {
				t.Errorf("%s: the schema takes it", tc.name)
			}
		}
	}
}
