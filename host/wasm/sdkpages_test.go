package wasm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// TestCReadme builds the C SDK page's example (sdk/c/README.md) with its
// build script and calls it as the page does: the page's code compiles,
// and does what the page says.
func TestCReadme(t *testing.T) {
	plugintest.C(t, "sdk/c/conformance") // skips without clang, as every C test does
	pageExample(t, "sdk/c/README.md", "c", func(out, src string) []string {
		return []string{"sdk/c/ruled/build.sh", out, "-Isdk/c/ruled", src}
	})
}

// TestRustReadme builds the Rust SDK page's example (sdk/rust/README.md)
// with its build script and calls it as the page does.
func TestRustReadme(t *testing.T) {
	plugintest.Rust(t, "sdk/rust/conformance/conformance.rs") // skips without rustc, as every Rust test does
	pageExample(t, "sdk/rust/README.md", "rust", func(out, src string) []string {
		return []string{"sdk/rust/build.sh", out, src}
	})
}

// pageExample builds the first block fenced as lang in the SDK page
// (the thermo plugin every page shows: a condition hot, an action alert)
// with the sh arguments build gives, and calls it as the page does.
func pageExample(t *testing.T, page, lang string, build func(out, src string) []string) {
	root := plugintest.Root()
	b, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no %s example", page, lang)
	}
	dir := t.TempDir()
	src, out := filepath.Join(dir, "thermo."+map[string]string{"c": "c", "rust": "rs"}[lang]), filepath.Join(dir, "thermo.wasm")
	if err := os.WriteFile(src, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", build(out, src)...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	e := newEnv(t)
	mod := e.load(t, out, Options{Name: "thermo", Grant: abi.Capabilities})
	ctx := context.Background()
	hot := configure(t, mod, "hot", `{"above":30}`)
	if met, err := hot.When(ctx, call(t, `{"data":{"value":31}}`)); !met || err != nil {
		t.Errorf("hot at 31 = %v, %v; want true", met, err)
	}
	if met, err := hot.When(ctx, call(t, `{"data":{"value":29}}`)); met || err != nil {
		t.Errorf("hot at 29 = %v, %v; want false", met, err)
	}
	if _, err := mod.Configure(ctx, "hot", []byte(`{"above":"x"}`)); err == nil ||
		err.Error() != `plugin thermo: hot: hot: config "above" must be a number, not the string "x"` {
		t.Errorf("hot with a string: %v", err)
	}
	alert := configure(t, mod, "alert", `{"topic":"alerts"}`)
	if _, err := alert.Act(ctx, call(t, `{"data":{"value":31}}`)); err != nil {
		t.Fatal(err)
	}
	e.svc.mu.Lock()
	defer e.svc.mu.Unlock()
	if len(e.svc.published) != 1 || e.svc.published[0].topic != "alerts" || e.svc.published[0].payload != `{"data":{"value":31}}` {
		t.Errorf("published %+v", e.svc.published)
	}
}

// TestRustNative builds sdk/rust/nativetest's tests to run natively
// (sdk/rust/build.sh --test) and runs them: the Rust SDK's ruled::native
// calls a plugin's functions in-process, with an in-memory host, and
// answers as the sandbox does.
func TestRustNative(t *testing.T) {
	plugintest.Rust(t, "sdk/rust/conformance/conformance.rs") // skips without rustc, as every Rust test does
	root := plugintest.Root()
	bin := filepath.Join(t.TempDir(), "nativetest")
	cmd := exec.Command("sh", "sdk/rust/build.sh", "--test", bin, "sdk/rust/nativetest/nativetest.rs")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "test result: ok. 1 passed") {
		t.Fatalf("native tests: %v\n%s", err, out)
	}
}

// TestConfigurePanicSaysWhy: a plugin that crashes in configure (C's
// ruled_panic, a Rust panic) is reported with its own words on one line,
// as a crash in a call is, not wazero's trap text and stack.
func TestConfigurePanicSaysWhy(t *testing.T) {
	for name, path := range map[string]func(testing.TB) string{
		"c":    func(t testing.TB) string { return plugintest.C(t, "sdk/c/tmpltest") },
		"rust": func(t testing.TB) string { return plugintest.Rust(t, "sdk/rust/tmpltest/tmpltest.rs") },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			m := e.load(t, path(t), Options{Name: "tmpltest"})
			_, err := m.Configure(context.Background(), "crash_configure", []byte(`{}`))
			var ce *CallError
			if !errors.As(err, &ce) || !strings.Contains(ce.Text, "panic: no config for you") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("configure that panics: %v", err)
			}
		})
	}
}
