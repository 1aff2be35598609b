package suggest

import (
	"fmt"
	"testing"
)

func TestWord(t *testing.T) {
	fns := []string{"len", "lower", "upper", "trim"}
	for _, tc := range []struct {
		word string
		want string
	}{
		{"lenn", "len"},
		{"lenght", ""}, // 6 letters: two edits allowed, "lenght" is three from len
		{"uper", "upper"},
		{"Lower", "lower"},
		{"trimm", "trim"},
		{"size", ""},
		{"x", ""},
		{"", ""},
	} {
		if got := Word(tc.word, fns); got != tc.want {
			t.Errorf("Word(%q) = %q; want %q", tc.word, got, tc.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"stpes", "steps", 1}, {"kitten", "sitting", 3}, {"when", "when", 0},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func ExampleWord() {
	fmt.Println(Word("stpes", []string{"id", "on", "when", "steps"}))
	// Output: steps
}
