package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewRules: `ruled new rules DIR` writes a rule set whose scenario
// passes and whose rules lint clean, as it is.
func TestNewRules(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"new", "rules", dir}, nil, &out, &errb); code != exitOK {
		t.Fatalf("new rules: exit %d: %s", code, errb.String())
	}
	t.Chdir(dir) // as its Makefile runs: make lint is ruled lint --config ruled.yaml
	for _, args := range [][]string{{"test", "tests"}, {"lint", "rules", "--plugins", "plugins"}, {"lint", "--config", "ruled.yaml"}} {
		out.Reset()
		errb.Reset()
		if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
			t.Errorf("%v: exit %d:\n%s%s", args, code, out.String(), errb.String())
		}
	}
	// A second time over it: refused, nothing written over.
	if code := run(context.Background(), []string{"new", "rules", dir}, nil, &out, &errb); code != exitFailed ||
		!strings.Contains(errb.String(), "exists; not written over") {
		t.Errorf("new rules over a rule set: exit %d: %s", code, errb.String())
	}
}

// TestNewPlugin: `ruled new plugin NAME --lang go|as|c|rust` writes a
// plugin that builds with its own Makefile's commands (Go's native test
// passing too) and whose scenario passes, as it is; a bad name or
// language is a misuse.
func TestNewPlugin(t *testing.T) {
	// The Go SDK is in the project (ruled-sdk/): it builds with no module
	// proxy at all.
	goEnv := func(t *testing.T) []string {
		modcache := filepath.Join(t.TempDir(), "mod")
		env := append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOWORK=off",
			"GOFLAGS=-mod=mod -buildvcs=false", "GOMODCACHE="+modcache, "GOTOOLCHAIN=local")
		t.Cleanup(func() { // the module cache's files are read-only
			c := exec.Command("go", "clean", "-modcache")
			c.Env = env
			c.Run()
		})
		return env
	}
	for _, c := range []struct {
		lang, tool string
		env        func(*testing.T) []string
		build      [][]string
	}{
		{"go", "go", goEnv, [][]string{{"go", "mod", "tidy"},
			{"env", "GOOS=wasip1", "GOARCH=wasm", "go", "build", "-buildmode=c-shared", "-o", "thermo.wasm", "."}, {"go", "test", "./..."}}},
		{"as", "npm", nil, [][]string{{"npm", "install", "--no-audit", "--no-fund", "--loglevel=error"}, {"npx", "asc"}}},
		{"c", "clang-14", nil, [][]string{{"sh", "sdk/build.sh", "thermo.wasm", "thermo.c"}}},
		{"rust", "/usr/lib/rustlib/wasm32-unknown-unknown", nil, [][]string{{"sh", "ruled/build.sh", "thermo.wasm", "thermo.rs"},
			{"sh", "ruled/build.sh", "--test", "thermo-test", "thermo.rs"}, {"./thermo-test"}}},
	} {
		t.Run(c.lang, func(t *testing.T) {
			if testing.Short() && (c.lang == "go" || c.lang == "as") {
				t.Skip("builds with the go command or npm")
			}
			if _, err := exec.LookPath(c.tool); err != nil {
				if _, err := os.Stat(c.tool); err != nil {
					if os.Getenv("CI") == "true" {
						t.Fatalf("no %s (.ci/tools.sh installs it)", c.tool)
					}
					t.Skipf("no %s", c.tool)
				}
			}
			dir := filepath.Join(t.TempDir(), "thermo")
			var out, errb bytes.Buffer
			if code := run(context.Background(), []string{"new", "plugin", "thermo", "--lang", c.lang, "--dir", dir}, nil, &out, &errb); code != exitOK {
				t.Fatalf("new plugin: exit %d: %s", code, errb.String())
			}
			var env []string
			if c.env != nil {
				env = c.env(t)
			}
			for _, b := range c.build {
				cmd := exec.Command(b[0], b[1:]...)
				cmd.Dir, cmd.Env = dir, env
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%v: %v\n%s", b, err, out)
				}
			}
			out.Reset()
			if code := run(context.Background(), []string{"test", filepath.Join(dir, "tests")}, nil, &out, &errb); code != exitOK {
				t.Fatalf("its scenario: exit %d:\n%s%s", code, out.String(), errb.String())
			}
		})
	}
	for _, args := range [][]string{{"new", "plugin", "Thermo"}, {"new", "plugin", "thermo", "--lang", "cobol"}, {"new", "plugin"},
		{"new", "plugin", "ruled"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, nil, &out, &errb); code != exitMisuse {
			t.Errorf("%v: exit %d; want %d (%s)", args, code, exitMisuse, errb.String())
		}
	}
}
