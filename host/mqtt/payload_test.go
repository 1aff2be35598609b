package mqtt

import (
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/bus"
)

// TestPayloadHygiene: a message's payload meets the rules an HTTP event
// meets, through the one decoder (issue 38: MQTT took {"x":1,"x":2} and
// wrapped JSON nested 100,000 deep as a string, where HTTP refuses both).
// Only text that does not open as JSON is wrapped.
func TestPayloadHygiene(t *testing.T) {
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	deepObj := `{"a":` + strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5001)
	for _, tc := range []struct {
		name, payload string
		wrap          bool
		refused       bool   // by event or by the decoder
		field, want   string // a field of the event, and its value as JSON text
	}{
		{"an object", `{"vehicle":"v1","battery":17}`, true, false, "battery", "17"},
		{"an empty object", `{}`, true, false, "mqtt_topic", `"scooter/v1/t"`},
		{"spaces around an object", " \n{ \"a\" : 1 } \n", true, false, "a", "1"},
		{"the device's own topic is replaced", `{"topic":"mine","mqtt_topic":"x","a":1}`, true, false, "topic", `"scooter.v1.t"`},
		{"a duplicate key", `{"x":1,"x":2}`, true, true, "", ""},
		{"a duplicate key beside the device's topic", `{"topic":"a","x":1,"x":2}`, true, true, "", ""},
		{"an object nested 5,000 deep", deepObj, true, true, "", ""},
		{"an array nested 100,000 deep", deep, true, true, "", ""},
		{"an object that is not JSON", `{oops`, true, true, "", ""},
		{"text is wrapped", `ON`, true, false, "payload", `"ON"`},
		{"a number is wrapped as its text", `21.5`, true, false, "payload", `"21.5"`},
		{"an array is wrapped as its text", `[1,2]`, true, false, "payload", `"[1,2]"`},
		{"text refused when not wrapping", `ON`, false, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Client{cfg: Config{WrapNonJSON: tc.wrap}}
			dec := &bus.Decoder{IDField: bus.NoID}
			raw, _, err := s.event("scooter/v1/t", []byte(tc.payload))
			var e *bus.Event
			if err == nil {
				e, err = dec.Decode(raw)
			}
			if tc.refused {
				if err == nil {
					t.Fatalf("taken as %.200s; want it refused", e.Raw)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if e.Topic != "scooter.v1.t" {
				t.Errorf("topic %q", e.Topic)
			}
			if got := jsonField(t, e, tc.field); got != tc.want {
				t.Errorf("%s = %s; want %s (event %s)", tc.field, got, tc.want, e.Raw)
			}
		})
	}
}

// jsonField is an event's field as JSON text, "<none>" when missing.
func jsonField(t *testing.T, e *bus.Event, path string) string {
	t.Helper()
	v, err := abi.ParseView(e.View)
	if err != nil {
		t.Fatal(err)
	}
	x, ok := v.Decode(path)
	if !ok {
		return "<none>"
	}
	return string(tmpl.AppendJSON(nil, x))
}
