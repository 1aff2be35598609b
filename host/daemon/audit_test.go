package daemon

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// exampleRules are the scooter example's rules beside a file that does
// not load.
func exampleRules(t *testing.T) string {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(plugintest.Root(), "examples", "scooter", "rules", "scooter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "scooter.yaml"), src, 0o644)
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("- id: broken\n  on: scooter.telemetry\n  when: battery <\n  steps: [{do: log.log, with: {message: hi}}]\n"), 0o644)
	return dir
}

// telemetry is a scooter's reading.
func telemetry(vehicle string, battery int) string {
	return fmt.Sprintf(`{"topic":"scooter.telemetry","vehicle":%q,"battery":%d,"charging":false,"speed":10,"locked":false}`, vehicle, battery)
}

// TestNamedTokensAudit: with named tokens, a rule's command and a run's
// say which token sent them — in the rule's state history and the run's
// tree — and the unix socket's say the peer's uid.
func TestNamedTokensAudit(t *testing.T) {
	dir := t.TempDir()
	ops, ci := "ops-0123456789abcdef", "ci-0123456789abcdef0"
	td := startDaemon(t, Config{RulesDir: exampleRules(t), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"),
		HTTPAddr: "127.0.0.1:0", Watch: false, Tokens: map[string]string{"ops": ops, "ci": ci}})
	base := "http://" + td.Addr()
	do := func(c *http.Client, base, tok, path string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 && resp.StatusCode != 202 {
			t.Fatalf("%s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}
	do(http.DefaultClient, base, ops, "/v1/rules/speeding/pause")
	do(http.DefaultClient, base, ci, "/v1/rules/speeding/resume")
	do(socketClient(td.cfg.DataDir), "http://ruled", "", "/v1/rules/speeding/kill")
	var by []string
	for _, r := range td.Rules() {
		if r.ID == "speeding" {
			for _, h := range r.History {
				by = append(by, string(h.Event)+" "+h.By)
			}
		}
	}
	want := fmt.Sprintf("pause token ops, run token ci, kill uid %d", os.Getuid())
	if got := strings.Join(by, ", "); got != want {
		t.Errorf("history %q; want %q", got, want)
	}
	req, _ := http.NewRequest("POST", base+"/v1/events", strings.NewReader(telemetry("s-1", 3)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+ci)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var run string
	for deadline := time.Now().Add(10 * time.Second); run == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if p, _ := td.Pending(); len(p) == 1 {
			run = p[0].Run
		}
	}
	if run == "" {
		t.Fatal("no waiting step")
	}
	if out := do(http.DefaultClient, base, ops, "/v1/runs/"+run+"/cancel"); !strings.Contains(out, `"by": "token ops"`) {
		t.Errorf("cancel answered %s", out)
	}
}

// TestUnknownPluginConfigured: a grant for a plugin the directory does not
// have (a misspelt name) is said at start, not silently ignored.
func TestUnknownPluginConfigured(t *testing.T) {
	td := startDaemon(t, Config{RulesDir: exampleRules(t), PluginsDir: pluginsDir(t), DataDir: filepath.Join(t.TempDir(), "data"),
		Plugins: map[string]PluginConfig{"publsh": {Grant: []abi.Capability{abi.CapPublish}}, "publish": {Grant: []abi.Capability{abi.CapPublish}}}})
	logs := td.logs.String()
	if !strings.Contains(logs, "misspelt name?: plugin=publsh") || !strings.Contains(logs, "did-you-mean=publish") {
		t.Errorf("no warning for publsh:\n%s", logs)
	}
	if strings.Contains(logs, "plugin=publish dir") {
		t.Errorf("a warning for publish, which is there")
	}
}
