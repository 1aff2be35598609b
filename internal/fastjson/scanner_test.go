package fastjson_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"unsafe"

	"github.com/ruled-dev/ruled/internal/fastjson"
)

// TestSkip: Skip passes over exactly one valid value of each kind, and
// refuses what is not valid JSON.
func TestSkip(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want bool
	}{
		{`"plain"`, true},
		{`"a \"quoted\" \u00fc"`, true},
		{`"bad \x escape"`, false},
		{`"unterminated`, false},
		{`-12.5e+3`, true},
		{`01`, false},
		{`true`, true},
		{`nul`, false},
		{`{"a":[1,{"b":"]}"}],"c":null}`, true},
		{`{"a":}`, false},
		{`[1,2`, false},
		{``, false},
	} {
		d := fastjson.New([]byte(`[` + tc.doc + `]`))
		got := d.Byte('[') && d.Skip() && d.Byte(']') && d.End()
		if got != tc.want {
			t.Errorf("Skip(%s) = %v; want %v", tc.doc, got, tc.want)
		}
		if valid := json.Valid([]byte(`[` + tc.doc + `]`)); valid != tc.want && tc.doc != "" {
			t.Errorf("the table is wrong about %s: json.Valid says %v", tc.doc, valid)
		}
	}
}

// TestReads: each read takes its own shape and refuses the rest, which
// the caller leaves to encoding/json.
func TestReads(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		read func(d *fastjson.Scanner) (any, bool)
		want any // nil: refused
	}{
		{`"ride"`, func(d *fastjson.Scanner) (any, bool) { var s string; ok := d.String(&s); return s, ok }, "ride"},
		{`"r\u00e9"`, func(d *fastjson.Scanner) (any, bool) { var s string; ok := d.String(&s); return s, ok }, nil},
		{`9223372036854775807`, func(d *fastjson.Scanner) (any, bool) { var n int64; ok := d.Int64(&n); return n, ok }, int64(9223372036854775807)},
		{`9223372036854775808`, func(d *fastjson.Scanner) (any, bool) { var n int64; ok := d.Int64(&n); return n, ok }, nil},
		{`1.0`, func(d *fastjson.Scanner) (any, bool) { var n int64; ok := d.Int64(&n); return n, ok }, nil},
		{`{"a":[1]}`, func(d *fastjson.Scanner) (any, bool) { var r json.RawMessage; ok := d.Raw(&r); return string(r), ok }, `{"a":[1]}`},
		{`"x"`, func(d *fastjson.Scanner) (any, bool) { var r json.RawMessage; ok := d.Raw(&r); return string(r), ok }, nil},
	} {
		d := fastjson.New([]byte(tc.doc))
		got, ok := tc.read(&d)
		if tc.want == nil {
			if ok {
				t.Errorf("%s read as %v; want it refused", tc.doc, got)
			}
			continue
		}
		if !ok || got != tc.want {
			t.Errorf("%s read as %v, %v; want %v", tc.doc, got, ok, tc.want)
		}
	}
}

// TestName: a string read by Name is kept once.
func TestName(t *testing.T) {
	names := map[string]string{}
	var a, b string
	d := fastjson.New([]byte(`["ride","ride"]`))
	if !d.Byte('[') || !d.Name(&a, names) || !d.Byte(',') || !d.Name(&b, names) || !d.Byte(']') || !d.End() {
		t.Fatal("not read")
	}
	if a != "ride" || b != "ride" || len(names) != 1 || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Errorf("read %q and %q, %d names: want one string, kept once", a, b, len(names))
	}
}

// A record read by hand: known keys are read, others passed over.
func ExampleScanner_Object() {
	var rule string
	var at int64
	d := fastjson.New([]byte(`{"id":"r-1","rule":"ride","at":1764932400000,"error":"a \"quoted\" text"}`))
	ok := d.Object(func(key []byte) bool {
		switch string(key) {
		case "rule":
			return d.String(&rule)
		case "at":
			return d.Int64(&at)
		}
		return d.Skip()
	})
	fmt.Println(ok, rule, at)
	// Output: true ride 1764932400000
}
