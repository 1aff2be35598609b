package mqtt

import (
	"errors"
	"strings"
	"testing"
)

func TestTopicAndPattern(t *testing.T) {
	topics := []struct{ in, want string }{
		{"scooter/v1/telemetry", "scooter.v1.telemetry"},
		{"a", "a"},
		{"home/living room/lamp", ""}, // a space
		{"a//b", ""},
		{"a/b.c", ""},
		{"$SYS/broker/uptime", ""},
		{"a/+/b", ""},
		{"", ""},
	}
	for _, tc := range topics {
		got, err := Topic(tc.in)
		if got != tc.want || (tc.want == "") != errors.Is(err, ErrTopic) {
			t.Errorf("Topic(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	filters := []struct{ in, want string }{
		{"scooter/+/telemetry", "scooter.*.telemetry"},
		{"scooter/#", "scooter.>"},
		{"a/b", "a.b"},
		{"a/#/b", ""},
		{"a/b+", ""},
		{"$share/g/a", ""},
	}
	for _, tc := range filters {
		got, err := Pattern(tc.in)
		if got != tc.want || (tc.want == "") != errors.Is(err, ErrTopic) {
			t.Errorf("Pattern(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// FuzzTopic: a topic that maps maps back level for level, and what it
// maps to is a ruled topic (no empty segment, no wildcard).
func FuzzTopic(f *testing.F) {
	for _, s := range []string{"scooter/v1/telemetry", "a", "a//b", "$x", "a.b/c", "é/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Topic(in)
		if err != nil {
			return
		}
		if strings.ReplaceAll(got, ".", "/") != in {
			t.Fatalf("Topic(%q) = %q does not map back", in, got)
		}
		for _, seg := range strings.Split(got, ".") {
			if seg == "" || strings.ContainsAny(seg, "*>+#/") {
				t.Fatalf("Topic(%q) = %q has segment %q", in, got, seg)
			}
		}
	})
}
