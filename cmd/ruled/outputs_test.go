package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKill9StepOutputs: a durable step whose config uses an earlier step's
// output (steps.ask.slot) and a variable, killed with SIGKILL while it
// waits, books the slot its run was given before the kill, though the
// depot would answer otherwise now: the output is in its pending record.
func TestKill9StepOutputs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		var mu sync.Mutex
		asked := map[string]int{}     // vehicle → slot requests
		booked := map[string]string{} // vehicle → the slot booked
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
			switch {
			case len(parts) == 2 && parts[0] == "slot":
				asked[parts[1]]++
				fmt.Fprintf(w, `{"slot":"%s-%d"}`, parts[1], asked[parts[1]])
			case len(parts) == 3 && parts[0] == "book":
				booked[parts[1]] = parts[2]
				fmt.Fprint(w, `{"id":7}`)
			default:
				http.NotFound(w, r)
			}
		}))
		defer srv.Close()
		u, _ := url.Parse(srv.URL)
		rules, plugins := fixture(t, `
- id: depot
  on: job.start
  mode: parallel
  max: 1000
  vars: {tag: "t-{{n}}"}
  steps:
    - name: ask
      do: http.request
      with: {url: "`+srv.URL+`/slot/{{n}}"}
    - name: book
      after: 2s
      durable: true
      do: http.request
      with: {url: "`+srv.URL+`/book/{{n}}/{{steps.ask.slot}}"}
    - do: log.log
      with: {message: "BOOKED {{n}} {{steps.ask.slot}} {{vars.tag}} {{steps.book.id}}"}
`, "http")
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins, "--grant", "http=http",
			"--http-allow-private", "http=" + u.Host}, storeArgs()...)
		a := startRuled(t, data, args...)
		a.post(events("k", 10)...)
		a.waitPending(10) // each asked, and waits to book
		a.kill()
		b := startRuled(t, data, args...)
		b.waitLog("BOOKED k", 10)
		b.waitNoPending()
		line := regexp.MustCompile(`BOOKED (k\d+) (\S+) (\S+) (\d+)`)
		logged := map[string]string{}
		for _, m := range line.FindAllStringSubmatch(a.out.String()+b.out.String(), -1) {
			logged[m[1]] = m[2] + " " + m[3] + " " + m[4]
		}
		mu.Lock()
		defer mu.Unlock()
		for i := 1; i <= 10; i++ {
			n := "k" + strconv.Itoa(i)
			if asked[n] != 1 {
				t.Errorf("%s asked %d times; want once (before the kill)", n, asked[n])
			}
			if booked[n] != n+"-1" {
				t.Errorf("%s booked slot %q; want %s-1, the one its run was given", n, booked[n], n)
			}
			if want := n + "-1 t-" + n + " 7"; logged[n] != want {
				t.Errorf("%s logged %q; want %q", n, logged[n], want)
			}
		}
	})
}

// TestKill9Wait: runs waiting for an event (wait-for), killed with SIGKILL
// while they wait, keep waiting after the restart: each takes its own
// job's done event, correlated by n, and says what it carried.
func TestKill9Wait(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		rules, plugins := fixture(t, `
- id: job
  on: job.start
  mode: parallel
  max: 1000
  steps:
    - name: done
      wait-for: {topic: job.done, match: n, timeout: 1h}
    - do: log.log
      with: {message: "FIRED {{n}} {{steps.done.event.code}}"}
`)
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins}, storeArgs()...)
		a := startRuled(t, data, args...)
		a.post(events("k", 10)...)
		a.waitPending(10) // each waits for its job.done
		a.kill()
		b := startRuled(t, data, args...)
		var done []string
		for i := 10; i >= 1; i-- { // in the other order, and another job's first
			done = append(done, fmt.Sprintf(`{"topic":"job.done","n":"x%d","code":%d}`, i, i), fmt.Sprintf(`{"topic":"job.done","n":"k%d","code":%d}`, i, 100+i))
		}
		b.post(done...)
		b.waitLog("FIRED k", 10)
		b.waitNoPending()
		line := regexp.MustCompile(`FIRED (k\d+) (\d+)`)
		got := map[string]string{}
		for _, m := range line.FindAllStringSubmatch(a.out.String()+b.out.String(), -1) {
			if got[m[1]] != "" {
				t.Errorf("%s went on twice", m[1])
			}
			got[m[1]] = m[2]
		}
		for i := 1; i <= 10; i++ {
			if n := "k" + strconv.Itoa(i); got[n] != strconv.Itoa(100+i) {
				t.Errorf("%s took code %q; want %d, its own job's", n, got[n], 100+i)
			}
		}
	})
}

// TestKill9AfterWait: killed while the step after a wait-for is on a
// worker, a run goes on after the restart from the event it took: that
// step is tried again with its idempotency key, the rest and its finally
// step run.
func TestKill9AfterWait(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		var mu sync.Mutex
		hits := map[string][]string{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits[r.URL.Path] = append(hits[r.URL.Path], r.Header.Get("Idempotency-Key"))
			mu.Unlock()
			if strings.HasPrefix(r.URL.Path, "/slow/") {
				time.Sleep(600 * time.Millisecond)
			}
		}))
		defer srv.Close()
		u, _ := url.Parse(srv.URL)
		rules, plugins := fixture(t, `
- id: job
  on: job.start
  key: n
  steps:
    - name: w
      wait-for: {topic: job.go, match: n, timeout: 1h}
    - name: act
      do: http.request
      with: {url: "`+srv.URL+`/slow/{{n}}/{{steps.w.event.code}}"}
    - do: log.log
      with: {message: "FIRED {{n}}"}
  finally:
    - do: http.request
      with: {url: "`+srv.URL+`/fin/{{n}}"}
`, "http")
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins, "--grant", "http=http",
			"--http-allow-private", "http=" + u.Host}, storeArgs()...)
		a := startRuled(t, data, args...)
		a.post(events("k", 1)...)
		a.waitPending(1)
		a.post(`{"topic":"job.go","n":"k1","code":7}`)
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			n := len(hits["/slow/k1/7"])
			mu.Unlock()
			if n == 1 || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		a.kill() // the slow step is on a worker
		b := startRuled(t, data, args...)
		b.waitLog("FIRED k1", 1)
		b.waitNoPending()
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		if ks := hits["/slow/k1/7"]; len(ks) != 2 || ks[0] == "" || ks[0] != ks[1] {
			t.Errorf("the step after the wait ran with keys %q; want twice with one key", ks)
		}
		if n := len(hits["/fin/k1"]); n != 1 {
			t.Errorf("its finally step ran %d times; want once", n)
		}
	})
}
