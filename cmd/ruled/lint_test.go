package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/internal/plugintest"
)

// pluginDir copies the first-party plugins into a directory under the
// names rules use, plus extra files.
func pluginDir(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"expr", "publish", "log"} {
		b, err := os.ReadFile(plugintest.FirstParty(t, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".wasm"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, dir, extra)
	return dir
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const goodRules = `- id: low-battery
  on: scooter.telemetry
  when: battery < 20 && !charging
  key: vehicle
  steps:
    - name: warn
      do: publish.publish
      with: {topic: "alerts.battery.{{vehicle}}", payload: {level: "{{battery}}"}}
    - after: 30m
      durable: true
      when: {do: expr.expr, with: {expr: battery < 10}}
      do: log.log
      with: {message: "still low: {{vehicle}}", level: warn}
`

const badRules = `- id: low-battery
  on: scooter.telemetry
  when: battery <
  steps:
    - do: publish.publish
      with: {payload: {}}
    - do: log.log
      with: {message: hi, level: loud}
    - do: pubish.publish
- id: fine
  on: scooter.telemetry
  steps:
    - do: log.log
      with: {message: fine}
      delay: 5m
`

func TestLint(t *testing.T) {
	good := t.TempDir()
	writeFiles(t, good, map[string]string{"scooter.yaml": goodRules})
	bad := t.TempDir()
	writeFiles(t, bad, map[string]string{"scooter.yaml": badRules, "z-other.yml": goodRules})
	plugins := pluginDir(t, nil)
	broken := pluginDir(t, map[string]string{"broken.wasm": "not wasm", "notes.txt": "ignored"})
	data := filepath.Join(filepath.Dir(plugintest.CacheDir()), "cli-data")
	rel := func(dir, name string) string { return filepath.Join(dir, name) }
	// The daemon's config: its directories, a grant to a misspelt plugin,
	// none to publish (which imports ruled.publish).
	cfg := rel(t.TempDir(), "ruled.yaml")
	writeFiles(t, filepath.Dir(cfg), map[string]string{"ruled.yaml": "rules: " + good + "\nplugins: " + plugins + "\nplugin:\n  pubish: {grant: [kv]}\n"})
	const notGranted = `imports ruled.publish, which needs the "publish" capability: not granted to the plugin: add --grant publish=publish, or in the config: plugin: {publish: {grant: [publish]}}`
	misspelt := cfg + `:4:19: warning: plugin pubish is configured, but ` + plugins + ` has no pubish.wasm (hint: did you mean publish?)`

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // lines
		stderr string
	}{
		{"good", []string{"lint", good, "--plugins", plugins}, 0, []string{"1 valid rule, no problems"}, ""},
		{"good, format only", []string{"lint", good}, 0, []string{"1 valid rule, no problems"}, ""},
		{"bad", []string{"lint", bad, "--plugins", plugins}, 1, []string{
			rel(bad, "scooter.yaml") + `:3:18: expression: unexpected token EOF (hint: a condition such as battery < 20 && !charging)`,
			rel(bad, "scooter.yaml") + `:6:13: publish.publish refuses this config: needs "topic" (hint: a config it takes: {"topic":"alerts.battery.{{vehicle}}","payload":{"vehicle":"{{vehicle}}","level":"{{battery}}"}})`,
			rel(bad, "scooter.yaml") + `:8:13: log.log refuses this config: level "loud" is not one of trace, debug, info, warn, error (hint: a config it takes: {"level":"warn","message":"battery {{battery}}% on {{vehicle}}"})`,
			rel(bad, "scooter.yaml") + `:9:11: no plugin "pubish"; loaded: expr, log, publish (hint: did you mean publish?)`,
			rel(bad, "scooter.yaml") + `:15:7: unknown key "delay" in a step (hint: did you mean after?)`,
			rel(bad, "z-other.yml") + `:1:7: rule id "low-battery" is already used (hint: first used at ` + rel(bad, "scooter.yaml") + `:1:7)`,
		}, "ruled: lint: 6 problems; 0 valid rules\n"},
		// An expression is checked without plugins: its language is the host's (host/exprcheck).
		{"bad, format only", []string{"lint", bad}, 1, []string{
			rel(bad, "scooter.yaml") + `:3:18: expression: unexpected token EOF (hint: a condition such as battery < 20 && !charging)`,
			rel(bad, "scooter.yaml") + `:15:7: unknown key "delay" in a step (hint: did you mean after?)`,
			rel(bad, "z-other.yml") + `:1:7: rule id "low-battery" is already used (hint: first used at ` + rel(bad, "scooter.yaml") + `:1:7)`,
		}, "ruled: lint: 3 problems; 0 valid rules\n"},
		{"broken plugin", []string{"lint", good, "--plugins", broken}, 1, []string{
			rel(broken, "broken.wasm") + `: wasm: plugin broken: `,
		}, "ruled: lint: 1 problem; 1 valid rule\n"},
		// With the config, each plugin is loaded with the grant the daemon
		// would give it, and a rule naming one refused says why.
		{"grants of the config", []string{"lint", "--config", cfg}, 1, []string{
			rel(good, "scooter.yaml") + `:7:11: plugin "publish" did not load: ` + notGranted,
			rel(plugins, "publish.wasm") + `: wasm: plugin publish: ` + notGranted,
			misspelt,
		}, "ruled: lint: 2 problems; 0 valid rules\n"},
		{"grants of the config and --grant", []string{"lint", "--config", cfg, "--grant", "publish=publish"}, 0, []string{
			misspelt, "1 valid rule, no problems"}, ""},
		{"--grant alone", []string{"lint", good, "--plugins", plugins, "--grant", "publish=kv"}, 1, []string{
			rel(good, "scooter.yaml") + `:7:11: plugin "publish" did not load: ` + notGranted,
			rel(plugins, "publish.wasm") + `: wasm: plugin publish: ` + notGranted,
		}, "ruled: lint: 2 problems; 0 valid rules\n"},
		{"no directory", []string{"lint"}, 2, nil, "lint needs one rules directory"},
		{"missing rules directory", []string{"lint", rel(good, "nope")}, 1, []string{
			rel(good, "nope") + ": cannot read the rules directory: no such file or directory",
		}, "ruled: lint: 1 problem; 0 valid rules\n"},
		{"missing plugins directory", []string{"lint", good, "--plugins", rel(good, "nope")}, 1, nil, "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, "", append(tc.args, "--data", data)...)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if out == "" {
				lines = nil
			}
			if code != tc.code || !strings.Contains(errs, tc.stderr) || len(lines) != len(tc.stdout) {
				t.Fatalf("exit %d; stderr %q; stdout:\n%s\nwant exit %d; stderr containing %q; %d lines",
					code, errs, out, tc.code, tc.stderr, len(tc.stdout))
			}
			for i, want := range tc.stdout {
				// A broken module's error is wasm's to word: match its start.
				if lines[i] != want && !(strings.HasSuffix(want, ": ") && strings.HasPrefix(lines[i], want)) {
					t.Errorf("line %d:\ngot  %s\nwant %s", i, lines[i], want)
				}
			}
		})
	}
}

func TestLintJSON(t *testing.T) {
	bad := t.TempDir()
	writeFiles(t, bad, map[string]string{"scooter.yaml": badRules})
	data := filepath.Join(filepath.Dir(plugintest.CacheDir()), "cli-data")
	code, out, _ := runCLI(t, "", "lint", "--json", bad, "--plugins", pluginDir(t, nil), "--data", data)
	var got struct {
		Rules    []string
		Problems []jsonProblem
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	want := jsonProblem{File: filepath.Join(bad, "scooter.yaml"), Line: 15, Col: 7, Rule: "fine",
		Msg: `unknown key "delay" in a step`, Hint: "did you mean after?"}
	if code != 1 || len(got.Problems) != 5 || got.Problems[4] != want || len(got.Rules) != 0 {
		t.Errorf("exit %d, %+v; want exit 1, 5 problems ending with %+v", code, got, want)
	}
}

// TestLintWarnsOfSelfTriggers: a step whose literal publish triggers its
// own rule, or that fires its own rule, is warned about at its with:,
// without failing lint (the loop is bounded at the hop limit); a
// templated topic is not.
func TestLintWarnsOfSelfTriggers(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"loops.yaml": `- id: echo
  on: loop.*
  steps:
    - name: again
      do: publish.publish
      with: {topic: loop.a}
- id: self
  on: loop.f
  steps:
    - name: again
      do: fire.fire
      with: {rule: self}
- id: fine
  on: loop.t
  steps:
    - do: publish.publish
      with: {topic: "loop.{{next}}"}
`})
	code, out, errs := runCLI(t, "", "lint", dir)
	want := []string{
		filepath.Join(dir, "loops.yaml") + ":6:13: warning: step again publishes to loop.a, which triggers this rule itself: a loop, refused after 16 hops",
		filepath.Join(dir, "loops.yaml") + ":12:13: warning: step again fires this rule itself: a loop, refused after 16 hops",
	}
	if code != 0 {
		t.Fatalf("exit %d: %s %s; want 0 (warnings do not fail lint)", code, out, errs)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	if strings.Count(out, "warning:") != 2 {
		t.Errorf("want two warnings:\n%s", out)
	}
}
