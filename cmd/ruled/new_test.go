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
	for _, args := range [][]string{{"test", filepath.Join(dir, "tests")}, {"lint", filepath.Join(dir, "rules"), "--plugins", filepath.Join(dir, "plugins")}} {
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

// TestNewPlugin: `ruled new plugin NAME --lang c|rust` writes a plugin
// that builds with its own build script and whose scenario passes, as it
// is; a bad name or language is a misuse.
func TestNewPlugin(t *testing.T) {
	for _, c := range []struct {
		lang, tool string
		build      []string
	}{
		{"c", "clang-14", []string{"sh", "sdk/build.sh", "thermo.wasm", "thermo.c"}},
		{"rust", "/usr/lib/rustlib/wasm32-unknown-unknown", []string{"sh", "ruled/build.sh", "thermo.wasm", "thermo.rs"}},
	} {
		t.Run(c.lang, func(t *testing.T) {
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
			cmd := exec.Command(c.build[0], c.build[1:]...)
			cmd.Dir = dir
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", c.build, err, b)
			}
			out.Reset()
			if code := run(context.Background(), []string{"test", filepath.Join(dir, "tests")}, nil, &out, &errb); code != exitOK {
				t.Fatalf("its scenario: exit %d:\n%s%s", code, out.String(), errb.String())
			}
		})
	}
	for _, args := range [][]string{{"new", "plugin", "Thermo"}, {"new", "plugin", "thermo", "--lang", "cobol"}, {"new", "plugin"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, nil, &out, &errb); code != exitMisuse {
			t.Errorf("%v: exit %d; want %d (%s)", args, code, exitMisuse, errb.String())
		}
	}
}
