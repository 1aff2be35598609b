package main

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ruled-dev/ruled/host/audit"
)

// TestAudit: a daemon on its embedded store keeps an audit trail of the
// commands its API served and refused (who, from where), and of a module
// refused for its signature; ruled audit shows it, a token without the
// audit scope may not read it, and ruled audit verify finds the chain
// intact, a head it printed still in it and one never in it not — and,
// after an entry is edited in the store with the daemon stopped, names
// that entry.
func TestAudit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	rules, plugins := fixture(t, "- id: r\n  on: a\n  steps: [{do: log.log, with: {message: hi}}]\n", "publish")
	// publish.wasm unsigned, log.wasm signed: with plugins required, the
	// first is refused.
	keyFile := filepath.Join(t.TempDir(), "ops.key")
	code, out, _ := runCLI(t, "", "keygen", "--out", keyFile, "--id", "ops")
	if code != 0 {
		t.Fatal(out)
	}
	pub := strings.TrimSpace(out)
	if code, out, errs := runCLI(t, "", "sign", "--key", keyFile, filepath.Join(plugins, "log.wasm"), filepath.Join(rules, "rules.yaml")); code != 0 {
		t.Fatal(out, errs)
	}
	ops, dash := "ops-0123456789abcdef", "dash-0123456789abcdef"
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("ops "+ops+" all\ndash "+dash+"\n"), 0o600)
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"--rules", rules, "--plugins", plugins, "--http", "127.0.0.1:0", "--tokens-file", tokens,
		"--require-signatures", "plugins", "--trusted-key", pub}
	p := startRuled(t, data, args...)
	m := regexp.MustCompile(`http=(127\.0\.0\.1:\d+)`).FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("no TCP address in the log:\n%s", p.out.String())
	}
	do := func(token, method, path string) int {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+m[1]+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := do(ops, "POST", "/v1/rules/r/pause"); c != 200 {
		t.Fatalf("ops pause: %d\n%s", c, p.out.String())
	}
	if c := do(dash, "POST", "/v1/rules/r/resume"); c != 403 {
		t.Fatalf("dash resume: %d", c)
	}
	if c := do(dash, "GET", "/v1/audit"); c != 403 {
		t.Errorf("dash reads the audit trail: %d", c)
	}
	if c := do(ops, "GET", "/v1/audit"); c != 200 {
		t.Errorf("ops reads the audit trail: %d", c)
	}
	p.rule("resume", "r") // through the socket
	want := []string{
		"refused", "publish.wasm: unsigned",
		"token ops", "POST /v1/rules/r/pause → 200",
		"token dash", "POST /v1/rules/r/resume → 403 (needs the control scope)",
		"uid ", "unix socket", "POST /v1/rules/r/resume → 200",
		"127.0.0.1:",
	}
	var shown string
	for range 100 { // the trail appends behind the commands
		_, shown, _ = runCLI(t, "", "audit", "--data", data)
		if strings.Contains(shown, "unix socket") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, w := range want {
		if !strings.Contains(shown, w) {
			t.Errorf("ruled audit lacks %q:\n%s", w, shown)
		}
	}
	code, out, errs := runCLI(t, "", "audit", "verify", "--data", data)
	if code != 0 || !strings.Contains(out, "audit trail intact: entries 1 to 4 (4)") {
		t.Fatalf("verify: %d %s%s", code, out, errs)
	}
	head := regexp.MustCompile(`head ([0-9a-f]{64})`).FindStringSubmatch(out)[1]
	if code, out, errs := runCLI(t, "", "audit", "verify", "--data", data, "--head", head); code != 0 {
		t.Errorf("verify --head of the head just printed: %d %s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "", "audit", "verify", "--data", data, "--head", strings.Repeat("ab", 32)); code != 1 ||
		!strings.Contains(errs, "noted is not in the trail") {
		t.Errorf("verify --head of a head never in it: %d %s", code, errs)
	}

	// Stopped, an entry edited in the store's file: found, and named.
	p.term()
	db, err := bolt.Open(filepath.Join(data, "ruled.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], 2)
		b := tx.Bucket([]byte("ruled:audit"))
		var e audit.Entry
		if err := json.Unmarshal(b.Get(k[:]), &e); err != nil {
			return err
		}
		e.Who = "token dash" // the pause blamed on another
		enc, _ := json.Marshal(e)
		return b.Put(k[:], enc)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	startRuled(t, data, args...)
	code, out, errs = runCLI(t, "", "audit", "verify", "--data", data, "--head", head)
	if code != 1 || !strings.Contains(errs, "the chain breaks at entry 2: its content is not what was sealed (changed)") {
		t.Errorf("verify after an edit: %d %s%s", code, out, errs)
	}
}
