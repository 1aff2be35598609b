package seq

import (
	"maps"
	"testing"

	"github.com/ruled-dev/ruled/internal/testkit"
)

// TestPendingDigests: the store counts the module digests its records
// name as they are written, overwritten, dropped, loaded and forgotten,
// so that knowing what records pin does not read every record (issue 38).
func TestPendingDigests(t *testing.T) {
	h := &testkit.Hasher{}
	rec := func(id, digest string) Pending {
		return Pending{ID: id, Rule: "r", FireAt: 1, Event: []byte(`{}`), Digest: digest}
	}
	s := NewPendingStore(h, Placement{}, &testkit.Log{})
	steps := []struct {
		name string
		do   func(s *PendingStore)
		want map[string]int
	}{
		{"two records of one module", func(s *PendingStore) { s.Put(rec("a", "d1")); s.Put(rec("b", "d1")) }, map[string]int{"d1": 2}},
		{"a record without one (a wait-for)", func(s *PendingStore) { s.Put(rec("c", "")) }, map[string]int{"d1": 2}},
		{"a run's next step on another module", func(s *PendingStore) { s.Put(rec("a", "d2")) }, map[string]int{"d1": 1, "d2": 1}},
		{"the same record again", func(s *PendingStore) { s.Put(rec("a", "d2")) }, map[string]int{"d1": 1, "d2": 1}},
		{"dropped", func(s *PendingStore) { s.Drop("b") }, map[string]int{"d2": 1}},
		{"dropped twice", func(s *PendingStore) { s.Drop("b") }, map[string]int{"d2": 1}},
		{"its next step without one", func(s *PendingStore) { s.Put(rec("c", "d3")); s.Put(rec("a", "")) }, map[string]int{"d3": 1}},
		{"forgotten, kept in the store", func(s *PendingStore) { s.Forget("c") }, map[string]int{}},
	}
	for _, st := range steps {
		st.do(s)
		if got := s.Digests(); !maps.Equal(got, st.want) {
			t.Fatalf("%s: digests %v; want %v", st.name, got, st.want)
		}
	}
	// A new process's store knows what it loaded.
	s2 := NewPendingStore(h, Placement{}, &testkit.Log{})
	recs, err := s2.Load()
	if err != nil || len(recs) != 2 {
		t.Fatalf("loaded %d records (%v); want 2", len(recs), err)
	}
	if got := s2.Digests(); !maps.Equal(got, map[string]int{"d3": 1}) || !s2.Known() {
		t.Errorf("digests after a load: %v (known %v); want d3: 1, known", got, s2.Known())
	}
	// A load that failed: what the records pin is not known (a module
	// store must not collect) until a load succeeds.
	h.SetDown(true)
	if _, err := s2.Load(); err == nil || s2.Known() {
		t.Errorf("a failed load: %v, known %v; want an error, not known", err, s2.Known())
	}
	h.SetDown(false)
	if _, err := s2.Load(); err != nil || !s2.Known() {
		t.Errorf("a load after: %v, known %v; want known", err, s2.Known())
	}
}
