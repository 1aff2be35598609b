package bus

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
)

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Reason
	}{
		{"empty", ``, ReasonNotJSON},
		{"blank", " \n\t", ReasonNotJSON},
		{"garbage", `topic=a`, ReasonNotJSON},
		{"truncated", `{"topic":"a"`, ReasonNotJSON},
		{"trailing data", `{"topic":"a"} {}`, ReasonNotJSON},
		{"duplicate key", `{"topic":"a","topic":"ruled.cmd.x"}`, ReasonNotJSON},
		{"array", `[{"topic":"a"}]`, ReasonNotObj},
		{"string", `"a"`, ReasonNotObj},
		{"number", `12`, ReasonNotObj},
		{"null", `null`, ReasonNotObj},
		{"no topic", `{"id":"x"}`, ReasonNoTopic},
		{"empty object", `{}`, ReasonNoTopic},
		{"topic number", `{"topic":12}`, ReasonNoTopic},
		{"topic null", `{"topic":null}`, ReasonNoTopic},
		{"topic object", `{"topic":{"a":1}}`, ReasonNoTopic},
		{"topic empty", `{"topic":""}`, ReasonNoTopic},
		{"nested topic only", `{"data":{"topic":"a"}}`, ReasonNoTopic},
		{"reserved cmd", `{"topic":"ruled.cmd.r1"}`, ReasonReserved},
		{"reserved triggers", `{"topic":"ruled.triggers.changed"}`, ReasonReserved},
		{"reserved bare prefix", `{"topic":"ruled."}`, ReasonReserved},
		{"reserved in another case", `{"topic":"Ruled.cmd"}`, ReasonReserved},
		{"a control character", `{"topic":"a\u001bb"}`, ReasonBadField},
		{"a line separator", `{"topic":"a\u2028b"}`, ReasonBadField},
		{"wildcard star", `{"topic":"a.*"}`, ReasonBadField},
		{"wildcard gt", `{"topic":"a.>"}`, ReasonBadField},
		{"space", `{"topic":"a b"}`, ReasonBadField},
		{"tab", `{"topic":"a\tb"}`, ReasonBadField},
		{"newline", `{"topic":"a\nb"}`, ReasonBadField},
		{"leading dot", `{"topic":".a"}`, ReasonBadField},
		{"trailing dot", `{"topic":"a."}`, ReasonBadField},
		{"empty segment", `{"topic":"a..b"}`, ReasonBadField},
		{"long topic", `{"topic":"` + strings.Repeat("a", 257) + `"}`, ReasonBadField},
		{"id number", `{"topic":"a","id":7}`, ReasonBadField},
		{"id null", `{"topic":"a","id":null}`, ReasonBadField},
		{"time number", `{"topic":"a","time":1700000000}`, ReasonBadField},
		{"time not rfc3339", `{"topic":"a","time":"2024-01-02 03:04:05"}`, ReasonBadField},
		{"time date only", `{"topic":"a","time":"2024-01-02"}`, ReasonBadField},
	}
	var d Decoder
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := d.Decode([]byte(tc.in))
			if got := ReasonOf(err); got != tc.want {
				t.Fatalf("Decode(%q) reason = %q (%v); want %q", tc.in, got, err, tc.want)
			}
			if e != nil {
				t.Errorf("Decode(%q) = %+v; want nil with the error", tc.in, e)
			}
			if !strings.HasPrefix(err.Error(), "event rejected: "+string(tc.want)) {
				t.Errorf("error %q does not start with its reason", err)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		topic string
	}{
		{"minimal", `{"topic":"a"}`, "a"},
		{"segments", `{"topic":"vehicle.s1.battery"}`, "vehicle.s1.battery"},
		{"ruled without dot", `{"topic":"ruled"}`, "ruled"},
		{"ruled in a segment", `{"topic":"x.ruled.cmd"}`, "x.ruled.cmd"},
		{"unicode", `{"topic":"véhicule.ünit"}`, "véhicule.ünit"},
		{"escaped", `{"topic":"a\u002eb"}`, "a.b"},
		{"256 bytes", `{"topic":"` + strings.Repeat("a", 256) + `"}`, strings.Repeat("a", 256)},
		{"surrounding space", " \r\n\t{\"topic\":\"a\"}\n", "a"},
		{"with data", `{"topic":"a","battery":12,"tags":["x"],"data":{"topic":"ruled.x"}}`, "a"},
	}
	var d Decoder
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := d.Decode([]byte(tc.in))
			if err != nil {
				t.Fatalf("Decode(%q): %v", tc.in, err)
			}
			if e.Topic != tc.topic {
				t.Errorf("Topic = %q; want %q", e.Topic, tc.topic)
			}
			if want := strings.TrimSpace(tc.in); string(e.Raw) != want {
				t.Errorf("Raw = %q; want %q", e.Raw, want)
			}
			v, err := abi.ParseView(e.View)
			if err != nil {
				t.Fatalf("ParseView: %v", err)
			}
			if _, ok := v.Raw(); ok {
				t.Errorf("view carries raw JSON; want it without")
			}
			if x, _ := v.Find("topic"); string(must(x.Str())) != tc.topic {
				t.Errorf("view topic = %q; want %q", must(x.Str()), tc.topic)
			}
		})
	}
}

func must(b []byte, _ bool) []byte { return b }

func TestDecodeIDAndTime(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	d := Decoder{Now: func() time.Time { return now }}
	tests := []struct {
		name string
		in   string
		id   string // "" for a generated one
		time time.Time
	}{
		{"both given", `{"topic":"a","id":"e1","time":"2024-01-02T03:04:05Z"}`, "e1", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"nanoseconds and offset", `{"topic":"a","id":"e1","time":"2024-01-02T03:04:05.123456789+02:00"}`, "e1", time.Date(2024, 1, 2, 1, 4, 5, 123456789, time.UTC)},
		{"no id", `{"topic":"a","time":"2024-01-02T03:04:05Z"}`, "", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"empty id", `{"topic":"a","id":""}`, "", now},
		{"no time", `{"topic":"a","id":"e1"}`, "e1", now},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := d.Decode([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if tc.id != "" && e.ID != tc.id {
				t.Errorf("ID = %q; want %q", e.ID, tc.id)
			}
			if tc.id == "" {
				if b, err := hex.DecodeString(e.ID); err != nil || len(b) != 16 {
					t.Errorf("ID = %q; want 32 hex digits", e.ID)
				}
			}
			if !e.Time.Equal(tc.time) {
				t.Errorf("Time = %v; want %v", e.Time, tc.time)
			}
		})
	}

	// A device's payload (IDField set): its own "id" and "time" are data,
	// never a refusal (issue 37, 10: {"id": 17, "temp": 31} was refused
	// with a warning a message, 41,617 in one run).
	for _, tc := range []struct {
		name, field, in, id string // id "": a generated one
		time                time.Time
	}{
		{"device id is data", NoID, `{"topic":"a","id":17,"temp":31}`, "", now},
		{"device string id is data", NoID, `{"topic":"a","id":"dev-3"}`, "", now},
		{"device epoch time is data", NoID, `{"topic":"a","time":1700000000}`, "", now},
		{"device RFC 3339 time is the event's", NoID, `{"topic":"a","time":"2024-01-02T03:04:05Z"}`, "", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"a field of its own", "msg", `{"topic":"a","id":17,"msg":"m-1"}`, "m-1", now},
		{"a numeric field of its own", "seq", `{"topic":"a","seq":42}`, "42", now},
		{"a nested field", "meta.uuid", `{"topic":"a","meta":{"uuid":"u-7"}}`, "u-7", now},
		{"its field missing", "msg", `{"topic":"a","id":17}`, "", now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decoder{Now: d.Now, IDField: tc.field}
			e, err := d.Decode([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if tc.id != "" && e.ID != tc.id || tc.id == "" && len(e.ID) != 32 {
				t.Errorf("ID = %q; want %q (\"\": generated)", e.ID, tc.id)
			}
			if !e.Time.Equal(tc.time) || string(e.Raw) != tc.in {
				t.Errorf("Time %v, Raw %s; want %v, %s", e.Time, e.Raw, tc.time, tc.in)
			}
		})
	}
	t.Run("an id over MaxIDLen", func(t *testing.T) {
		long := strings.Repeat("x", MaxIDLen+1)
		if _, err := d.Decode([]byte(`{"topic":"a","id":"` + long + `"}`)); ReasonOf(err) != ReasonBadField {
			t.Errorf("err = %v; want a bad field", err)
		}
	})

	t.Run("generated ids differ", func(t *testing.T) {
		a, _ := d.Decode([]byte(`{"topic":"a"}`))
		b, _ := d.Decode([]byte(`{"topic":"a"}`))
		if a.ID == b.ID {
			t.Errorf("two events got the same id %q", a.ID)
		}
	})
	t.Run("default clock", func(t *testing.T) {
		var d Decoder
		before := time.Now()
		e, _ := d.Decode([]byte(`{"topic":"a"}`))
		if e.Time.Before(before) || e.Time.After(time.Now()) {
			t.Errorf("Time = %v; want about now", e.Time)
		}
	})
}

func TestDecodeSize(t *testing.T) {
	event := func(n int) []byte { // an event of exactly n bytes
		b := []byte(`{"topic":"a","pad":""}`)
		return append(b[:len(b)-2], append(bytes.Repeat([]byte("x"), n-len(b)), `"}`...)...)
	}
	tests := []struct {
		name string
		max  int
		in   []byte
		want Reason
	}{
		{"at the limit", 100, event(100), ""},
		{"one over", 100, event(101), ReasonTooLarge},
		{"space is not counted", 100, append(append([]byte("   "), event(100)...), "\n\n"...), ""},
		{"default limit", 0, event(DefaultMaxEventSize), ""},
		{"over the default", 0, event(DefaultMaxEventSize + 1), ReasonTooLarge},
		{"negative means default", -1, event(DefaultMaxEventSize + 1), ReasonTooLarge},
		{"checked before parsing", 10, []byte(`not json at all`), ReasonTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decoder{MaxSize: tc.max}
			_, err := d.Decode(tc.in)
			if got := ReasonOf(err); got != tc.want {
				t.Errorf("reason = %q (%v); want %q", got, err, tc.want)
			}
		})
	}
}

func TestDecodeCopies(t *testing.T) {
	var d Decoder
	in := []byte(`{"topic":"a","v":1}`)
	e, err := d.Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	copy(in, `{"topic":"b","v":2}`)
	if string(e.Raw) != `{"topic":"a","v":1}` || e.Topic != "a" {
		t.Errorf("event changed with its input: Raw %q, Topic %q", e.Raw, e.Topic)
	}
}

func TestReasonOf(t *testing.T) {
	if got := ReasonOf(nil); got != "" {
		t.Errorf("ReasonOf(nil) = %q; want \"\"", got)
	}
	wrapped := checkPublish(&Event{Topic: "ruled.x"})
	if got := ReasonOf(wrapped); got != ReasonReserved {
		t.Errorf("ReasonOf(%v) = %q; want %q", wrapped, got, ReasonReserved)
	}
}

func TestDecodeConcurrent(t *testing.T) {
	var d Decoder
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			ok := true
			for i := 0; i < 500; i++ {
				in := []byte(`{"topic":"t` + string(rune('a'+g)) + `","n":` + string(rune('0'+i%10)) + `}`)
				e, err := d.Decode(in)
				ok = ok && err == nil && e.Topic == "t"+string(rune('a'+g))
			}
			done <- ok
		}()
	}
	for g := 0; g < 4; g++ {
		if !<-done {
			t.Error("a concurrent Decode returned a wrong event")
		}
	}
}

func TestCheckTopic(t *testing.T) {
	tests := []struct {
		topic string
		ok    bool
	}{
		{"scooter.telemetry", true},
		{"café.ünïcode", true},
		{"", false},
		{"ruled.cmd.x", false},
		{"RULED.cmd.x", false}, // the reservation holds in any case
		{"Ruled.Triggers.Changed", false},
		{"ruledx.fine", true},
		{"a\x00b", false},
		{"a\rb", false},
		{"a\x1b[31mred", false},
		{"a\u2028b", false},
		{"a\u0085b", false}, // NEL, a C1 control
		{"a\xffb", false},   // invalid UTF-8
		{"a*b", false},
		{"a..b", false},
	}
	for _, tc := range tests {
		if err := CheckTopic(tc.topic); (err == nil) != tc.ok {
			t.Errorf("CheckTopic(%q) = %v; want ok %v", tc.topic, err, tc.ok)
		}
	}
}

// TestHopsTravel: an event's hops and chain go through the Redis bus's
// wire form and come back; one from outside goes as it did.
func TestHopsTravel(t *testing.T) {
	d := &Decoder{}
	e, err := d.Decode([]byte(`{"topic":"loop.a","id":"e1","n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := stamped(e)
	if err != nil || plain[0] != '{' {
		t.Fatalf("an event from outside: %q, %v; want its JSON", plain, err)
	}
	e.Hops, e.Chain = 3, ChainOf(ChainOf("a", "b"), "a")
	wire, err := stamped(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := unwrapHops(d, string(wire))
	if err != nil {
		t.Fatal(err)
	}
	if got.Hops != 3 || got.Chain != "a → b → a" || got.ID != "e1" || !got.Time.Equal(e.Time) || string(got.Raw) != string(e.Raw) {
		t.Errorf("came back %+v", got)
	}
	for _, bad := range []string{"\x1dx a\n\x1ee1\n2026-01-01T00:00:00Z\n{}", "\x1d3 a\n{}", "\x1d-1\n\x1ee1\n2026-01-01T00:00:00Z\n{\"topic\":\"t\"}"} {
		if _, err := unwrapHops(d, bad); err == nil {
			t.Errorf("%q unwrapped", bad)
		}
	}
}

func TestChainOf(t *testing.T) {
	c := ""
	for range 40 {
		c = ChainOf(c, "r")
	}
	if n := strings.Count(c, "r"); n > MaxHops || !strings.HasPrefix(c, "… → r") {
		t.Errorf("a chain of 40: %q (%d rules); want at most %d, the oldest cut", c, n, MaxHops)
	}
}
