package bus

import (
	"bytes"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/fuzzmem"
)

// FuzzDecode: Decode never panics, refuses with a reason, and what it accepts
// is an event every consumer can rely on.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"topic":"a"}`,
		`{"topic":"vehicle.s1.battery","id":"e1","time":"2024-01-02T03:04:05Z","battery":12}`,
		`{"topic":"ruled.cmd.x"}`,
		`{"topic":"a.*"}`,
		`{"topic":"a b","data":{"x":[1,2.5,true,null,"s"]}}`,
		`{"topic":"a","id":7}`,
		`{"topic":"a","time":"yesterday"}`,
		`{"topic":"a","topic":"b"}`,
		`[1,2]`,
		` {"topic":"a\u0000b"} `,
		`{"topic":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	d := Decoder{MaxSize: 4 << 10}
	f.Fuzz(func(t *testing.T, in []byte) {
		var e *Event
		var err error
		fuzzmem.Check(t, in, 32, 64<<10, func() { e, err = d.Decode(in) })
		if err != nil {
			if e != nil {
				t.Fatalf("Decode returned an event and %v", err)
			}
			if ReasonOf(err) == "" {
				t.Fatalf("refusal without a reason: %v", err)
			}
			return
		}
		if err := CheckTopic(e.Topic); err != nil {
			t.Fatalf("accepted topic %q fails CheckTopic: %v", e.Topic, err)
		}
		v, err := abi.ParseView(e.View)
		if err != nil {
			t.Fatalf("accepted view: %v", err)
		}
		if x, _ := v.Find("topic"); string(must(x.Str())) != e.Topic {
			t.Fatalf("view topic %q; want %q", must(x.Str()), e.Topic)
		}
		if e.ID == "" || e.Time.IsZero() {
			t.Fatalf("accepted event without id or time: %+v", e)
		}
		if !bytes.Equal(e.Raw, bytes.TrimSpace(in)) {
			t.Fatalf("Raw = %q; want the trimmed input", e.Raw)
		}
		// What the Redis bus sends decodes to the same event.
		wire, err := stamped(e)
		if err != nil {
			t.Fatalf("stamped: %v", err)
		}
		e2, err := (&Decoder{}).Decode(wire)
		if err != nil {
			t.Fatalf("stamped %q: %v", wire, err)
		}
		if e2.ID != e.ID || !e2.Time.Equal(e.Time) || e2.Topic != e.Topic {
			t.Fatalf("stamped event = %q %v %q; want %q %v %q", e2.ID, e2.Time, e2.Topic, e.ID, e.Time, e.Topic)
		}
	})
}
