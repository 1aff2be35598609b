package schematest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// Compile is schema (a JSON Schema document published at id), compiled by
// a validator that reads draft-07 as editors do.
func Compile(t testing.TB, id string, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Docs are the documents of a YAML file as JSON values (anchors and merge
// keys resolved), what a language server validates.
func Docs(t testing.TB, data []byte) []any {
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
