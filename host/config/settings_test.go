package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/golden"
)

// example is a value of s's kind in the syntax the flag and the
// environment take, and the same as the config file writes it.
func example(s *Setting) (text, yamlValue string) {
	switch {
	case s.Key == "mqtt.qos":
		return "0", "0"
	case s.Key == "log-level":
		return "debug", "debug"
	case s.Key == "state.keys":
		return "scooter.telemetry=vehicle", "[scooter.telemetry=vehicle]"
	case s.Key == "require-signatures":
		return "plugins", "[plugins]"
	case s.Key == "trusted-keys":
		const k = "ed25519:ops:11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
		return k, "[" + k + "]"
	case s.Key == "otlp.endpoint":
		return "http://localhost:4318", "http://localhost:4318"
	case s.Key == "otlp.headers":
		return "x-api-key=k1", "x-api-key=k1"
	case s.Key == "otlp.compression":
		return "none", "none"
	case s.Key == "otlp.sample-ratio":
		return "0.25", "0.25"
	case strings.HasSuffix(s.Key, "grant"):
		return "p=kv", "[kv]"
	case strings.Contains(s.Key, "*") && s.Kind == List:
		return "p=a.example.com", "[a.example.com]"
	}
	switch s.Kind {
	case Int:
		return "3", "3"
	case Float:
		return "2.5", "2.5"
	case Bool:
		if s.Invert {
			return "false", "true" // --exec-log=false is exec-log.off: true
		}
		return "true", "true"
	case Duration:
		return "90s", "90s"
	case List:
		return "a", "[a]"
	case Routes:
		return "light.>", "[light.>]"
	}
	return "x-val", "x-val"
}

// fileText writes key (dots as sections, * as plugin p) = v as YAML.
func fileText(key, v string) string {
	parts := strings.Split(strings.Replace(key, "*", "p", 1), ".")
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i == len(parts)-1 {
			b.WriteString(" " + v)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestEverySettingEverywhere: each setting, given in the config file, by
// its environment variable and by its flag, lands the same in a Config —
// the one declaration behind all three; and a setting without a flag is
// a secret or a plugin's limit.
func TestEverySettingEverywhere(t *testing.T) {
	keys, flags, envs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range Settings {
		for what, seen := range map[string]map[string]bool{s.Key: keys, "--" + s.Flag: flags, s.Env(): envs} {
			if what != "--" && seen[what] {
				t.Errorf("%s is declared twice", what)
			}
			seen[what] = true
		}
		if s.Doc == "" {
			t.Errorf("%s has no documentation", s.Key)
		}
		text, yv := example(s)
		var fromFile, fromEnv, fromFlag Config
		path := filepath.Join(t.TempDir(), "ruled.yaml")
		os.WriteFile(path, []byte(fileText(s.Key, yv)), 0o600) // secrets may be in a file only its owner reads
		if err := Load(path, &fromFile); err != nil {
			t.Errorf("%s in the file: %v", s.Key, err)
			continue
		}
		if strings.Contains(s.Key, "*") && s.Flag == "" {
			continue // the file only
		}
		// Each source notes where it gave the setting (Validate names it),
		// and gives the same value.
		origin := func(c *Config, want string) {
			t.Helper()
			if len(c.Origins) != 1 {
				t.Errorf("%s: origins %v, want one from %s", s.Key, c.Origins, want)
			}
			key := strings.Replace(s.Key, "*", "p", 1)
			if o := c.Origins[key]; !strings.HasPrefix(o, want) {
				t.Errorf("%s: origin of %s: %q, want %s…", s.Key, key, o, want)
			}
			c.Origins = nil
		}
		origin(&fromFile, path+":")
		if err := ApplyEnv(&fromEnv, func(k string) string { return map[string]string{s.Env(): text}[k] }); err != nil {
			t.Errorf("%s by $%s: %v", s.Key, s.Env(), err)
		}
		origin(&fromEnv, "$"+s.Env())
		if !reflect.DeepEqual(fromFile, fromEnv) {
			t.Errorf("%s: the file gives %+v, $%s %+v", s.Key, fromFile, s.Env(), fromEnv)
		}
		if s.Flag == "" {
			if !strings.Contains(s.Doc, "secret") {
				t.Errorf("%s has no flag and is not a secret", s.Key)
			}
			continue
		}
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fl := Flags(fs)
		if err := fs.Parse([]string{"--" + s.Flag + "=" + text}); err != nil {
			t.Errorf("--%s=%s: %v", s.Flag, text, err)
			continue
		}
		if err := fl.Apply(&fromFlag); err != nil {
			t.Errorf("--%s: %v", s.Flag, err)
		}
		origin(&fromFlag, "--"+s.Flag)
		if !reflect.DeepEqual(fromFile, fromFlag) {
			t.Errorf("%s: the file gives %+v, --%s %+v", s.Key, fromFile, s.Flag, fromFlag)
		}
	}
}

// fromAll is the Config ruled run makes: its defaults, the file at path,
// the environment env, the flags.
func fromAll(t *testing.T, path string, env map[string]string, flags []string) Config {
	t.Helper()
	var c Config
	Defaults(&c)
	if err := Load(path, &c); err != nil {
		t.Fatal(err)
	}
	if err := ApplyEnv(&c, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fl := Flags(fs)
	if err := fs.Parse(flags); err != nil {
		t.Fatal(err)
	}
	if err := fl.Apply(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPrecedence: a flag wins over the environment, which wins over the
// file; lists add up (a grant in the file and one by the environment).
func TestPrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.yaml")
	os.WriteFile(path, []byte("replay-window: 2h\nworkers: 2\nplugin:\n  p: {grant: [kv]}\n"), 0o644)
	env := map[string]string{"RULED_REPLAY_WINDOW": "3h", "RULED_WORKERS": "4", "RULED_GRANT": "q=fire,publish r=http"}
	for _, tc := range []struct {
		flags  []string
		window time.Duration
	}{{nil, 3 * time.Hour}, {[]string{"--replay-window", "4h"}, 4 * time.Hour}} {
		c := fromAll(t, path, env, tc.flags)
		if c.ReplayWindow != tc.window || c.Workers != 4 || !c.Watch {
			t.Errorf("flags %v: window %v, workers %d, watch %v", tc.flags, c.ReplayWindow, c.Workers, c.Watch)
		}
		if g := c.Plugins; len(g["p"].Grant) != 1 || len(g["q"].Grant) != 2 || len(g["r"].Grant) != 1 {
			t.Errorf("grants %+v", g)
		}
	}
}

// TestLoadEveryError: a file's mistakes are said all at once, each on
// its line, not the first only.
func TestLoadEveryError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.yaml")
	os.WriteFile(path, []byte("htpp: x\nworkers: many\nplugin:\n  publish: {grnat: [publish]}\n"), 0o644)
	var c Config
	err := Load(path, &c)
	want := []string{path + ":1:1: htpp: unknown setting (did you mean http?)",
		path + `:2:10: workers: want a whole number, got "many"`,
		path + ":4:13: plugin.publish.grnat: unknown setting (did you mean plugin.publish.grant?)"}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("Load: %v; want\n%s", err, strings.Join(want, "\n"))
	}
}

// TestLoadErrors: a config file's mistakes name the file, line and
// column and the key — the one meant, for a misspelling — never a Go type.
func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"rules: r\nlog-lvel: debug\n", "ruled.yaml:2:1: log-lvel: unknown setting (did you mean log-level?)"},
		{"replay-window: soon\n", "ruled.yaml:1:16: replay-window: want a duration such as 30s, 5m or 1h30m, got \"soon\""},
		{"exec-log:\n  runs: many\n", "ruled.yaml:2:9: exec-log.runs: want a whole number, got \"many\""},
		{"exec-log: {rows: 5}\n", "ruled.yaml:1:12: exec-log.rows: unknown setting (did you mean exec-log.runs?)"},
		{"log-runs: 5\n", "ruled.yaml:1:1: log-runs: unknown setting (did you mean exec-log.runs?)"},
		{"plugin:\n  publish: {grnat: [publish]}\n", "ruled.yaml:2:13: plugin.publish.grnat: unknown setting (did you mean plugin.publish.grant?)"},
		{"plugin:\n  p: {grant: [disk]}\n", "ruled.yaml:2:14: plugin.p.grant: unknown capability \"disk\""},
		{"mqtt: {publish: light}\n", "ruled.yaml:1:17: mqtt.publish: want a list of topic patterns"},
		{"workers: [1]\n", "ruled.yaml:1:10: workers: want a whole number"},
		{"- rules: r\n", "ruled.yaml:1:1: a config file is a mapping"},
		// A section given twice: the second's own mistakes are told too.
		{"plugin:\n  p: {grant: [kv]}\nplugin:\n  q: {grant: [pubish]}\n", "ruled.yaml:4:14: plugin.q.grant: unknown capability \"pubish\""},
		{"log-level: loud\n", "log-level: want trace, debug, info, warn or error"},
		{"token: 0123456789abcdef0123\n", "ruled.yaml:1:1: token is a secret, in a file others can read: give it by $RULED_TOKEN"},
	} {
		path := filepath.Join(t.TempDir(), "ruled.yaml")
		os.WriteFile(path, []byte(tc.yaml), 0o644)
		var c Config
		err := Load(path, &c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.yaml, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "fileConfig") {
			t.Errorf("%q: a Go type in the error: %v", tc.yaml, err)
		}
	}
}

// TestReference: docs/config.md is what the table says (go test
// -rewrite writes it).
func TestReference(t *testing.T) {
	golden.CheckPath(t, filepath.Join("..", "..", "docs", "config.md"), Reference())
}

// TestListsReplace: a source that gives a list replaces an earlier
// source's — a flag's grant narrows the file's and the environment's, it
// does not add to them — while a repeated flag adds to itself.
func TestListsReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.yaml")
	os.WriteFile(path, []byte("plugin:\n  p: {grant: [publish, kv], http: {hosts: [a.example.com]}}\nmqtt: {subscribe: [a/#]}\n"), 0o644)
	env := map[string]string{"RULED_GRANT": "p=kv", "RULED_MQTT_SUBSCRIBE": "b/# c/#"}
	for _, tc := range []struct {
		flags             []string
		grant, hosts, sub string
	}{
		{nil, "[kv]", "[a.example.com]", "[b/# c/#]"},
		{[]string{"--grant", "p=publish"}, "[publish]", "[a.example.com]", "[b/# c/#]"},
		{[]string{"--grant", "p=kv", "--grant", "p=fire", "--http-allow", "p=b.example.com", "--mqtt-subscribe", "d/#"}, "[kv fire]", "[b.example.com]", "[d/#]"},
	} {
		c := fromAll(t, path, env, tc.flags)
		p := c.Plugins["p"]
		got := [3]string{fmt.Sprint(p.Grant), fmt.Sprint(p.HTTP.Hosts), fmt.Sprint(c.MQTT.Subscribe)}
		if want := [3]string{tc.grant, tc.hosts, tc.sub}; got != want {
			t.Errorf("flags %v: grant, hosts, subscriptions %v; want %v", tc.flags, got, want)
		}
	}
}
