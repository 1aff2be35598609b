package plugintest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// Root is the repository's root directory (where go.mod is).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func shared(env, sub string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	return filepath.Join(Root(), ".build", sub)
}

// BuildDir is where built plugins go: $RULED_PLUGIN_DIR, else .build/plugins.
func BuildDir() string { return shared("RULED_PLUGIN_DIR", "plugins") }

// CacheDir is the wazero compilation cache tests share: $RULED_WAZERO_CACHE,
// else .build/wazero.
func CacheDir() string { return shared("RULED_WAZERO_CACHE", "wazero") }

// Go builds the Go plugin in dir (relative to the repository root, e.g.
// "cmd/ruled/testdata/soak") with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared and
// returns the module's path. The output is named by a hash of its sources,
// the SDK, the ABI and go.sum, so a second call (from any test package)
// reuses it; a file lock keeps two packages from building it at once.
func Go(t testing.TB, dir string) string {
	t.Helper()
	path, err := BuildGo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// BuildGo is Go without a testing.TB, for benchmarks' setup and tools.
func BuildGo(dir string) (string, error) {
	root := Root()
	sum, err := hashSources(root, dir)
	if err != nil {
		return "", fmt.Errorf("plugintest: %w", err)
	}
	out := filepath.Join(BuildDir(), strings.ReplaceAll(dir, "/", "_")+"-"+sum[:16]+".wasm")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(BuildDir(), 0o755); err != nil {
		return "", err
	}
	unlock, err := lock(out + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil // built while we waited
	}
	tmp := out + ".tmp"
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", tmp, "./"+dir)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("plugintest: build %s: %v\n%s", dir, err, b)
	}
	return out, os.Rename(tmp, out)
}

// C builds the C plugin of the sources in dir (relative to the root,
// e.g. "sdk/c/conformance") with the C SDK (sdk/c/ruled/build.sh: clang for
// wasm32-wasi) and returns the module's path, named by a hash of the
// sources and the SDK, as Go does. Without clang the test is skipped, or
// fails under CI=true (.ci/tools.sh installs it there).
func C(t testing.TB, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("clang-14"); err != nil {
		if _, err := exec.LookPath("clang"); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("plugintest: no clang to build C plugins (.ci/tools.sh installs clang-14, lld-14, wasi-libc)")
			}
			t.Skip("plugintest: no clang to build C plugins")
		}
	}
	root := Root()
	h := sha256.New()
	var files []string
	for _, d := range []string{dir, "sdk/c/ruled"} {
		entries, err := os.ReadDir(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".c") || strings.HasSuffix(n, ".h") || strings.HasSuffix(n, ".sh")) {
				files = append(files, filepath.Join(d, n))
			}
		}
	}
	sort.Strings(files)
	var srcs []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(f))
		h.Write(b)
		if strings.HasPrefix(f, dir+"/") && strings.HasSuffix(f, ".c") {
			srcs = append(srcs, f)
		}
	}
	out := filepath.Join(BuildDir(), strings.ReplaceAll(dir, "/", "_")+"-"+hex.EncodeToString(h.Sum(nil))[:16]+".wasm")
	return buildOnce(t, dir, out, func(tmp string) []string { return append([]string{"sdk/c/ruled/build.sh", tmp}, srcs...) })
}

// buildOnce builds the module out by running sh with the arguments
// args(tmp) in the root, unless it is there already: under a file lock,
// so two test packages do not build it at once, and renamed into place
// whole.
func buildOnce(t testing.TB, what, out string, args func(tmp string) []string) string {
	t.Helper()
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if err := os.MkdirAll(BuildDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := lock(out + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := os.Stat(out); err == nil {
		return out // built while we waited
	}
	tmp := out + ".tmp"
	cmd := exec.Command("sh", args(tmp)...)
	cmd.Dir = Root()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("plugintest: build %s: %v\n%s", what, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Rust builds the Rust plugin whose crate root is src (relative to the
// root, e.g. "sdk/rust/conformance/conformance.rs") with the Rust SDK
// (sdk/rust/build.sh: rustc alone, for wasm32-unknown-unknown) and
// returns the module's path, named by a hash of the sources. Without
// Debian's rustc and its wasm32 standard library the test is skipped, or
// fails under CI=true (.ci/tools.sh installs them there).
func Rust(t testing.TB, src string) string {
	t.Helper()
	if _, err := os.Stat("/usr/lib/rustlib/wasm32-unknown-unknown"); err != nil && os.Getenv("RUSTC") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("plugintest: no rustc for wasm32-unknown-unknown (.ci/tools.sh installs rustc, libstd-rust-dev-wasm32)")
		}
		t.Skip("plugintest: no rustc for wasm32-unknown-unknown")
	}
	root := Root()
	files := []string{src, "sdk/rust/build.sh"}
	entries, err := os.ReadDir(filepath.Join(root, "sdk/rust/src"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".rs") {
			files = append(files, "sdk/rust/src/"+e.Name())
		}
	}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(f))
		h.Write(b)
	}
	out := filepath.Join(BuildDir(), strings.ReplaceAll(strings.TrimSuffix(src, ".rs"), "/", "_")+"-"+hex.EncodeToString(h.Sum(nil))[:16]+".wasm")
	return buildOnce(t, src, out, func(tmp string) []string { return []string{"sdk/rust/build.sh", tmp, src} })
}

// FirstParty returns the module of the first-party plugin name: its
// committed AssemblyScript build in plugins/build.
func FirstParty(t testing.TB, name string) string {
	t.Helper()
	return File(t, "plugins/build/"+name+".wasm")
}

// Module returns the module src names: a committed .wasm file (relative to
// the root), or a Go plugin's package directory, built.
func Module(t testing.TB, src string) string {
	t.Helper()
	if strings.HasSuffix(src, ".wasm") {
		return File(t, src)
	}
	return Go(t, src)
}

// File returns the path of a committed module (relative to the root),
// failing the test when it is missing.
func File(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Root(), rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	return p
}

func hashSources(root, dir string) (string, error) {
	h := sha256.New()
	v, err := exec.Command("go", "version").Output()
	if err != nil {
		return "", err
	}
	h.Write(v)
	var files []string
	for _, d := range []string{dir, "sdk/go", "abi"} {
		err := filepath.WalkDir(filepath.Join(root, d), func(p string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if p != filepath.Join(root, d) && (e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "go.mod") || strings.HasSuffix(p, "go.sum") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	files = append(files, filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
	sort.Strings(files)
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return "", err
		}
		rel, _ := filepath.Rel(root, f)
		h.Write([]byte(rel))
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// ExampleDir is a new directory holding the first-party plugins (expr,
// publish, log, fire) and the scooter example's, under the names rules
// use: what a daemon on the example's rules loads.
func ExampleDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range map[string]string{"expr": "plugins/build/expr.wasm", "publish": "plugins/build/publish.wasm",
		"log": "plugins/build/log.wasm", "fire": "plugins/build/fire.wasm", "scooter": "examples/scooter/plugin/scooter.wasm"} {
		b, err := os.ReadFile(Module(t, src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".wasm"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
