package bus

import (
	"encoding/json"
	"sync"
	"testing"
)

func TestCounters(t *testing.T) {
	var c Counters
	if s := c.Snapshot(); s.Accepted != 0 || len(s.Rejected) != 0 || s.Rejected == nil {
		t.Errorf("zero Counters snapshot = %+v; want zeros and an empty map", s)
	}
	c.Accept()
	c.Accept()
	c.Reject(ReasonNotJSON)
	c.Reject(ReasonReserved)
	c.Reject(ReasonReserved)
	c.Reject("")
	s := c.Snapshot()
	want := map[Reason]uint64{ReasonNotJSON: 1, ReasonReserved: 2, "other": 1}
	if s.Accepted != 2 {
		t.Errorf("Accepted = %d; want 2", s.Accepted)
	}
	for r, n := range want {
		if s.Rejected[r] != n {
			t.Errorf("Rejected[%q] = %d; want %d", r, s.Rejected[r], n)
		}
	}
	if len(s.Rejected) != len(want) {
		t.Errorf("Rejected = %v; want %v", s.Rejected, want)
	}
	if got := s.TotalRejected(); got != 4 {
		t.Errorf("TotalRejected = %d; want 4", got)
	}

	c.Reject(ReasonNotJSON)
	if s.Rejected[ReasonNotJSON] != 1 {
		t.Errorf("a snapshot changed after it was taken")
	}
	b, _ := json.Marshal(c.Snapshot())
	if got, want := string(b), `{"accepted":2,"rejected":{"not json":2,"other":1,"reserved topic":2}}`; got != want {
		t.Errorf("json = %s; want %s", got, want)
	}
}

func TestCounters_hammer(t *testing.T) {
	const goroutines, each = 4, 1000
	var c Counters
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if (g+i)%2 == 0 {
					c.Accept()
				} else {
					c.Reject(ReasonTooLarge)
				}
				if i%100 == 0 {
					c.Snapshot()
				}
			}
		}()
	}
	wg.Wait()
	s := c.Snapshot()
	if s.Accepted+s.TotalRejected() != goroutines*each || s.Accepted != goroutines*each/2 {
		t.Errorf("snapshot = %+v; want %d accepted and %d too large", s, goroutines*each/2, goroutines*each/2)
	}
}
