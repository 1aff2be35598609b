package state_test

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/state"
)

// FuzzSame: for two JSON objects, Same answers what decoding both with
// encoding/json, leaving out the top-level "id" and "time" and comparing
// the values (numbers by value) answers; and it is symmetric. Whatever
// the bytes, it does not panic.
func FuzzSame(f *testing.F) {
	for _, p := range [][2]string{
		{`{"a":1}`, `{"a":1.0}`},
		{`{"a":1,"id":"x"}`, `{"a":1,"time":"t"}`},
		{`{"a":{"b":[1,2]}}`, `{"a":{"b":[1,2,3]}}`},
		{`{"a~1b":1}`, `{"a.b":1}`},
		{`{"a":"x"}`, `{"a":null}`},
		{`{"id":{"x":1},"a":[]}`, `{"a":{}}`},
		{`{"a":-0.0}`, `{"a":0.0}`},
	} {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		va, errA := abi.AppendJSONView(nil, a, false)
		vb, errB := abi.AppendJSONView(nil, b, false)
		if errA != nil || errB != nil {
			state.Same(a, b) // garbage as views: no panic
			return
		}
		same := state.Same(va, vb)
		if same != state.Same(vb, va) {
			t.Fatalf("Same(%s, %s) is not symmetric", a, b)
		}
		var ma, mb map[string]any
		if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
			return // not objects: no state to compare by hand
		}
		for _, m := range []map[string]any{ma, mb} {
			delete(m, "id")
			delete(m, "time")
		}
		if want := reflect.DeepEqual(normal(ma), normal(mb)); same != want {
			t.Fatalf("Same(%s, %s) = %v, encoding/json says %v", a, b, same, want)
		}
	})
}

// normal is x with every number a float64 (json's already) and -0 as 0:
// numbers compare by value.
func normal(x any) any {
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normal(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normal(e)
		}
	case float64:
		if v == 0 {
			return 0.0
		}
		if math.IsInf(v, 0) {
			return v
		}
	}
	return x
}
