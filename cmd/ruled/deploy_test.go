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

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/reload"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/store"
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
	dir, rulesDir, _ := deploySource(t)
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

// deploySource is a directory to deploy: DIR/rules (empty) and
// DIR/plugins with the soak plugin.
func deploySource(t *testing.T) (dir, rulesDir, pluginsDir string) {
	t.Helper()
	dir = t.TempDir()
	rulesDir, pluginsDir = filepath.Join(dir, "rules"), filepath.Join(dir, "plugins")
	os.MkdirAll(rulesDir, 0o755)
	os.MkdirAll(pluginsDir, 0o755)
	soak, err := os.ReadFile(plugintest.Go(t, "cmd/ruled/testdata/soak"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pluginsDir, "soak.wasm"), soak, 0o644)
	return dir, rulesDir, pluginsDir
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

// TestDeploySigned: two members requiring signatures for deploy serve a
// signed deployment; a deploy with --trust refuses an unsigned file before
// Redis sees it; an unsigned deploy, and a deployment an attacker with the
// Redis password rewrote (a new blob under its true digest, the manifest
// pointing at it), are refused by both members, whole, each file named in
// their status, while the last signed deployment keeps serving — not one
// event reaches the attacker's rule; a signed deploy after them serves.
func TestDeploySigned(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	srv := redistest.Start(t)
	dir, rulesDir, pluginsDir := deploySource(t)
	rulesFile := filepath.Join(rulesDir, "jobs.yaml")
	os.WriteFile(rulesFile, []byte(deployRules), 0o644)

	keyFile := filepath.Join(t.TempDir(), "ops.key")
	code, out, errs := runCLI(t, "", "keygen", "--out", keyFile, "--id", "ops")
	if code != 0 {
		t.Fatalf("keygen: %d %s%s", code, out, errs)
	}
	pub := strings.TrimSpace(out)
	if !strings.HasPrefix(pub, "ed25519:ops:") {
		t.Fatalf("keygen printed %q", out)
	}
	signAll := func() {
		t.Helper()
		if code, out, errs := runCLI(t, "", "sign", "--key", keyFile, rulesFile, filepath.Join(pluginsDir, "soak.wasm")); code != 0 {
			t.Fatalf("sign: %d %s%s", code, out, errs)
		}
	}
	deploy := func(extra ...string) (int, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"deploy", "--redis", srv.URL(), "--data", deployData(t), dir}, extra...), nil, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	signAll()
	if code, out := deploy("--trust", pub, "--key", keyFile); code != 0 {
		t.Fatalf("a signed deploy: %d %s", code, out)
	}
	args := []string{"--redis", srv.URL(), "--shards", "2", "--workers", "1", "--rules-refresh", "1h",
		"--require-signatures", "deploy", "--trusted-key", pub}
	a := startRuled(t, t.TempDir(), args...)
	b := startRuled(t, t.TempDir(), args...)
	members := []*proc{a, b}
	waitRules(t, members, "job")
	a.post(`{"topic":"job","k":"a","n":"1"}`)
	waitFired(t, 1, a, b)

	// refusedBy waits until every member's status names file refused for
	// reason, and the deployment it serves is still version v.
	refusedBy := func(file, reason string, v int64) {
		t.Helper()
		for _, p := range members {
			deadline := time.Now().Add(30 * time.Second)
			for {
				var st status.Status
				found := false
				if err := apiGet(context.Background(), p.data, "/v1/status", &st); err == nil && st.Signatures != nil {
					for _, f := range st.Signatures.Refused {
						found = found || f.File == file && f.Reason == reason && f.Place == "deploy"
					}
				}
				if found {
					if st.Deployment == nil || st.Deployment.Version != v {
						t.Errorf("a member serves deployment %+v; want version %d", st.Deployment, v)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a member does not refuse %s (%s): %+v\n%s", file, reason, st.Signatures, p.out.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}

	// An edit not signed again: --trust refuses it here, nothing deployed.
	os.WriteFile(rulesFile, []byte(strings.Replace(deployRules, "id: job", "id: edited", 1)), 0o644)
	if code, out := deploy("--trust", pub); code == 0 || !strings.Contains(out, "rules/jobs.yaml: tampered") || !strings.Contains(out, "nothing deployed") {
		t.Errorf("deploy --trust of a tampered file: %d %s", code, out)
	}
	// Without --trust it reaches Redis; the members refuse it.
	if code, out := deploy(); code != 0 {
		t.Fatalf("deploy: %d %s", code, out)
	}
	refusedBy("rules/jobs.yaml", "tampered", 1)
	waitRules(t, members, "job")

	// The attacker's deployment: a rule of their own where jobs.yaml was,
	// the signature left as it was.
	ctx := context.Background()
	r, err := store.OpenRedis(srv.URL(), store.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cur, err := r.Deploy().Current(ctx)
	if err != nil || cur == nil {
		t.Fatal(cur, err)
	}
	evil := []byte(strings.NewReplacer("id: job", "id: evil").Replace(deployRules))
	dg := store.Digest(evil)
	c := r.Client()
	if err := c.Set(ctx, keyspace.BlobPrefix+dg, evil, 0).Err(); err != nil {
		t.Fatal(err)
	}
	cur.Version, cur.By, cur.Files["rules/jobs.yaml"] = cur.Version+1, "attacker", dg
	enc, _ := json.Marshal(cur)
	if err := c.Set(ctx, keyspace.Deploy, enc, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := bus.NewRedis(c, bus.RedisConfig{}).PublishControl(ctx, reload.TriggersChangedTopic, reload.TriggersChanged("attacker")); err != nil {
		t.Fatal(err)
	}
	refusedBy("rules/jobs.yaml", "tampered", 1)
	for i := range 10 {
		members[i%2].post(fmt.Sprintf(`{"topic":"job","k":"b%d","n":"%d"}`, i, 10+i))
	}
	waitFired(t, 11, a, b)
	waitRules(t, members, "job")
	for _, p := range members {
		if strings.Contains(p.out.String(), "rule=evil") {
			t.Errorf("a member ran the attacker's rule:\n%s", p.out.String())
		}
	}

	// Signed again and deployed: served, the refusals gone.
	signAll()
	if code, out := deploy("--trust", pub, "--key", keyFile); code != 0 {
		t.Fatalf("signed deploy: %d %s", code, out)
	}
	waitRules(t, members, "edited")
	var st status.Status
	if err := apiGet(ctx, a.data, "/v1/status", &st); err != nil || st.Signatures == nil || len(st.Signatures.Refused) != 0 {
		t.Errorf("after a signed deploy: %+v, %v", st.Signatures, err)
	}

	// The fleet's audit trail, in Redis: the deploys, and each member's
	// refusals (once each: the same refusal read again is not news).
	code, out, errs = runCLI(t, "", "audit", "--redis", srv.URL(), "--limit", "100")
	if code != 0 {
		t.Fatalf("audit: %d %s%s", code, out, errs)
	}
	if n := strings.Count(out, " deploy "); n != 3 {
		t.Errorf("%d deploys in the trail; want 3:\n%s", n, out)
	}
	if n := strings.Count(out, "deploy-refused  rules/jobs.yaml: tampered"); n != 2 {
		t.Errorf("%d members' refusals in the trail; want 2 (one a member: the attacker's is the same refusal):\n%s", n, out)
	}
	// A command on the control channel (whoever writes Redis may send
	// one) is in the trail too.
	if err := bus.NewRedis(c, bus.RedisConfig{}).PublishControl(ctx, "ruled.cmd.edited", []byte(`{"command":"pause"}`)); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if _, out, _ = runCLI(t, "", "audit", "--redis", srv.URL(), "--limit", "100"); strings.Contains(out, "ruled.cmd.edited pause → done") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out, "ruled.cmd.edited pause → done") {
		t.Errorf("the control channel's command is not in the trail:\n%s", out)
	}
	code, out, errs = runCLI(t, "", "audit", "verify", "--redis", srv.URL())
	if code != 0 || !strings.Contains(out, "audit trail intact") {
		t.Fatalf("audit verify: %d %s%s", code, out, errs)
	}
	// The first deploy's entry blamed on someone else, in Redis: found.
	raw, err := c.LIndex(ctx, keyspace.Audit, 0).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LSet(ctx, keyspace.Audit, 0, strings.Replace(raw, `"who":"`, `"who":"someone-else `, 1)).Err(); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "", "audit", "verify", "--redis", srv.URL())
	if code != 1 || !strings.Contains(errs, "the chain breaks at entry 1") {
		t.Errorf("audit verify after an edit: %d %s%s", code, out, errs)
	}
	// The head removed too, as if to say "empty": not taken for empty.
	c.Del(ctx, keyspace.AuditHead)
	code, out, errs = runCLI(t, "", "audit", "verify", "--redis", srv.URL())
	if code != 1 || !strings.Contains(errs, "its head is gone") {
		t.Errorf("audit verify without its head: %d %s%s", code, out, errs)
	}
}
