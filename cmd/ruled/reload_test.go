package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/internal/plugintest"
)

const matrixRules = `
- id: m
  on: job.start
  mode: parallel
  on-plugin-change: POLICY
  steps:
    - name: first
      do: log.log
      with: {message: "FIRST {{n}}"}
    - name: due
      after: 1s
      durable: true
      do: versioned.version
`

// TestWaitingStepMatrix runs the rule for waiting steps (ARCHITECTURE.md, "Fingerprints") through the
// real binary, with the change made while the step waits (the watcher
// reloads) and while the daemon is down (killed with SIGKILL, then
// restarted): the outcome is the same both ways, and each drop has its
// reason line.
func TestWaitingStepMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	v1, err := os.ReadFile(filepath.Join(plugintest.Root(), "host/wasm/testdata/reload/v1.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := os.ReadFile(filepath.Join(plugintest.Root(), "host/wasm/testdata/reload/v2.wasm"))
	pin := strings.Replace(matrixRules, "POLICY", "pin", 1)
	tests := []struct {
		name, rules string
		plugin      []byte // the plugin after the change (nil: unchanged)
		newRules    string // the rules after the change ("": unchanged)
		want        string // "ran v1", "ran v2", or the drop reason
	}{
		{"(a) module changed: runs the pinned module", pin, v2, "", "ran v1"},
		{"(b) module changed, upgrade", strings.Replace(matrixRules, "POLICY", "upgrade", 1), v2, "", "ran v2"},
		{"(c) module changed, drop", strings.Replace(matrixRules, "POLICY", "drop", 1), v2, "", "reason=\"plugin changed and the rule says drop\""},
		{"(d) step config changed", pin, nil, strings.Replace(pin, "after: 1s", "after: 2s", 1), "reason=\"step changed\""},
		{"(e) step renamed", pin, nil, strings.Replace(pin, "name: due", "name: later", 1), "reason=\"step gone\""},
		{"(f) rule removed", pin, nil, strings.Replace(pin, "id: m", "id: renamed", 1), "reason=\"rule gone\""},
		{"(g) nothing changed", pin, nil, "", "ran v1"},
	}
	for _, tc := range tests {
		for _, down := range []bool{false, true} {
			name := tc.name + map[bool]string{false: " / live", true: " / across SIGKILL"}[down]
			t.Run(name, func(t *testing.T) {
				rules, plugins := fixture(t, tc.rules)
				pluginFile := filepath.Join(plugins, "versioned.wasm")
				os.WriteFile(pluginFile, v1, 0o644)
				data := t.TempDir()
				args := []string{"--rules", rules, "--plugins", plugins, "--reload-debounce", "20ms"}
				a := startRuled(t, data, args...)
				a.post(`{"topic":"job.start","n":"x"}`)
				a.waitLog("FIRST x", 1)
				a.waitPending(1)
				change := func() {
					if tc.plugin != nil {
						tmp := pluginFile + ".tmp"
						os.WriteFile(tmp, tc.plugin, 0o644)
						os.Rename(tmp, pluginFile)
					}
					if tc.newRules != "" {
						os.WriteFile(filepath.Join(rules, "rules.yaml"), []byte(tc.newRules), 0o644)
					}
				}
				p := a
				if down {
					a.kill()
					change()
					p = startRuled(t, data, args...)
				} else {
					change()
					switch {
					case tc.plugin != nil:
						a.waitLog("plugin reloaded", 1)
					case tc.newRules != "":
						a.waitLog("rules reloaded", 1)
					}
				}
				if tc.plugin != nil && !down && strings.Contains(tc.name, "pinned") {
					// While the step waits, the old digest is kept for it.
					code, out, errs := runCLI(t, "", "plugin", "ls", "--data", data)
					if code != 0 || !strings.Contains(out, "pinned ") || !strings.Contains(out, "1 waiting runs, 1 pending records") {
						t.Errorf("plugin ls: %d\n%s%s", code, out, errs)
					}
				}
				if strings.HasPrefix(tc.want, "ran ") {
					p.waitLog(tc.want, 1)
				} else {
					p.waitLog("dropping a waiting step", 1)
					if !strings.Contains(p.out.String(), tc.want) {
						t.Fatalf("want a drop with %s:\n%s", tc.want, p.out.String())
					}
				}
				out := a.out.String()
				if down {
					out += p.out.String()
				}
				if strings.Count(out, "ran v") > 1 || (!strings.HasPrefix(tc.want, "ran ") && strings.Contains(out, "ran v")) {
					t.Errorf("the waiting step ran %d times; want %s", strings.Count(out, "ran v"), tc.want)
				}
				p.waitNoPending()
			})
		}
	}
}
