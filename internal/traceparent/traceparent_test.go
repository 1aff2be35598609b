package traceparent

import (
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name, in, want string // want: Canonical's answer
	}{
		{"the recommendation's example", good, good},
		{"not sampled", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"},
		{"other flags kept as sampled or not", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", good},
		{"a later version with a field more", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-whatever", good},
		{"a later version, 55 bytes", "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", good},
		{"version ff", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""},
		{"version 00 with more", good + "-x", ""},
		{"a later version, no dash after", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", ""},
		{"upper case", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", ""},
		{"trace id of zeros", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		{"span id of zeros", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", ""},
		{"short", good[:54], ""},
		{"a dash moved", "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01", ""},
		{"not hex", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", ""},
		{"empty", "", ""},
		{"too long", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" + strings.Repeat("a", MaxLen), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Canonical(tc.in); got != tc.want {
				t.Errorf("Canonical(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func ExampleCanonical() {
	// A later version's traceparent, as ruled keeps it and sends it on;
	// a value that is none, as nothing.
	fmt.Println(Canonical("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more"))
	fmt.Printf("%q\n", Canonical("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"))
	// Output:
	// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	// ""
}

// FuzzParse: whatever Parse takes, its String parses back to the same
// context, and is 55 bytes of version 00.
func FuzzParse(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := Parse(s)
		if !ok {
			return
		}
		out := c.String()
		back, ok := Parse(out)
		if !ok || len(out) != Len || back.Trace != c.Trace || back.Span != c.Span || back.Sampled() != c.Sampled() {
			t.Fatalf("Parse(%q) = %+v, written %q, read back %+v %v", s, c, out, back, ok)
		}
	})
}
