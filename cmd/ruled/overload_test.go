package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// burstRules: a first step that keeps the one worker busy 10 ms, so a
// burst piles up in the pool's queue, then a durable step. The delay is
// long enough that the kill, sent when the burst's answer arrives, lands
// before the first step is due even on a slow runner (a CI machine took
// over a second to journal and answer the 300 events once, and the first
// runs' steps fired before the kill).
const burstRules = `
- id: burst
  on: job.start
  mode: parallel
  max: 100000
  steps:
    - name: busy
      do: soak.effect
      with: {ms: 10}
    - name: later
      after: 3s
      durable: true
      do: log.log
      with: {message: "DONE {{n}}"}
`

// TestAcceptedSurvivesOverloadKill: a burst far beyond what one worker
// keeps up with is acknowledged with 202, and the process is SIGKILLed
// the moment the answer arrives, most triggers still queued in memory. The
// next start re-admits them from the journal: every acknowledged event's
// step fires, none twice (the kill lands long before any step is due).
func TestAcceptedSurvivesOverloadKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	const n = 300
	stores(t, func(t *testing.T, storeArgs func() []string) {
		rules, plugins := fixture(t, burstRules)
		soak, err := os.ReadFile(plugintest.Go(t, "cmd/ruled/testdata/soak"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(plugins, "soak.wasm"), soak, 0o644)
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins, "--workers", "1"}, storeArgs()...)
		a := startRuled(t, data, args...)
		resp, err := a.client().Post("http://ruled/v1/events", "application/x-ndjson",
			strings.NewReader(strings.Join(events("o", n), "\n")))
		if err != nil {
			t.Fatal(err)
		}
		a.kill()
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST: %s %s", resp.Status, body.String())
		}
		// Steps the first process fired before the kill count too: the
		// second has only the rest to fire.
		firedBefore := strings.Count(a.out.String(), "DONE o")
		b := startRuled(t, data, args...)
		b.waitLogWithin("DONE o", n-firedBefore, time.Minute)
		got := map[string]int{}
		for _, out := range []string{a.out.String(), b.out.String()} {
			for _, line := range strings.Split(out, "\n") {
				if _, after, ok := strings.Cut(line, "DONE "); ok {
					got[strings.Trim(strings.Fields(after)[0], `":`)]++
				}
			}
		}
		missing, twice := 0, 0
		for i := 1; i <= n; i++ {
			switch c := got[fmt.Sprintf("o%d", i)]; {
			case c == 0:
				missing++
			case c > 1:
				twice++
			}
		}
		var st status.Status
		if err := apiGet(context.Background(), data, "/v1/status", &st); err != nil {
			t.Fatal(err)
		}
		readmitted := 0
		if st.Journal != nil {
			readmitted = st.Journal.Readmitted
		}
		t.Logf("%d acknowledged; killed at once (%d fired before the kill); %d re-admitted from the journal at the next start; fired: %d missing, %d twice",
			n, firedBefore, readmitted, missing, twice)
		if missing > 0 || twice > 0 {
			t.Errorf("%d acknowledged events never fired, %d fired twice", missing, twice)
		}
		if readmitted == 0 {
			t.Error("nothing was re-admitted: the kill came after every record, and the test showed nothing")
		}
		b.waitNoPending()
		if err := apiGet(context.Background(), data, "/v1/status", &st); err != nil {
			t.Fatal(err)
		}
		if st.Journal == nil || st.Journal.Open != 0 {
			t.Errorf("journal after everything fired: %+v; want nothing open", st.Journal)
		}
	})
}
