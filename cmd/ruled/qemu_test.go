package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const deviceRules = `- id: low-battery
  on: scooter.telemetry
  when: battery < 20 && !charging
  key: vehicle
  steps:
    - name: alert
      do: log.log
      with: {message: "ALERT {{vehicle}} at {{battery}}%"}
    - name: limit
      after: 3s
      durable: true
      do: log.log
      with: {message: "LIMIT {{vehicle}}"}
`

// TestCrossBuiltDaemons: ruled built for linux/arm64 and linux/armv7 (a
// 32-bit device, where wazero interprets) starts under Debian's qemu-user
// on the example's shape of rule (an expression and a durable step), takes
// events over HTTP, and fires the durable step across a restart — as the
// amd64 build does beside it. The log has each start to ready, cold and
// warm compilation cache, as a ratio to amd64's in the same run.
func TestCrossBuiltDaemons(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ruled for three platforms")
	}
	type target struct{ name, goarch, goarm, qemu string }
	targets := []target{{"amd64", "amd64", "", ""}, {"arm64", "arm64", "", "qemu-aarch64"}, {"armv7", "arm", "7", "qemu-arm"}}
	if _, err := exec.LookPath("qemu-aarch64"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("qemu-user is missing (.ci/tools.sh installs it)")
		}
		t.Logf("qemu-user missing: amd64 only")
		targets = targets[:1]
	}
	rules, plugins := fixture(t, deviceRules, "expr")
	bin := t.TempDir()
	var cold, warm []time.Duration
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			exe := filepath.Join(bin, "ruled-"+tg.name)
			build := exec.Command("go", "build", "-o", exe, ".")
			build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+tg.goarch, "GOARM="+tg.goarm, "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("build: %v\n%s", err, out)
			}
			argv := []string{exe}
			if tg.qemu != "" {
				argv = []string{tg.qemu, exe}
			}
			data := t.TempDir() // its own compilation cache: the first start compiles
			start := func() (*proc, time.Duration) {
				t0 := time.Now()
				p := spawnCmd(t, data, argv, nil, "--rules", rules, "--plugins", plugins)
				p.waitLogWithin("ruled running", 1, 3*time.Minute)
				return p, time.Since(t0)
			}
			p, c := start()
			p.post(`{"topic":"scooter.telemetry","vehicle":"s-1","battery":12,"charging":false}`,
				`{"topic":"scooter.telemetry","vehicle":"s-2","battery":50,"charging":false}`,
				`{"topic":"scooter.telemetry","vehicle":"s-3","battery":9,"charging":true}`)
			p.waitLog("ALERT s-1 at 12%", 1)
			p.waitPending(1)
			p.term()
			if out := p.out.String(); strings.Contains(out, "ALERT s-2") || strings.Contains(out, "ALERT s-3") || strings.Contains(out, "LIMIT s-1") {
				t.Fatalf("the condition or the delay was not kept:\n%s", out)
			}
			p, w := start()
			p.waitLogWithin("LIMIT s-1", 1, time.Minute)
			p.waitNoPending()
			p.term()
			cold, warm = append(cold, c), append(warm, w)
			ratio := ""
			if len(cold) > 1 {
				ratio = " (" + fmtRatio(c, cold[0]) + " / " + fmtRatio(w, warm[0]) + " amd64's)"
			}
			t.Logf("device: %s ready in %v cold, %v warm%s", tg.name, c.Round(time.Millisecond), w.Round(time.Millisecond), ratio)
		})
	}
}

func fmtRatio(a, b time.Duration) string { return fmt.Sprintf("%.1f×", float64(a)/float64(b)) }
