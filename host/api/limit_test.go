package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	l := &Limiter{Rate: 10, Burst: 3, Now: func() time.Time { return now }}
	steps := []struct {
		advance time.Duration
		client  string
		ok      bool
	}{
		{0, "a", true}, {0, "a", true}, {0, "a", true}, // the burst
		{0, "a", false},                                                         // empty
		{0, "b", true},                                                          // another client has its own bucket
		{50 * time.Millisecond, "a", false},                                     // half a token
		{50 * time.Millisecond, "a", true},                                      // a whole one
		{time.Hour, "a", true}, {0, "a", true}, {0, "a", true}, {0, "a", false}, // refilled to the burst, not beyond
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		if ok, wait := l.Allow(s.client); ok != s.ok || (!ok && wait <= 0) {
			t.Errorf("step %d: Allow(%s) = %v, %v; want %v", i, s.client, ok, wait, s.ok)
		}
	}
	if l.Refused() != 3 {
		t.Errorf("refused %d; want 3", l.Refused())
	}
}

// TestLimiterBoundsClients: a flood of new addresses shares one bucket
// past MaxClients instead of growing the map.
func TestLimiterBoundsClients(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	l := &Limiter{Rate: 1, Burst: 1, Now: func() time.Time { return now }}
	allowed := 0
	for i := range MaxClients + 100 {
		if ok, _ := l.Allow(fmt.Sprintf("10.0.%d.%d", i/256, i%256)); ok {
			allowed++
		}
	}
	if len(l.buckets) > MaxClients {
		t.Errorf("%d buckets", len(l.buckets))
	}
	// MaxClients-1 clients with a bucket each, then one token of the
	// shared bucket for all the rest.
	if allowed != MaxClients {
		t.Errorf("%d allowed; want %d", allowed, MaxClients)
	}
}

func TestLimiterHTTP(t *testing.T) {
	l := &Limiter{Rate: 1, Burst: 2}
	srv := httptest.NewServer(l.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	defer srv.Close()
	codes := []int{}
	for range 3 {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Errorf("codes %v", codes)
	}
}
