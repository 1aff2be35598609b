package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKill9MidRetry: SIGKILL while failed steps wait for their retry. The
// wait is a durable record (the step has no after and is not durable):
// the next start tries each step again at its due time, once, with the
// same idempotency key, and the runs go on to their next step. The error
// budget hears of no error: every step succeeded on its second attempt.
func TestKill9MidRetry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		var mu sync.Mutex
		seen := map[string][]string{} // path → the idempotency keys of its requests
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[r.URL.Path] = append(seen[r.URL.Path], r.Header.Get("Idempotency-Key"))
			first := len(seen[r.URL.Path]) == 1
			mu.Unlock()
			if first {
				http.Error(w, "busy", http.StatusServiceUnavailable)
			}
		}))
		defer srv.Close()
		u, _ := url.Parse(srv.URL)
		requests := func() (n int) {
			mu.Lock()
			defer mu.Unlock()
			for _, ks := range seen {
				n += len(ks)
			}
			return n
		}
		rules, plugins := fixture(t, `
- id: call
  on: job.start
  mode: parallel
  max: 1000
  retry: {attempts: 3, backoff: 2s, jitter: 0}
  steps:
    - name: call
      do: http.request
      with: {url: "`+srv.URL+`/{{n}}"}
    - do: log.log
      with: {message: "FIRED {{n}}"}
`, "http")
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins, "--grant", "http=http",
			"--http-allow-private", "http=" + u.Host}, storeArgs()...)
		a := startRuled(t, data, args...)
		postedAt := time.Now()
		a.post(events("k", 10)...)
		a.waitPending(10) // each step failed once and waits for its retry
		a.kill()
		killedAt := time.Now()
		if n := requests(); n != 10 && killedAt.Sub(postedAt) < 2*time.Second {
			t.Fatalf("%d requests before the kill; want one a run", n)
		}
		b := startRuled(t, data, args...)
		b.waitLog("FIRED k", 10)
		b.waitNoPending()
		time.Sleep(300 * time.Millisecond) // a retry run twice would show by now
		got := fired(a.out.String(), b.out.String())
		mu.Lock()
		defer mu.Unlock()
		for i := 1; i <= 10; i++ {
			n := "k" + strconv.Itoa(i)
			if got[n] != 1 {
				t.Errorf("%s went on %d times; want once", n, got[n])
			}
			ks := seen["/"+n]
			if len(ks) != 2 || ks[0] == "" || ks[0] != ks[1] {
				t.Errorf("%s: requests with keys %q; want two with one key", n, ks)
			}
		}
		st := b.rules()["call"]
		if st.Stats.Errors != 0 || st.State != "runnable" {
			t.Errorf("rule call: state %s, %d errors; want runnable and none (no step failed for good)", st.State, st.Stats.Errors)
		}
		if !strings.Contains(a.out.String(), "step failed; it is tried again") {
			t.Errorf("the first process did not say it would retry:\n%s", a.out.String())
		}
	})
}
