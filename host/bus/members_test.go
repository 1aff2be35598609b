package bus

import (
	"encoding/json"
	"reflect"
	"testing"
)

var topicMembers = []Member{{"topic", []byte(`"a.b"`)}, {"mqtt_topic", []byte(`"a/b"`)}}

// TestWithMembers: the members go in front, the object's own of those
// names are left out (however their names are escaped), and everything
// else is kept as it was written, in its order.
func TestWithMembers(t *testing.T) {
	for _, tc := range []struct {
		obj, want string
		ok        bool
	}{
		{`{}`, `{"topic":"a.b","mqtt_topic":"a/b"}`, true},
		{` { } `, `{"topic":"a.b","mqtt_topic":"a/b"}`, true},
		{`{"x":1}`, `{"topic":"a.b","mqtt_topic":"a/b","x":1}`, true},
		{`{"topic":"mine","x":[1,{"topic":2}],"y":"}"}`, `{"topic":"a.b","mqtt_topic":"a/b","x":[1,{"topic":2}],"y":"}"}`, true},
		{`{ "x" : 1 , "mqtt_topic" : null , "z":"\"q\\"}`, `{"topic":"a.b","mqtt_topic":"a/b","x" : 1,"z":"\"q\\"}`, true},
		{`{"top\u0069c":"mine","n":-1.5e3}`, `{"topic":"a.b","mqtt_topic":"a/b","n":-1.5e3}`, true},
		{`{"topic":1,"topic":2}`, `{"topic":"a.b","mqtt_topic":"a/b"}`, true},
		{`[1]`, ``, false},
		{`"x"`, ``, false},
		{`{"x":1`, ``, false},
	} {
		got, ok := WithMembers([]byte(tc.obj), topicMembers...)
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("WithMembers(%s) = %s, %v; want %s, %v", tc.obj, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzWithMembers: any bytes leave WithMembers whole; for valid JSON it
// builds an object
// exactly when the input is one, and it means what decoding the input
// into a map, setting the members and encoding again means.
func FuzzWithMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"topic":"x","a":[1,2,{"b":"}"}]}`, `{"a\"b":1,"mqtt_topic":{}}`, `[]`, `1`, `{"\u0074opic":true}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		if !json.Valid(obj) {
			WithMembers(obj, topicMembers...) // not JSON: it must not fail, whatever it answers
			return
		}
		var want map[string]any
		isObject := json.Unmarshal(obj, &want) == nil && want != nil
		got, ok := WithMembers(obj, topicMembers...)
		if ok != isObject {
			t.Fatalf("WithMembers(%q): ok %v; it is an object: %v", obj, ok, isObject)
		}
		if !ok {
			return
		}
		want["topic"], want["mqtt_topic"] = "a.b", "a/b"
		var m map[string]any
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatalf("WithMembers(%q) = %q: %v", obj, got, err)
		}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("WithMembers(%q) = %q; means %v, want %v", obj, got, m, want)
		}
	})
}
