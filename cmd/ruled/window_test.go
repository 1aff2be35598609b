package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

const windowRules = `
windows:
  - {name: temp, on: sensor.temp, key: device, field: v, time: ts, last: 1h, max-keys: 3}
  - {name: recent, on: sensor.temp, field: v, last: 5 events}
  - {name: hourly, on: sensor.temp, every: 1h}
rules:
  - id: report
    on: report
    states:
      a: {window: temp, key: a}
      b: {window: temp, key: b}
      last5: {window: recent}
      hour: {window: hourly}
    steps:
      - do: log.log
        with: {message: "WIN a={{states.a.count}}/{{states.a.sum}} b={{states.b.count}} last5={{states.last5.sum}} hour={{states.hour.count}}"}
`

// TestWindowsSurviveKill9: events accepted (answered 202) from many
// clients at once, some in NDJSON bodies, are each counted once after a
// kill -9 right after the last answer (on bbolt; on Redis, whose bus
// delivers after the answer, 200 ms after); an event
// older than its window, and a fourth key past max-keys: 3, are not
// counted, and ruled status and /metrics say so.
func TestWindowsSurviveKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		rules, plugins := fixture(t, windowRules)
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins}, storeArgs()...)
		a := startRuled(t, data, args...)
		now := time.Now().Unix()
		var wg sync.WaitGroup
		for c := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 10 {
					dev := "a"
					if (c+i)%2 == 1 {
						dev = "b"
					}
					ev := fmt.Sprintf(`{"topic":"sensor.temp","device":%q,"v":1,"ts":%d}`, dev, now)
					if i%5 == 4 { // a body of three
						a.post(ev, ev, ev)
					} else {
						a.post(ev)
					}
				}
			}()
		}
		wg.Wait()
		// 8 clients × (8 single + 2 bodies of 3) = 112 events: 56 a, 56 b.
		a.post(fmt.Sprintf(`{"topic":"sensor.temp","device":"a","v":1,"ts":%d}`, now-2*3600))              // late: 2h old
		a.post(`{"topic":"sensor.temp","device":"c","v":1}`, `{"topic":"sensor.temp","device":"d","v":1}`) // d: past max-keys
		if strings.Contains(strings.Join(storeArgs(), " "), "redis") {
			// The Redis bus delivers an event after its 202, and its
			// count is written within 10 ms (docs/rules.md, Windows).
			time.Sleep(200 * time.Millisecond)
		}
		a.kill()
		b := startRuled(t, data, args...)
		b.post(`{"topic":"report"}`)
		b.waitLog("WIN ", 1)
		// temp: a's 56 (not the late one); recent: the last five (1 each);
		// hourly: every event on the topic but the late one (its hour closed).
		want := "WIN a=56/56 b=56 last5=5 hour=115"
		if !strings.Contains(b.out.String(), want) {
			t.Fatalf("after kill -9, want %q in:\n%s", want, grepLines(b.out.String(), "WIN ", 5))
		}
		code, out, _ := runCLI(t, "", "status", "--data", data)
		if code != 0 || !strings.Contains(out, "window temp: 3 keys of 3;") {
			t.Errorf("status: %q", out)
		}
		if code, out, errs := runCLI(t, "", "window", "show", "--data", data, "temp", "a"); code != 0 || !strings.Contains(out, `"count": 56`) {
			t.Errorf("window show temp a: %d %q %q", code, out, errs)
		}
		if code, out, errs := runCLI(t, "", "window", "ls", "--data", data, "temp"); code != 0 || out != "a\nb\nc\n3 keys\n" {
			t.Errorf("window ls temp: %d %q %q", code, out, errs)
		}
		if code, _, errs := runCLI(t, "", "window", "show", "--data", data, "tmp"); code != 1 || !strings.Contains(errs, `no window "tmp" is defined`) {
			t.Errorf("window show of an unknown window: %d %q", code, errs)
		}
		// The counts of refusals are since the start: the new process's.
		b.post(fmt.Sprintf(`{"topic":"sensor.temp","device":"a","v":1,"ts":%d}`, now-2*3600), `{"topic":"sensor.temp","device":"e","v":1}`)
		// On Redis the bus dispatches the events after their 202: the
		// windows count them a moment later, so the status is asked until
		// it says so (or 10 s have passed).
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			code, out, _ = runCLI(t, "", "status", "--data", data)
			if code == 0 && strings.Contains(out, "1 late, 0 from the future, 1 refused (full)") || time.Now().After(deadline) {
				break
			}
		}
		if code != 0 || !strings.Contains(out, "1 late, 0 from the future, 1 refused (full)") {
			t.Errorf("status after a late event and a fifth key: %q", out)
		}
		if m := b.metricLines("ruled_window_events_total"); !strings.Contains(m, `ruled_window_events_total{outcome="full",window="temp"} 1`) {
			t.Errorf("metrics: %q", m)
		}
	})
}
