package ingest

import (
	"slices"
	"sync"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
)

// admissions hands journal entries from ingest to dispatch. On the
// in-process bus dispatch runs inside the publish; on Redis it runs when the
// subscription delivers the event back, so the entry waits here, by event
// id, oldest first (ids are the client's and may repeat).
type admissions struct {
	mu sync.Mutex
	m  map[string][]*admission
}

// admission is one journaled event on its way to its rules.
type admission struct {
	entry string   // the journal entry
	rules []string // the rules it was journaled for
	event *bus.Event
	// published is when its publish returned (zero before): on Redis, an
	// admission published before its subscription's resume and not taken
	// by then never will be (lostBefore).
	published time.Time
}

func (a *admissions) put(eventID string, x *admission) {
	a.mu.Lock()
	if a.m == nil {
		a.m = map[string][]*admission{}
	}
	a.m[eventID] = append(a.m[eventID], x)
	a.mu.Unlock()
}

// take removes and returns the oldest admission for eventID, or the one for
// entry when entry is not "" (nil when dispatch took it already).
func (a *admissions) take(eventID, entry string) *admission {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.m[eventID]
	i := 0
	if entry != "" {
		i = slices.IndexFunc(q, func(x *admission) bool { return x.entry == entry })
	}
	if i < 0 || i >= len(q) {
		return nil
	}
	x := q[i]
	if q = slices.Delete(q, i, i+1); len(q) == 0 {
		delete(a.m, eventID)
	} else {
		a.m[eventID] = q
	}
	return x
}

// markPublished notes when the publish of entry's event returned.
func (a *admissions) markPublished(eventID, entry string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, x := range a.m[eventID] {
		if x.entry == entry {
			x.published = at
		}
	}
}

// lostBefore removes and returns the admissions whose publish returned
// before t: told that everything published before t has been delivered or
// lost (bus.RedisConfig.Resumed), those still here were lost.
func (a *admissions) lostBefore(t time.Time) []*admission {
	a.mu.Lock()
	defer a.mu.Unlock()
	var lost []*admission
	for id, q := range a.m {
		keep := q[:0]
		for _, x := range q {
			if !x.published.IsZero() && x.published.Before(t) {
				lost = append(lost, x)
			} else {
				keep = append(keep, x)
			}
		}
		if len(keep) == 0 {
			delete(a.m, id)
		} else {
			a.m[id] = keep
		}
	}
	return lost
}
