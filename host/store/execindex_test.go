package store

import (
	"encoding/json"
	"testing"
)

// FuzzExecIndex: what the hand reader takes out of an exec entry,
// json.Unmarshal takes out the same; where json.Unmarshal refuses, the
// hand reader does too.
func FuzzExecIndex(f *testing.F) {
	f.Add([]byte(`{"id":"r-1","rule":"ride","topic":"ride.start","event_id":"e1","key":"v-1","started":"2026-12-05T11:00:00.123Z","at":1764932400123,"outcome":"running"}`))
	f.Add([]byte(`{"id":"r-1","rule":"ride","at":-1,"outcome":"failed","error":"step \"x\": it said \u00fc","parent":"p","ended":"2026-12-05T11:00:01Z"}`))
	f.Add([]byte(` { "Rule" : "a" , "at" : 1e3 , "x" : [ 1 , { "y" : null } , true ] } `))
	f.Add([]byte(`{"rule":"\xff","outcome":null,"at":01,"n":-0.5e+7,"o":{"a":}}`))
	f.Add([]byte(`{"rule":"a","rule":"b","ſtarted":1,"AT":2}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast, slow execFields
		ok := execIndexFast(b, &fast)
		err := json.Unmarshal(b, &slow)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("the hand reader took what json.Unmarshal refuses (%v): %+v", err, fast)
		}
		if fast != slow {
			t.Fatalf("read differently:\nhand %+v\njson %+v", fast, slow)
		}
	})
}

// TestExecIndexEntry: an entry as runlog writes it is read by hand.
func TestExecIndexEntry(t *testing.T) {
	for _, tc := range []struct {
		entry string
		want  execFields
		hand  bool
	}{
		{`{"id":"r-1","rule":"ride","topic":"ride.start","started":"2026-12-05T11:00:00Z","at":1764932400000,"outcome":"running"}`,
			execFields{"ride", "running", 1764932400000}, true},
		{`{"rule":"ride","outcome":"failed","at":5,"error":"a \"quoted\" error"}`, execFields{"ride", "failed", 5}, true},
		{`{"rule":"r\u00e9","outcome":"ok","at":5}`, execFields{"ré", "ok", 5}, false}, // an escape: json.Unmarshal
		{`{"Rule":"ride","outcome":"ok","at":5}`, execFields{"ride", "ok", 5}, false},  // a key in another case
	} {
		var e execFields
		if hand := execIndexFast([]byte(tc.entry), &e); hand != tc.hand {
			t.Errorf("%s: read by hand %v; want %v", tc.entry, hand, tc.hand)
		}
		if got, ok := execIndex([]byte(tc.entry)); !ok || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.entry, got, ok, tc.want)
		}
	}
}
