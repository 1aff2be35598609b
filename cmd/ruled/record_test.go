package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/syncbuf"
)

// exampleFixture is examples/scooter as `make run` serves it: its rules
// (copied, so a test may change them) and its plugins built.
func exampleFixture(t *testing.T) (dir, rules, plugins string) {
	t.Helper()
	dir = t.TempDir()
	rules, plugins = filepath.Join(dir, "rules"), filepath.Join(dir, "plugins")
	os.MkdirAll(rules, 0o755)
	os.MkdirAll(plugins, 0o755)
	b, err := os.ReadFile(filepath.Join(plugintest.Root(), "examples/scooter/rules/scooter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(rules, "scooter.yaml"), b, 0o644)
	for name, src := range map[string]string{"scooter": "examples/scooter/plugin/scooter.wasm", "publish": "plugins/build/publish.wasm",
		"expr": "plugins/build/expr.wasm", "log": "plugins/build/log.wasm"} {
		b, err := os.ReadFile(plugintest.Module(t, src))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(plugins, name+".wasm"), b, 0o644)
	}
	return dir, rules, plugins
}

// A capture recorded from the running example daemon replays through
// `ruled test`: the same rules publish the same; a changed rule shows up
// as the difference, and the test fails.
func TestRecordAndReplay(t *testing.T) {
	dir, rules, plugins := exampleFixture(t)
	data := filepath.Join(dir, "data")
	p := startRuled(t, data, "--rules", rules, "--plugins", plugins, "--grant", "publish=publish", "--grant", "scooter=publish,kv")

	capture := filepath.Join(dir, "capture.ndjson")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var recErr syncbuf.Buffer
	recorded := make(chan int)
	go func() {
		recorded <- run(ctx, []string{"record", "--data", data, "--out", capture}, nil, &bytes.Buffer{}, &recErr)
	}()
	waitFor(t, "the recorder", func() bool { return strings.Contains(recErr.String(), "recording") })
	p.post(
		`{"topic":"scooter.telemetry","vehicle":"s-17","battery":12,"charging":false,"speed":10,"locked":false}`,
		`{"topic":"scooter.telemetry","vehicle":"s-4","battery":70,"charging":false,"speed":31,"locked":false}`,
		`{"topic":"scooter.telemetry","vehicle":"s-1","battery":90,"charging":false,"speed":12,"locked":false}`,
	)
	// Every event, the last posted included: its dispatch may come after
	// the rules' publishes, which run on workers.
	waitFor(t, "the posted and the rules' events in the capture", func() bool {
		b, _ := os.ReadFile(capture)
		return bytes.Contains(b, []byte(`"by":"low-battery/alert"`)) && bytes.Contains(b, []byte(`"by":"speeding/notify"`)) &&
			bytes.Contains(b, []byte(`"vehicle":"s-1"`))
	})
	stop()
	if code := <-recorded; code != 0 {
		t.Fatalf("record exited %d: %s", code, recErr.String())
	}
	if !strings.Contains(recErr.String(), "recorded 3 events from outside and 2 the rules published") {
		t.Errorf("record said %q", recErr.String())
	}

	scenarioFile := func(name, rulesDir string) string {
		f := filepath.Join(dir, name+".yaml")
		os.WriteFile(f, []byte(`name: yesterday's traffic on `+name+` rules
rules: `+rulesDir+`
plugins: {scooter: plugins/scooter.wasm, publish: plugins/publish.wasm, expr: plugins/expr.wasm, log: plugins/log.wasm}
grants: {scooter: [publish, kv], publish: [publish]}
steps:
  - replay: capture.ndjson
`), 0o644)
		return f
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"test", "-v", scenarioFile("the same", "rules")}, nil, &out, &errb); code != 0 {
		t.Fatalf("ruled test on the same rules exited %d:\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "3 events in over") || !strings.Contains(out.String(), "the rules published the same 2 events") {
		t.Errorf("ruled test -v says:\n%s", out.String())
	}

	// Today's rules alert below 10% instead of 20%: s-17's alert is gone.
	changed := filepath.Join(dir, "changed")
	os.MkdirAll(changed, 0o755)
	b, _ := os.ReadFile(filepath.Join(rules, "scooter.yaml"))
	b = bytes.Replace(b, []byte("when: battery < 20 && !charging"), []byte("when: battery < 10 && !charging"), 1)
	os.WriteFile(filepath.Join(changed, "scooter.yaml"), b, 0o644)
	out.Reset()
	errb.Reset()
	code := run(context.Background(), []string{"test", scenarioFile("changed", "changed")}, nil, &out, &errb)
	if code != 1 {
		t.Fatalf("ruled test on the changed rules exited %d; want 1:\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		"--- FAIL: yesterday's traffic on changed rules",
		"the rules published differently than when it was captured",
		`alerts.battery.s-17 {"battery":12,"vehicle":"s-17"}  (by low-battery/alert)`,
		"1 published the same",
		"timeline (virtual time since the start):",
		"FAIL\t" + filepath.Join(dir, "changed.yaml"),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("ruled test on the changed rules:\n%s", out.String())
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTestAndRecordMisuse(t *testing.T) {
	t.Setenv("RULED_DATA", "")
	empty := t.TempDir()
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"test"}, 2, "test needs scenario files or directories"},
		{[]string{"test", "-run", "(", empty}, 2, "-run: error parsing regexp"},
		{[]string{"test", filepath.Join(empty, "missing.yaml")}, 1, "missing.yaml: no such scenario file or directory"},
		{[]string{"test", empty}, 1, "no *.yaml scenario files"},
		{[]string{"record"}, 2, "--data is not given, $RULED_DATA is not set"},
		{[]string{"record", "--data", empty}, 1, "no ruled running with --data " + empty},
	} {
		code, _, stderr := runCLI(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("ruled %q: exit %d, %q; want %d, %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
}
