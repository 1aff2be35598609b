package abi

import (
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// allocated is the bytes f allocates (the process's, around one call:
// hence the fixed allowance in the bounds below). A codec that some input
// makes allocate without bound is a memory exhaustion waiting for it.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func checkAllocs(t *testing.T, input int, f func()) {
	t.Helper()
	if n, limit := allocated(f), uint64(64*input+64<<10); n > limit {
		t.Fatalf("%d bytes allocated for %d bytes of input (limit %d)", n, input, limit)
	}
}

// FuzzAppendJSONView checks the host's event decoder against encoding/json:
// it accepts what encoding/json accepts (except duplicate keys and deep
// nesting, which it refuses on purpose), decodes to the same values, never
// panics, and allocates within a small multiple of the input.
func FuzzAppendJSONView(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5,"x",null,true]}`, `"\u00e9\ud83d\ude00"`, `-0`, `1e400`,
		`{"a.b":{"c~d":[]},"":{"":1}}`, `[[[[]]]]`, `{"a":1,"a":2}`, `{"k":"\ud800x"}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		var b []byte
		var err error
		checkAllocs(t, len(js), func() { b, err = AppendJSONView(nil, js, true) })
		valid := json.Valid(js)
		if err != nil {
			if valid && !strings.Contains(err.Error(), "duplicate key") && !strings.Contains(err.Error(), "nesting") {
				t.Fatalf("refused valid JSON %q: %v", js, err)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted invalid JSON %q", js)
		}
		if len(b) > 64*len(js)+1024 {
			t.Fatalf("view of %d bytes for %d bytes of JSON", len(b), len(js))
		}
		v, err := ParseView(b)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := v.Decode("")
		var want any
		d := json.NewDecoder(strings.NewReader(string(js)))
		d.UseNumber()
		if err := d.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Fatalf("Decode = %#v; encoding/json = %#v", got, want)
		}
	})
}

// FuzzParseView feeds arbitrary bytes to the guest-side reader: a guest
// trusts the host, but a reader that panics on a bad view would be a trap
// in every plugin.
func FuzzParseView(f *testing.F) {
	good, _ := AppendJSONView(nil, []byte(`{"a":{"b":[1,"x"]},"c":true}`), true)
	f.Add(good, "a.b.1")
	f.Add(good[:30], "")
	f.Fuzz(func(t *testing.T, b []byte, path string) {
		var v View
		var err error
		checkAllocs(t, len(b)+len(path), func() {
			if v, err = ParseView(b); err == nil {
				v.Find(path)
			}
		})
		if err != nil {
			return
		}
		x, _ := v.Find(path)
		x.Str()
		x.Float()
		v.Decode(path)
		v.Decode("")
		v.Raw()
		for i := 0; i < v.Len() && i < 64; i++ {
			v.Entry(i).Path()
		}
	})
}

// FuzzParseCallInput feeds arbitrary bytes to the call header parser.
func FuzzParseCallInput(f *testing.F) {
	ev, _ := AppendJSONView(nil, []byte(`{"x":1}`), false)
	f.Add(append(AppendCallInfo(nil, &CallInfo{Topic: "t", Key: "k"}), ev...))
	ctx, _ := AppendJSONView(nil, []byte(`{"steps":{"a":{"x":2}}}`), false)
	f.Add(AppendCallInput(nil, &CallInfo{Topic: "t", Key: "k"}, ev, ctx))
	f.Add([]byte{16, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAllocs(t, len(b), func() {
			in, err := ParseCallInput(b)
			if err == nil {
				in.Event.Find("x")
				in.Find("steps.a.x")
			}
			ParseConfigureInput(b)
		})
	})
}

// FuzzHTTPCodec: the outbound HTTP request and response decoders never
// panic, allocate within a small multiple of their input, and what they
// decode encodes back to the same bytes.
func FuzzHTTPCodec(f *testing.F) {
	f.Add(AppendHTTPRequest(nil, &HTTPRequest{Method: "POST", URL: "https://h/x", Header: [][2]string{{"A", "b"}}, Body: []byte("{}")}))
	f.Add(AppendHTTPResponse(nil, &HTTPResponse{Status: 200, Header: [][2]string{{"K", "v"}, {"K", "w"}}, Body: []byte("ok")}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAllocs(t, len(b), func() {
			if r, err := ParseHTTPRequest(b); err == nil {
				if again := AppendHTTPRequest(nil, &r); string(again) != string(b) {
					t.Fatalf("request %x re-encodes as %x", b, again)
				}
			}
			if r, err := ParseHTTPResponse(b); err == nil {
				if again := AppendHTTPResponse(nil, &r); string(again) != string(b) {
					t.Fatalf("response %x re-encodes as %x", b, again)
				}
			}
		})
	})
}
