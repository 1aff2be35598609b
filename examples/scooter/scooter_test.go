// Package scooter_test tests the example's rules and plugin with
// sdk/ruletest: on a virtual clock, so the five-minute delays and
// thirty-second repeats take no real time.
package scooter_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/sdk/ruletest"
)

func harness(t *testing.T) *ruletest.Harness {
	return ruletest.New(t, ruletest.Options{
		Rules: "rules",
		Plugins: map[string]string{"scooter": "plugin/scooter.wasm", "publish": "../../plugins/build/publish.wasm",
			"log": "../../plugins/build/log.wasm", "expr": "../../plugins/build/expr.wasm"},
		Grants: map[string][]abi.Capability{"scooter": {abi.CapPublish, abi.CapKV}, "publish": {abi.CapPublish}},
	})
}

const low = `{"topic":"scooter.telemetry","vehicle":"s-17","battery":12,"charging":false,"speed":10,"locked":false}`

// A low battery alerts at once and limits the speed five minutes later —
// also across a restart in the middle of the wait — and only once.
func TestLowBatteryLimitsSpeed(t *testing.T) {
	start := time.Now()
	h := harness(t)
	h.Publish(low)
	h.ExpectPublished("alerts.battery.s-17", 1)
	h.Advance(4 * time.Minute)
	h.ExpectPublished("scooter.cmd.limit", 0)
	h.Restart() // a power cut while the step waits
	h.Advance(time.Minute)
	limits := h.ExpectPublished("scooter.cmd.limit", 1)
	if len(limits) == 1 && !strings.Contains(limits[0].Raw, `"max_speed":15`) {
		t.Errorf("limit command %s", limits[0].Raw)
	}
	if len(limits) == 1 && limits[0].At.Sub(ruletest.DefaultStart) != 5*time.Minute {
		t.Errorf("limited at %v; want 5 minutes after the alert", limits[0].At.Sub(ruletest.DefaultStart))
	}
	h.Advance(time.Hour)
	h.ExpectPublished("scooter.cmd.limit", 1)
	runs := h.Runs("low-battery")
	if len(runs) != 1 || runs[0].Outcome != "ok" {
		t.Fatalf("runs %+v", runs)
	}
	want := strings.Join([]string{
		"run #1 low-battery                           ok",
		"  1 trigger scooter.telemetry                ok    " + low,
		"  2 condition expr.expr                      ok    saw {\"battery\":12,\"charging\":false}", // the host's: no module
		"  3 step alert publish.publish @1            ok    published alerts.battery.s-17 {\"topic\":\"alerts.battery.s-17\",\"battery\":12,\"vehicle\":\"s-17\"}; → {\"topic\":\"alerts.battery.s-17\"}",
		"  4 delay limit-speed                        ok    after 5m0s (durable)",
		"  5 replay limit-speed                       ok    resumed from its pending record after a restart",
		"  6 step limit-speed scooter.limit_speed @2  ok    published scooter.cmd.limit {\"topic\":\"scooter.cmd.limit\",\"vehicle\":\"s-17\",\"max_speed\":15,\"key\":\"#1/limit-speed/0\"}; → {\"result\":\"limited to 15 km/h\"}",
		"",
	}, "\n")
	if got := h.Tree(runs[0].ID); strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(want), " ") {
		t.Errorf("tree\n%s\nwant\n%s", got, want)
	}
	t.Logf("an hour and five minutes of rule time in %v of real time", time.Since(start).Round(time.Millisecond))
}

// Plugging the charger in while the limit waits cancels it.
func TestChargerCancelsTheLimit(t *testing.T) {
	h := harness(t)
	h.Publish(low)
	h.Advance(2 * time.Minute)
	h.Publish(`{"topic":"scooter.charger.connected","vehicle":"s-17"}`)
	h.Advance(time.Hour)
	h.ExpectPublished("scooter.cmd.limit", 0)
	if runs := h.Runs("low-battery"); len(runs) != 1 || runs[0].Outcome != "cancelled" {
		t.Errorf("runs %+v; want one cancelled", runs)
	}
}

// A locked scooter that moves sounds its alarm three times, 30s apart,
// unless it is unlocked; a paused rule sounds nothing.
func TestAlarmRepeatsAndPause(t *testing.T) {
	h := harness(t)
	moving := `{"topic":"scooter.telemetry","vehicle":"s-3","battery":80,"charging":false,"speed":6,"locked":true}`
	h.Publish(moving)
	h.Advance(2 * time.Minute)
	h.ExpectPublished("scooter.cmd.alarm", 3)
	h.Command("movement-while-locked", status.Command{Command: "pause"})
	if h.State("movement-while-locked") != "paused" {
		t.Fatal("not paused")
	}
	h.Publish(moving)
	h.Advance(2 * time.Minute)
	h.ExpectPublished("scooter.cmd.alarm", 3)
}
