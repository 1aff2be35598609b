package seq

import (
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
