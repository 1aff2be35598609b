package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/host/config"
	"github.com/ruled-dev/ruled/host/daemon"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// unit reads dist/ruled.service into key → values (a key may repeat).
func unit(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(plugintest.Root(), "dist", "ruled.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("ruled.service: %q is not key=value", line)
		}
		out[k] = append(out[k], v)
	}
	return out
}

// The service files work: the unit's command line, with its config file,
// starts the daemon (directories moved into the test's by flags, which
// override the file); the hardening is there, and nothing in it breaks
// wazero's compiler.
func TestServiceFiles(t *testing.T) {
	u := unit(t)
	for k, want := range map[string]string{"NoNewPrivileges": "yes", "ProtectSystem": "strict", "User": "ruled",
		"StateDirectory": "ruled", "Restart": "on-failure", "CapabilityBoundingSet": ""} {
		if got := u[k]; len(got) != 1 || got[0] != want {
			t.Errorf("ruled.service: %s=%q; want %q", k, got, want)
		}
	}
	if v := u["MemoryDenyWriteExecute"]; len(v) > 0 {
		t.Errorf("ruled.service sets MemoryDenyWriteExecute=%s: wazero's compiler needs executable memory", v[0])
	}
	if out, err := exec.Command("systemd-analyze", "verify", filepath.Join(plugintest.Root(), "dist", "ruled.service")).CombinedOutput(); err == nil {
		t.Logf("systemd-analyze verify: ok %s", out)
	}

	var cfg daemon.Config
	conf := filepath.Join(plugintest.Root(), "dist", "ruled.yaml")
	if err := config.Load(conf, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.RulesDir != "/etc/ruled/rules" || cfg.DataDir != "/var/lib/ruled" || cfg.HTTPAddr != "127.0.0.1:8080" {
		t.Errorf("ruled.yaml read as %+v", cfg)
	}
	args := strings.Fields(u["ExecStart"][0])
	if args[0] != "/usr/local/bin/ruled" || args[1] != "run" {
		t.Fatalf("ExecStart %q", args)
	}
	args = append(args[2:], "--config", conf) // the repository's copy of /etc/ruled/ruled.yaml
	for i, a := range args {
		if a == "/etc/ruled/ruled.yaml" {
			args = append(args[:i-1], args[i+1:]...)
			break
		}
	}
	dir := t.TempDir()
	rules, plugins := fixture(t, "- id: r\n  on: a\n  steps: [{do: log.log}]\n")
	p := startRuled(t, filepath.Join(dir, "data"), append(args, "--rules", rules, "--plugins", plugins, "--http", "127.0.0.1:0")...)
	if !strings.Contains(p.out.String(), `"@message":"ruled running"`) {
		t.Errorf("--log-json from the unit did not log JSON:\n%s", p.out.String())
	}
	resp, err := p.client().Get("http://ruled/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/readyz: %v %v", resp, err)
	}
	resp.Body.Close()
}
