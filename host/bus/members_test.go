package bus

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
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

// TestWithMembersChecked: what a payload had under the names it has
// replaced is held to the decoder's rules — a duplicate, however spelled,
// and nesting past the bound counted from the payload's top — and what
// it keeps is left to the decoder.
// A member with a nil Value is left out and not put in front.
func TestWithoutMembers(t *testing.T) {
	out := []Member{{Name: "id"}, {Name: "time"}}
	for obj, want := range map[string]string{
		`{"id":"x","topic":"a","time":"t","v":1}`: `{"topic":"a","v":1}`,
		`{"topic":"a"}`: `{"topic":"a"}`,
		`{"id":1}`:      `{}`,
	} {
		if got, ok := WithMembers([]byte(obj), out...); !ok || string(got) != want {
			t.Errorf("WithMembers(%s) without id and time = %s, %v; want %s", obj, got, ok, want)
		}
	}
	got, _ := WithMembers([]byte(`{"id":1,"v":2}`), Member{Name: "id"}, Member{Name: "topic", Value: []byte(`"a"`)})
	if string(got) != `{"topic":"a","v":2}` {
		t.Errorf("one left out, one in front: %s", got)
	}
}

func TestWithMembersChecked(t *testing.T) {
	deep := strings.Repeat("[", 64) + strings.Repeat("]", 64) // 65 levels inside the object
	for _, tc := range []struct {
		obj  string
		fail string // in the error; "" for none
	}{
		{`{"topic":"x","a":1}`, ""},
		{`{"a":{"topic":1,"topic":2}}`, ""}, // nested: the decoder's to refuse, not left out
		{`{"topic":1,"topic":2}`, "duplicate key"},
		{`{"to\u0070ic":1,"topic":2}`, "duplicate key"},
		{`{"mqtt_topic":{"a":1,"a":2}}`, "duplicate key"},
		{`{"topic":` + deep + `}`, "deep"},
		{`{"topic":` + deep[1:len(deep)-1] + `}`, ""},
		{`{"topic":01}`, "expected"},
	} {
		_, ok, err := WithMembersChecked([]byte(tc.obj), topicMembers...)
		if !ok {
			t.Errorf("%.40s: not an object", tc.obj)
			continue
		}
		if tc.fail == "" && err != nil || tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)) {
			t.Errorf("%.40s: error %v; want one saying %q", tc.obj, err, tc.fail)
		}
	}
}

// FuzzWithMembersChecked: a payload checked as its members are replaced,
// then the result decoded, is refused exactly when checking it whole
// would have refused it (what WithMembersChecked saves a parse for).
func FuzzWithMembersChecked(f *testing.F) {
	for _, s := range []string{`{}`, `{"topic":"x","a":[1,2,{"b":"}"}]}`, `{"topic":1,"topic":2}`, `{"\u0074opic":true,"topic":[]}`,
		`{"mqtt_topic":{"a":1,"a":2}}`, `{"topic":01}`, `{"a":1,"a":2,"topic":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		var m map[string]any
		if json.Unmarshal(obj, &m) != nil || m == nil {
			return // WithMembers' own fuzz covers what is not an object
		}
		_, whole := abi.AppendJSONView(nil, obj, false)
		out, ok, err := WithMembersChecked(obj, topicMembers...)
		if !ok {
			t.Fatalf("%q: not taken as an object", obj)
		}
		if err == nil {
			_, err = abi.AppendJSONView(nil, out, false)
		}
		if (whole == nil) != (err == nil) {
			t.Fatalf("%q: whole %v; checked, then built: %v", obj, whole, err)
		}
	})
}
