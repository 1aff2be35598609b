package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/internal/redistest"
)

const outageRules = `
- id: later
  on: job.start
  mode: parallel
  max: 1000
  steps:
    - name: fire
      after: 2s
      durable: true
      do: log.log
      with: {message: "FIRED {{n}}"}
- id: idle
  on: never
  steps:
    - do: log.log
      with: {message: "never"}
`

// TestRedisOutageUnderLoad: redis-server stopped for 30 s (RULED_OUTAGE)
// under a steady load and started again. Meanwhile the daemon stays up,
// runs the steps that were already waiting (they need no store to run),
// refuses new events rather than acknowledge what it cannot keep, reports
// itself not ready, and says what it could not do; afterwards it
// reconnects by itself. Every acknowledged event's step fires; the paused
// rule stays paused; a restart afterwards runs nothing twice (the records
// of steps that ran during the outage went when the store came back).
func TestRedisOutageUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	outage := 30 * time.Second
	if s := os.Getenv("RULED_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		outage = d
	}
	srv := redistest.StartWith(t, redistest.Config{Persistent: true})
	rules, plugins := fixture(t, outageRules)
	data := t.TempDir()
	args := []string{"--rules", rules, "--plugins", plugins, "--redis", srv.URL()}
	p := startRuled(t, data, args...)
	if out := p.rule("pause", "idle"); !strings.Contains(out, "paused") {
		t.Fatalf("pause: %s", out)
	}
	c := p.client()
	get := func(path string) int {
		resp, err := c.Get("http://ruled" + path)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	var mu sync.Mutex
	accepted, refused := []string{}, 0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the load: an event every 50 ms
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			resp, err := c.Post("http://ruled/v1/events", "application/x-ndjson",
				strings.NewReader(fmt.Sprintf(`{"topic":"job.start","n":"o%d"}`, n)))
			ok := err == nil && resp.StatusCode == http.StatusAccepted
			if err == nil {
				resp.Body.Close()
			}
			mu.Lock()
			if ok {
				accepted = append(accepted, fmt.Sprintf("o%d", n))
			} else {
				refused++
			}
			mu.Unlock()
		}
	}()

	time.Sleep(1500 * time.Millisecond) // steps are waiting when the store goes
	srv.Stop()
	stoppedAt := time.Now()
	time.Sleep(outage / 2)
	if code := get("/healthz"); code != 200 {
		t.Errorf("/healthz during the outage: %d; want 200", code)
	}
	if code := get("/readyz"); code != 503 {
		t.Errorf("/readyz during the outage: %d; want 503", code)
	}
	time.Sleep(outage - time.Since(stoppedAt))
	srv.Restart()
	deadline := time.Now().Add(30 * time.Second)
	for get("/readyz") != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("not ready 30 s after Redis came back:\n%s", p.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	back := time.Since(stoppedAt) - outage
	time.Sleep(3 * time.Second) // load after the outage
	close(stop)
	<-done

	mu.Lock()
	acked := append([]string(nil), accepted...)
	mu.Unlock()
	deadline = time.Now().Add(30 * time.Second)
	for {
		got := fired(p.out.String())
		var missing []string
		for _, n := range acked {
			if got[n] == 0 {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged events never fired: %v\n%s", len(missing), len(acked), missing, p.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var st status.Status
	if err := apiGet(t.Context(), data, "/v1/status", &st); err != nil {
		t.Fatal(err)
	}
	if st.Undropped != 0 {
		t.Errorf("%d records of steps that ran are still in the store", st.Undropped)
	}
	out := p.out.String()
	for _, said := range []string{"cannot drop a pending record", "dropped the pending records a store outage had left"} {
		if !strings.Contains(out, said) {
			t.Errorf("the daemon did not say %q", said)
		}
	}
	p.term()

	// A restart runs nothing again, and the paused rule is still paused.
	q := startRuled(t, data, args...)
	time.Sleep(3 * time.Second)
	if again := fired(q.out.String()); len(again) != 0 {
		t.Errorf("after a restart %d steps ran again: %v\nthe restart's log:\n%s", len(again), again, q.out.String())
	}
	if out := q.rule("show", "idle"); !strings.Contains(out, "paused") {
		t.Errorf("idle after the outage and a restart:\n%s", out)
	}
	dups := 0
	for _, c := range fired(out) {
		if c > 1 {
			dups++
		}
	}
	t.Logf("Redis down %v under load: %d events acknowledged, %d refused while it was down, all fired, %d twice; ready again %v after it came back",
		outage, len(acked), refused, dups, back.Round(time.Millisecond))
}
