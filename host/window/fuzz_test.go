package window

import (
	"testing"
	"time"
)

// FuzzDecode: a record from the store, whatever its bytes, decodes to a
// series within its spec's bounds or is refused; never a panic, and what
// decodes encodes back to the same bytes.
func FuzzDecode(f *testing.F) {
	specs := []Spec{
		{Kind: Sliding, Last: time.Minute, Buckets: 4, Numeric: true},
		{Kind: Tumbling, Every: time.Hour},
		{Kind: Count, Events: 3, Numeric: true},
	}
	for _, s := range specs {
		x := &series{}
		for i := range 5 {
			x.add(&s, float64(i), int64(i)*int64(20*time.Second))
		}
		f.Add(byte(s.Kind), x.encode(&s))
	}
	f.Fuzz(func(t *testing.T, kind byte, b []byte) {
		s := specs[int(kind)%len(specs)]
		x, err := decode(&s, b)
		if err != nil {
			return
		}
		if len(x.buckets) > s.buckets() || s.Kind == Count && len(x.ring) > s.Events {
			t.Fatalf("decoded past the bounds: %d buckets, %d events", len(x.buckets), len(x.ring))
		}
		x.value(&s, int64(time.Hour))
		if got := x.encode(&s); string(got) != string(b) {
			t.Fatalf("re-encoded %x, read %x", got, b)
		}
	})
}
