package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// memLog is a chain in memory (the store's part, for the Trail's tests).
type memLog struct {
	mu      sync.Mutex
	entries []Entry
	block   chan struct{} // when set, appends wait for it
}

func (m *memLog) AuditAppend(_ context.Context, e Entry, _ Retention) (Entry, error) {
	if m.block != nil {
		<-m.block
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := ""
	if n := len(m.entries); n > 0 {
		prev = m.entries[n-1].Hash
	}
	e.Seal(uint64(len(m.entries)+1), prev)
	m.entries = append(m.entries, e)
	return e, nil
}

func chainOf(n int) []Entry {
	m := &memLog{}
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for i := range n {
		m.AuditAppend(context.Background(), Entry{At: t0.Add(time.Duration(i) * time.Second), Who: "token ops", From: "10.0.0.5:4000",
			What: Command, Detail: fmt.Sprintf("POST /v1/rules/r%d/pause → 200", i)}, Retention{})
	}
	return m.entries
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name   string
		change func([]Entry) ([]Entry, string) // the entries and anchor to verify
		broken uint64                          // 0: intact
		why    string
	}{
		{"intact", func(es []Entry) ([]Entry, string) { return es, "" }, 0, ""},
		{"a detail changed", func(es []Entry) ([]Entry, string) { es[3].Detail = "POST /v1/rules/r3/kill → 200"; return es, "" }, 4, "changed"},
		{"who changed", func(es []Entry) ([]Entry, string) { es[0].Who = "token ci"; return es, "" }, 1, "changed"},
		{"a time changed", func(es []Entry) ([]Entry, string) { es[5].At = es[5].At.Add(time.Hour); return es, "" }, 6, "changed"},
		{"changed and sealed again", func(es []Entry) ([]Entry, string) {
			es[2].Detail = "x"
			es[2].Seal(es[2].Seq, es[2].Prev)
			return es, ""
		}, 4, "does not follow"},
		{"one removed", func(es []Entry) ([]Entry, string) { return append(es[:4:4], es[5:]...), "" }, 6, "5 to 5 are missing"},
		{"two swapped", func(es []Entry) ([]Entry, string) { es[2], es[3] = es[3], es[2]; return es, "" }, 4, "missing"},
		{"the first removed, no anchor", func(es []Entry) ([]Entry, string) { return es[1:], "" }, 2, "no anchor"},
		{"trimmed, with its anchor", func(es []Entry) ([]Entry, string) { return es[3:], es[2].Hash }, 0, ""},
		{"trimmed, a wrong anchor", func(es []Entry) ([]Entry, string) { return es[3:], es[1].Hash }, 4, "does not follow"},
	}
	for _, tc := range tests {
		es, anchor := tc.change(chainOf(8))
		head, err := Verify(es, anchor)
		if tc.broken == 0 {
			if err != nil || head != es[len(es)-1].Hash {
				t.Errorf("%s: %s, %v", tc.name, head, err)
			}
			continue
		}
		be, ok := err.(*BrokenError)
		if !ok || be.Seq != tc.broken || !strings.Contains(be.Why, tc.why) {
			t.Errorf("%s: %v; want broken at %d (%s)", tc.name, err, tc.broken, tc.why)
		}
	}
}

// TestTrailDropsInWords: entries past the queue's room are dropped and
// counted, and the count is appended as an entry once there is room; Close
// appends what was queued.
func TestTrailDropsInWords(t *testing.T) {
	m := &memLog{block: make(chan struct{})}
	tr := NewTrail(m, Retention{}, nil)
	for i := range QueueSize + 10 {
		tr.Record(Entry{Who: "ruled", What: Refused, Detail: fmt.Sprint(i)})
	}
	// One entry is with the store (blocked), QueueSize wait; the rest
	// found no room.
	d, _ := tr.Stats()
	if d < 9 || d > 10 {
		t.Errorf("dropped %d; want 9 or 10", d)
	}
	close(m.block)
	tr.Close()
	tr.Record(Entry{What: Command}) // after Close: ignored
	said := 0
	for _, e := range m.entries {
		if e.What == Dropped && strings.Contains(e.Detail, "entries dropped") {
			said++
		}
	}
	if want := QueueSize + 10 - int(d) + 1; said != 1 || len(m.entries) != want {
		t.Errorf("%d entries, %d saying how many were dropped; want %d and 1", len(m.entries), said, want)
	}
	if _, err := Verify(m.entries, ""); err != nil {
		t.Error(err)
	}
}

func ExampleVerify() {
	es := chainOf(3)
	_, err := Verify(es, "")
	fmt.Println(err)
	es[1].Detail = "POST /v1/rules/r1/kill → 200"
	_, err = Verify(es, "")
	fmt.Println(err)
	// Output:
	// <nil>
	// audit: the chain breaks at entry 2: its content is not what was sealed (changed)
}

// TestSealedEntriesSurviveJSON: whatever bytes a caller puts in an entry
// (a request path with a stray byte, a long detail cut in a character),
// the entry as the stores keep it — JSON — verifies.
func TestSealedEntriesSurviveJSON(t *testing.T) {
	for _, detail := range []string{"POST /v1/rules/\xff/pause → 404", strings.Repeat("é", MaxDetail), "ok"} {
		e := Entry{At: time.Now(), Who: "token \xfe", What: Command, Detail: detail}
		e.Seal(1, "")
		b, _ := json.Marshal(e)
		var back Entry
		json.Unmarshal(b, &back)
		if _, err := Verify([]Entry{back}, ""); err != nil {
			t.Errorf("%.20q: %v", detail, err)
		}
	}
}
