package runlog

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzEncode: the hand-written encoders say what encoding/json says, and
// read back as the value written.
func FuzzEncode(f *testing.F) {
	f.Add("r1", "lamp", "job", "e1", "", "p", int64(1764489600000), int64(5), "ok", "boom", 3, "step", "n", "log.log", "d1", "x\"\\\n\x01é", "c1")
	f.Add("", "", "", "", "", "", int64(0), int64(0), "", "", 0, "", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, id, rule, topic, event, key, parent string, startNs, took int64, outcome, errText string,
		seq int, kind, name, do, digest, detail, child string) {
		started := time.Unix(0, startNs).UTC()
		var ended time.Time
		if took > 0 {
			ended = started.Add(time.Duration(took))
		}
		e := Run{ID: id, Rule: rule, Topic: topic, EventID: event, Key: key, Parent: parent, Started: started,
			At: started.UnixMilli(), Ended: ended, Outcome: outcome, Error: errText, Trace: parent}
		digest = digest[:min(DigestLen, len(digest))] // what a node keeps
		n := Node{Run: id, Seq: seq, Kind: kind, Name: name, Do: do, Digest: digest, Started: started, Ended: ended,
			Outcome: outcome, Error: errText, Detail: detail}
		if child != "" {
			n.Children = []string{child, id}
			n.Effects = []string{"published " + child, detail}
			n.By = key
		}
		if json.Valid([]byte(detail)) {
			n.Input, n.Values, n.Output = json.RawMessage(detail), json.RawMessage(`{"a":1}`), json.RawMessage(`{"b":[]}`)
		}
		check := func(got []byte, v any, back any) {
			want, err := json.Marshal(v)
			if err != nil {
				return // a time encoding/json refuses (year outside 0..9999)
			}
			if json.Valid(got) && bytes.Equal(got, want) {
				return
			}
			// Invalid UTF-8 is passed through where encoding/json
			// replaces it; both must still decode to the same value.
			if err := json.Unmarshal(got, back); err != nil {
				t.Fatalf("%s does not decode: %v", got, err)
			}
			var fromStd any = new(Run)
			if _, ok := back.(*Node); ok {
				fromStd = new(Node)
			}
			json.Unmarshal(want, fromStd)
			a, _ := json.Marshal(back)
			b, _ := json.Marshal(fromStd)
			if !bytes.Equal(a, b) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		}
		check(AppendRun(nil, &e), &e, new(Run))
		check(AppendNode(nil, &n), &n, new(Node))
		// The writer's clock remembers the last second it formatted: an
		// entry after it in the same second, in another second, and in
		// another zone is still what encoding/json writes.
		var c clock
		check(c.appendRun(nil, &e), &e, new(Run))
		for _, d := range []time.Duration{1, time.Duration(took % int64(time.Second)), time.Second + 7, -3 * time.Hour} {
			n.Started = started.Add(d)
			check(c.appendNode(nil, &n), &n, new(Node))
		}
		n.Started = started.In(time.FixedZone("x", int(took%86400)))
		check(c.appendNode(nil, &n), &n, new(Node))
		e.Started = n.Started.Add(500 * time.Millisecond)
		check(c.appendRun(nil, &e), &e, new(Run))
	})
}

// BenchmarkAppendNode is the writer's encoding of a step node, closed: the
// bulk of what it encodes (five nodes and an exec entry a run).
func BenchmarkAppendNode(b *testing.B) {
	var c clock
	now := time.Now()
	n := Node{Run: "0190a3b4c5d6e7f8a9b0c1d2", Seq: 3, Kind: KindStep, Name: "one", Do: "log.log",
		Digest: "fd137ee05d581234", Outcome: OK}
	var buf []byte
	for i := 0; b.Loop(); i++ { // a node every 1,013 ns, taking 123,457 ns
		n.Started = now.Add(time.Duration(i) * 1013 * time.Nanosecond)
		n.Ended = n.Started.Add(123457 * time.Nanosecond)
		buf = c.appendNode(buf[:0], &n)
	}
	b.SetBytes(int64(len(buf)))
}
