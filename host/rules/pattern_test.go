package rules

import "testing"

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		pattern, topic string
		want           bool
	}{
		{"scooter.telemetry", "scooter.telemetry", true},
		{"scooter.telemetry", "scooter.telemetry.x", false},
		{"scooter.*", "scooter.telemetry", true},
		{"scooter.*", "scooter", false},
		{"scooter.*", "scooter.a.b", false},
		{"*.telemetry", "bike.telemetry", true},
		{"scooter.>", "scooter.a", true},
		{"scooter.>", "scooter.a.b.c", true},
		{"scooter.>", "scooter", false},
		{">", "anything.at.all", true},
		{">", "ruled.cmd.r1", false},
		{"*.cmd.*", "ruled.cmd.r1", false},
		{"ruled.cmd.r1", "ruled.cmd.r1", false},
		{"a.*.c", "a.b.c", true},
		{"a.*.c", "a.b.d", false},
	}
	for _, tc := range tests {
		if got := Pattern(tc.pattern).Match(tc.topic); got != tc.want {
			t.Errorf("Pattern(%q).Match(%q) = %v; want %v", tc.pattern, tc.topic, got, tc.want)
		}
	}
}
