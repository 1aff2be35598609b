package ingest

import (
	"encoding/json"
	"maps"
	"testing"
)

// TestWithTopic: the topic a plugin names replaces the payload's own at
// the top level, whatever path builds the event (a payload naming no
// "topic" is spliced, any other decoded and encoded again), and every
// other field stays as it was. A payload shaped as an object but not
// JSON comes out not JSON, for the decoder to refuse.
func TestWithTopic(t *testing.T) {
	if got := withTopic("lights.hall", []byte(`{"a":}`)); json.Valid(got) {
		t.Errorf("not JSON in, %s out; want it left for the decoder to refuse", got)
	}
	tests := []struct {
		payload string
		want    map[string]any // without "topic"
	}{
		{`{}`, map[string]any{}},
		{`  {  }  `, map[string]any{}},
		{`{"a":1}`, map[string]any{"a": 1.0}},
		{` { "a" : [1, {"b": "<x>"}] , "c":null } `, map[string]any{"a": []any{1.0, map[string]any{"b": "<x>"}}, "c": nil}},
		{`{"topic":"old","a":1}`, map[string]any{"a": 1.0}},
		{`{"n":{"topic":"inner"}}`, map[string]any{"n": map[string]any{"topic": "inner"}}},
		{`{"s":"say \"topic\""}`, map[string]any{"s": `say "topic"`}},
		{`[1,2]`, map[string]any{}},
		{``, map[string]any{}},
	}
	for _, tc := range tests {
		got := withTopic("lights.hall", []byte(tc.payload))
		var m map[string]any
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatalf("%s → %s: %v", tc.payload, got, err)
		}
		if m["topic"] != "lights.hall" {
			t.Errorf("%s → %s: topic %v", tc.payload, got, m["topic"])
		}
		delete(m, "topic")
		if !maps.EqualFunc(m, tc.want, func(a, b any) bool { x, _ := json.Marshal(a); y, _ := json.Marshal(b); return string(x) == string(y) }) {
			t.Errorf("%s → %s; want the fields %v", tc.payload, got, tc.want)
		}
	}
}

// BenchmarkWithTopic is a publish's event built from a plugin's payload.
func BenchmarkWithTopic(b *testing.B) {
	p := []byte(`{"device":"d17","temp":35,"sent":1733300000000000000,"unit":"C"}`)
	b.ReportAllocs()
	for b.Loop() {
		withTopic("alert.d17.temp", p)
	}
}
