package seq

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ruled-dev/ruled/internal/fuzzmem"
)

// FuzzDecodePending: a stored record, whatever its bytes, decodes or is
// refused, and one that decodes rebuilds its event or is refused — never a
// panic — and memory stays within a small multiple of the size of the
// record and of the id it is filed under (an error names the id, quoted:
// a 12 KB id of invalid UTF-8 is 48 KB of message).
func FuzzDecodePending(f *testing.F) {
	f.Add("r1", []byte(`{"v":2,"id":"r1","rule":"lamp","source":"job","step-name":"later","step":1,"iter":0,"fire-at":1764489600000,"written-at":1764489000000,"remaining-ms":600000,"fingerprint":"ab","digest":"cd","key":"s1","event-id":"e1","event-time":1,"event":{"topic":"job","n":7},"started":1764489000000,"node":5,"delay-node":5}`))
	f.Add("r1", []byte(`{"id":"r1","rule":"lamp","source":"job","step":0,"iter":0,"fire-at":1,"fingerprint":"","event":{}}`))
	f.Add("x", []byte(`{"id":"x","rule":"r","fire-at":1,"event":[1,2,{"a":"\u0000"}]}`))
	f.Add("x", []byte(`null`))
	f.Fuzz(func(t *testing.T, id string, b []byte) {
		fuzzmem.Check(t, append([]byte(id), b...), 64, 64<<10, func() {
			p, err := decodePending(id, b)
			if err != nil {
				return
			}
			if p.ID != id || p.Rule == "" || p.FireAt == 0 || len(p.Event) == 0 || p.Version < 1 || p.Version > PendingVersion {
				t.Fatalf("accepted %+v", p)
			}
			eventOf(p)
		})
	})
}

// FuzzDecodeFast: what the fast path decodes, json.Unmarshal decodes the
// same; where json.Unmarshal refuses, the fast path does too.
func FuzzDecodeFast(f *testing.F) {
	f.Add([]byte(`{"v":2,"id":"r1","rule":"lamp","source":"job","step-name":"later","step":1,"iter":0,"fire-at":1764489600000,"written-at":1764489000000,"remaining-ms":600000,"fingerprint":"ab","digest":"cd","key":"s1","event-id":"e1","event-time":1,"event":{"topic":"job","n":7},"hops":1,"trace":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","started":1764489000000,"parent":"p","node":5,"delay-node":5,"debounce":3,"finally":"failed","steps":{"a":{"x":"]}\""}},"vars":{"v":[1,{"w":"ü"}]},"previous":{"watts":120}}`))
	f.Add([]byte(` { "id" : "r1" , "fire-at" : -9223372036854775808 , "event" : [ ] } `))
	f.Add([]byte(`{"id":"r\u00e9","ID":"x","step":01,"iter":1.5,"node":1e3,"event":null}`))
	f.Add([]byte(`{"id":"\xff","step":9223372036854775808,"event":{"a":}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast, slow Pending
		ok := decodeFast(b, &fast, map[string]string{})
		err := json.Unmarshal(b, &slow)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("the fast path decoded what json.Unmarshal refuses (%v): %+v", err, fast)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decoded differently:\nfast %+v\njson %+v", fast, slow)
		}
	})
}
