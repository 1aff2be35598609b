package state

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
)

// gatedStore is a Store whose first write waits at a gate (entered is
// closed when it is there, open releases it), and which applies each
// write when it returns, as a commit would.
type gatedStore struct {
	mu      sync.Mutex
	m       map[string]string
	calls   int
	called  chan struct{} // a write after the first was made
	entered chan struct{}
	open    chan struct{}
	firstIn chan struct{} // closed once the first write is applied
	writes  [][]string    // each write's fields and deletions
}

func (s *gatedStore) HGetAll(string) (map[string]string, error) { return map[string]string{}, nil }

func (s *gatedStore) HSetDel(_ string, fields []string, values [][]byte, del []string) error {
	s.mu.Lock()
	s.calls++
	first := s.calls == 1
	s.mu.Unlock()
	if first {
		close(s.entered)
		<-s.open
	} else {
		select {
		case s.called <- struct{}{}:
		default:
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, append(append([]string(nil), fields...), del...))
	for i, f := range fields {
		s.m[f] = string(values[i])
	}
	for _, f := range del {
		delete(s.m, f)
	}
	if first {
		close(s.firstIn)
	}
	return nil
}

// TestOneWriteAnEntityAtATime: Sync of an entity that the writer is
// carrying to the store waits for that write, then writes the newer
// state. Two writes at once could commit in either order, and the store
// would keep the older state: the next start would see a change that
// had been heard already.
func TestOneWriteAnEntityAtATime(t *testing.T) {
	st := &gatedStore{m: map[string]string{}, called: make(chan struct{}, 1), entered: make(chan struct{}), open: make(chan struct{}),
		firstIn: make(chan struct{})}
	tb, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	report := func(js string) {
		v, err := abi.AppendJSONView(nil, []byte(js), false)
		if err != nil {
			t.Fatal(err)
		}
		tb.Observe(&bus.Event{ID: js, Topic: "door", Time: time.Now(), Raw: []byte(js), View: v})
	}
	report(`{"topic":"door","open":true}`)
	<-st.entered // the writer has the open door on its way
	report(`{"topic":"door","open":false}`)
	synced := make(chan error, 1)
	go func() { synced <- tb.Sync("door") }()
	select {
	case <-st.called: // without the order, the closed door is committed first
	case <-time.After(50 * time.Millisecond): // waiting for the writer, as it should
	}
	close(st.open)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	<-st.firstIn
	st.mu.Lock()
	defer st.mu.Unlock()
	var rec record
	if err := json.Unmarshal([]byte(st.m["door"]), &rec); err != nil {
		t.Fatalf("the store's door %q: %v", st.m["door"], err)
	}
	if string(rec.Event) != `{"topic":"door","open":false}` {
		t.Errorf("the store keeps %s after Sync; want the closed door", rec.Event)
	}
}

// TestSyncAllOnce: SyncAll writes the entities named, each once however
// often named, and only those that changed since their last write (the
// writer's, or its own). Its one write for all is BenchmarkHoldCost's
// state-writes/op.
func TestSyncAllOnce(t *testing.T) {
	st := &gatedStore{m: map[string]string{}, called: make(chan struct{}, 1), entered: make(chan struct{}),
		open: make(chan struct{}), firstIn: make(chan struct{})}
	close(st.open) // no gate
	tb, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for _, js := range []string{`{"topic":"a","v":1}`, `{"topic":"b","v":1}`, `{"topic":"c","v":1}`} {
		v, _ := abi.AppendJSONView(nil, []byte(js), false)
		tb.Observe(&bus.Event{ID: js, Topic: js[10:11], Time: time.Now(), Raw: []byte(js), View: v})
	}
	if err := tb.SyncAll([]string{"b", "a", "b", "z"}); err != nil {
		t.Fatal(err)
	}
	if err := tb.SyncAll([]string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	// The writer (10 ms after the first report) may have written some of
	// them first. Either way each went once: SyncAll wrote none again,
	// and the duplicate b and the unknown z cost nothing.
	na, nb := 0, 0
	for _, w := range st.writes {
		hasA, hasB := slices.Contains(w, "a"), slices.Contains(w, "b")
		if hasA {
			na++
		}
		if hasB {
			nb++
		}
	}
	if na != 1 || nb != 1 {
		t.Errorf("writes %v: a written %d times, b %d; want once each", st.writes, na, nb)
	}
}
