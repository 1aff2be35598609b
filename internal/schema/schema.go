package schema

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Object is a JSON Schema object.
type Object = map[string]any

// Duration is a Go duration string, not negative; SignedDuration may be.
var (
	Duration = Object{"type": "string", "pattern": `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`,
		"description": "a Go duration: 250ms, 30s, 5m, 1h30m (a bare number has no unit and is refused)"}
	SignedDuration = Object{"type": "string", "pattern": `^[-+]?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`,
		"description": "a Go duration, forward or back: 30m, -1h"}
)

// Closed is an object of exactly the keys of table (a parser's table),
// each with its schema from props, the required ones listed. A key of the
// table without a schema, or a schema for a key not in it, panics.
func Closed(table []string, props map[string]Object, required ...string) Object {
	p := Object{}
	for _, k := range table {
		s, ok := props[k]
		if !ok {
			panic(fmt.Sprintf("schema: key %q of %v has no schema", k, table))
		}
		p[k] = s
	}
	for k := range props {
		if !slices.Contains(table, k) {
			panic(fmt.Sprintf("schema: key %q is not in the parser's table %v", k, table))
		}
	}
	o := Object{"type": "object", "properties": p, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// Enum is a string of one of names.
func Enum(doc string, names ...string) Object {
	return Object{"type": "string", "enum": names, "description": doc}
}

// Int is an integer of at least min.
func Int(min int, doc string) Object {
	return Object{"type": "integer", "minimum": min, "description": doc}
}

// Doc is s with its description set to doc.
func Doc(s Object, doc string) Object {
	c := Object{}
	for k, v := range s {
		c[k] = v
	}
	c["description"] = doc
	return c
}

// OneOf is one of the schemas, described.
func OneOf(doc string, of ...Object) Object {
	alts := make([]any, len(of))
	for i, o := range of {
		alts[i] = o
	}
	return Object{"description": doc, "oneOf": alts}
}

// Render is the schema document: draft-07, its $id and title, indented.
func Render(id, title, doc string, definitions Object, root Object) []byte {
	s := Object{"$schema": "http://json-schema.org/draft-07/schema#", "$id": id, "title": title, "description": doc}
	if len(definitions) > 0 {
		s["definitions"] = definitions
	}
	for k, v := range root {
		s[k] = v
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
