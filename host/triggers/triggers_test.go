package triggers

import (
	"reflect"
	"testing"
)

func TestIndex(t *testing.T) {
	b := NewBuilder[string]()
	b.On("scooter.telemetry", "low")
	b.On("scooter.*", "any")
	b.On("scooter.>", "deep")
	b.On("bike.telemetry", "bike")
	b.CancelOn("scooter.charging", "low")
	b.CancelOn("scooter.*", "any")
	ix := b.Build()
	tests := []struct {
		topic       string
		trig, cancl []string
	}{
		{"scooter.telemetry", []string{"low", "any", "deep"}, []string{"any"}},
		{"scooter.a.b", []string{"deep"}, nil},
		{"scooter.charging", []string{"any", "deep"}, []string{"low", "any"}},
		{"bike.telemetry", []string{"bike"}, nil},
		{"ruled.cmd.low", nil, nil},
	}
	for _, tc := range tests {
		if got := ix.Triggered(tc.topic); !reflect.DeepEqual(got, tc.trig) {
			t.Errorf("Triggered(%q) = %v; want %v", tc.topic, got, tc.trig)
		}
		if got := ix.Cancelled(tc.topic); !reflect.DeepEqual(got, tc.cancl) {
			t.Errorf("Cancelled(%q) = %v; want %v", tc.topic, got, tc.cancl)
		}
	}
	// The literal slice is not modified by a wildcard match.
	if got := ix.Triggered("scooter.telemetry"); len(got) != 3 || len(ix.literal["scooter.telemetry"]) != 1 {
		t.Error("collect appended to the index's own slice")
	}
}
