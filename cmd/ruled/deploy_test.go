package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/redistest"
)

const deployRules = `
- id: job
  on: job
  key: k
  mode: parallel
  steps:
    - name: effect
      do: soak.effect
`

// TestDeploy: fleet members started with no rules directory serve what
// `ruled deploy` put in Redis — at once when a deploy is announced, and at
// start for a member that comes later; a deploy whose rules do not check
// out is refused with the problem's file and line, and changes nothing.
func TestDeploy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	srv := redistest.Start(t)
	dir := t.TempDir()
	rulesDir, pluginsDir := filepath.Join(dir, "rules"), filepath.Join(dir, "plugins")
	os.MkdirAll(rulesDir, 0o755)
	os.MkdirAll(pluginsDir, 0o755)
	soak, err := os.ReadFile(plugintest.Go(t, "cmd/ruled/testdata/soak"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pluginsDir, "soak.wasm"), soak, 0o644)
	// Only announcements move the members: a refresh would hide a lost one.
	args := []string{"--redis", srv.URL(), "--shards", "2", "--workers", "1", "--rules-refresh", "1h"}
	a := startRuled(t, t.TempDir(), args...)
	b := startRuled(t, t.TempDir(), args...)
	a.waitLog("nothing deployed yet", 1)

	deploy := func(wantOK bool) string {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"deploy", "--redis", srv.URL(), "--data", deployData(t), dir}, nil, &out, &errOut)
		if (code == 0) != wantOK {
			t.Fatalf("deploy exited %d:\n%s%s", code, out.String(), errOut.String())
		}
		return out.String() + errOut.String()
	}
	// A rule naming a function the plugin lacks: refused where it is written.
	os.WriteFile(filepath.Join(rulesDir, "jobs.yaml"), []byte(strings.Replace(deployRules, "soak.effect", "soak.nope", 1)), 0o644)
	if out := deploy(false); !strings.Contains(out, filepath.Join(rulesDir, "jobs.yaml")+":8:") || !strings.Contains(out, "nothing deployed") {
		t.Errorf("a refused deploy says:\n%s", out)
	}
	os.WriteFile(filepath.Join(rulesDir, "jobs.yaml"), []byte(deployRules), 0o644)
	if out := deploy(true); !strings.Contains(out, "deployed version 1: 1 rule file (1 rule), 1 plugin; 2 files new in Redis") {
		t.Errorf("deploy says:\n%s", out)
	}
	waitRules(t, []*proc{a, b}, "job")
	var evs []string
	for i := range 40 {
		evs = append(evs, fmt.Sprintf(`{"topic":"job","k":"v%d","n":"%d"}`, i%5, i))
	}
	a.post(evs[:20]...)
	b.post(evs[20:]...)
	waitFired(t, 40, a, b)

	// A second deploy adds a rule file: announced, loaded at once.
	os.WriteFile(filepath.Join(rulesDir, "more.yaml"), []byte(strings.NewReplacer("id: job", "id: job2", "on: job", "on: job2").Replace(deployRules)), 0o644)
	if out := deploy(true); !strings.Contains(out, "deployed version 2: 2 rule files (2 rules), 1 plugin; 1 file new in Redis") {
		t.Errorf("second deploy says:\n%s", out)
	}
	waitRules(t, []*proc{a, b}, "job", "job2")
	// A member started now loads the deployment at start.
	c := startRuled(t, t.TempDir(), args...)
	waitRules(t, []*proc{c}, "job", "job2")
	var st status.Status
	if err := apiGet(context.Background(), c.data, "/v1/status", &st); err != nil || st.Deployment == nil || st.Deployment.Version != 2 {
		t.Errorf("status's deployment: %+v, %v", st.Deployment, err)
	}
	c.post(`{"topic":"job2","k":"x","n":"100"}`)
	waitFired(t, 41, a, b, c)

	// A deploy removing a rule file: the members drop its rule; --json
	// says the deployment as a tool reads it.
	os.Remove(filepath.Join(rulesDir, "more.yaml"))
	var out bytes.Buffer
	if code := run(context.Background(), []string{"deploy", "--json", "--redis", srv.URL(), "--data", deployData(t), dir}, nil, &out, &out); code != 0 {
		t.Fatalf("deploy --json exited %d: %s", code, out.String())
	}
	var dep struct {
		Version int64             `json:"version"`
		Files   map[string]string `json:"files"`
		Rules   int               `json:"rules"`
	}
	if err := json.Unmarshal(out.Bytes(), &dep); err != nil || dep.Version != 3 || dep.Rules != 1 || len(dep.Files) != 2 {
		t.Errorf("deploy --json: %+v, %v:\n%s", dep, err, out.String())
	}
	waitRules(t, []*proc{a, b, c}, "job")
}

// waitRules waits until every process serves exactly the rules ids.
func waitRules(t *testing.T, procs []*proc, ids ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range procs {
		for {
			var st status.Status
			var got []string
			if err := apiGet(context.Background(), p.data, "/v1/status", &st); err == nil {
				for _, r := range st.Rules {
					got = append(got, r.ID)
				}
			}
			if slices.Equal(got, ids) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a process serves rules %v; want %v:\n%s", got, ids, p.out.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// waitFired waits until the processes' output, between them, has fired
// n distinct events, each once.
func waitFired(t *testing.T, n int, procs ...*proc) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var outs []string
		for _, p := range procs {
			outs = append(outs, p.out.String())
		}
		got := fired(outs...)
		if len(got) >= n {
			for ev, c := range got {
				if c != 1 {
					t.Errorf("event %s fired %d times", ev, c)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fired %d of %d events", len(got), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDeployPinnedAcrossMembers: a durable step scheduled on one member
// with a plugin's first deployed version, replayed on a member that only
// ever loaded its second, runs the first: the member finds it in Redis by
// digest. (Live reload of a deployment is TestDeploy's.)
func TestDeployPinnedAcrossMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	srv := redistest.Start(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	os.MkdirAll(filepath.Join(dir, "plugins"), 0o755)
	soak, err := os.ReadFile(plugintest.Go(t, "cmd/ruled/testdata/soak"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "plugins", "soak.wasm"), soak, 0o644)
	os.WriteFile(filepath.Join(dir, "rules", "jobs.yaml"), []byte(strings.Replace(deployRules,
		"      do: soak.effect", "      after: 12s\n      durable: true\n      do: soak.effect", 1)), 0o644)
	deploy := func() {
		t.Helper()
		var out bytes.Buffer
		if code := run(context.Background(), []string{"deploy", "--redis", srv.URL(), "--data", deployData(t), dir}, nil, &out, &out); code != 0 {
			t.Fatalf("deploy: %s", out.String())
		}
	}
	deploy()
	args := []string{"--redis", srv.URL(), "--shards", "2", "--workers", "1", "--rules-refresh", "1h"}
	a := startRuled(t, t.TempDir(), args...)
	var evs []string
	for i := range 10 {
		evs = append(evs, fmt.Sprintf(`{"topic":"job","k":"v%d","n":"%d"}`, i, i))
	}
	a.post(evs...)
	deadline := time.Now().Add(30 * time.Second)
	for len(a.pending()) < 10 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// Killed as soon as its steps are recorded, long before they come due
	// (nothing slow — a deploy, a compilation — happens in between).
	a.kill()
	if n := len(fired(a.out.String())); n != 0 {
		t.Fatalf("the first member fired %d steps before it was killed: the delay was too short for this machine", n)
	}
	// The same plugin with a custom section more (another digest, the same
	// code) deployed; the second member, started after it, only ever
	// loads that, and takes the shards over once the leases lapse.
	os.WriteFile(filepath.Join(dir, "plugins", "soak.wasm"), append(slices.Clip(soak), 0, 6, 4, 'n', 'o', 't', 'e', 1), 0o644)
	deploy()
	b := startRuled(t, t.TempDir(), args...)
	waitFired(t, 10, a, b)
	if !strings.Contains(b.out.String(), "running a waiting step on the module it was scheduled with") {
		t.Errorf("the second member did not run the first version:\n%s", b.out.String())
	}
}

// deployData is a data directory for `ruled deploy` whose compilation
// cache is the tests' shared one: its check compiles the plugins, which in
// a test binary built with -race takes seconds from a cold cache.
func deployData(t *testing.T) string {
	data := t.TempDir()
	os.MkdirAll(filepath.Join(data, "cache"), 0o755)
	os.MkdirAll(plugintest.CacheDir(), 0o755)
	os.Symlink(plugintest.CacheDir(), filepath.Join(data, "cache", "wazero"))
	return data
}
