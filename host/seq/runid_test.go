package seq

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestNewRunIDOrdered: run ids are 32 hex digits, start with the time in
// unix milliseconds, and increase in the order they are made — from many
// goroutines at once too — so stores index runs by appending.
func TestNewRunIDOrdered(t *testing.T) {
	before := time.Now().UnixMilli()
	const goroutines, each = 4, 5000
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				ids[g] = append(ids[g], NewRunID())
			}
		})
	}
	wg.Wait()
	after := time.Now().UnixMilli()
	seen := map[string]bool{}
	for _, list := range ids {
		for i, id := range list {
			if len(id) != 32 || seen[id] {
				t.Fatalf("id %q: want 32 hex digits, never repeated", id)
			}
			seen[id] = true
			if i > 0 && id <= list[i-1] {
				t.Fatalf("%q made after %q sorts before it", id, list[i-1])
			}
			ms, err := strconv.ParseInt(id[:12], 16, 64)
			if err != nil || ms < before || ms > after+1 { // +1: a count past 65,535 carries
				t.Fatalf("id %q: time %d (%v), want between %d and %d", id, ms, err, before, after)
			}
		}
	}
}

// TestRunIDOf: a run named by what started it is named the same each
// time (a hold's run started again after a kill), apart for anything
// else, and in NewRunID's form: its time first, so it lists in order.
func TestRunIDOf(t *testing.T) {
	at := time.UnixMilli(1_765_000_000_123)
	a := RunIDOf(at, "hold", "door", "0", "door.front")
	for _, tc := range []struct {
		id   string
		same bool
	}{
		{RunIDOf(at, "hold", "door", "0", "door.front"), true},
		{RunIDOf(at, "hold", "door", "0", "door.back"), false},
		{RunIDOf(at, "hold", "door0", "", "door.front"), false}, // parts are kept apart
		{RunIDOf(at.Add(time.Millisecond), "hold", "door", "0", "door.front"), false},
	} {
		if (tc.id == a) != tc.same {
			t.Errorf("%s vs %s: same %v, want %v", tc.id, a, tc.id == a, tc.same)
		}
	}
	if len(a) != 32 || a[:12] != fmt.Sprintf("%012x", at.UnixMilli()) {
		t.Errorf("%s: want 32 hex digits, the first 12 the time in ms (%012x)", a, at.UnixMilli())
	}
}
