package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/release"
)

// readmeBlock is the first fenced code block after marker in the
// repository file path: the tests below follow the SDK guide's own words.
func readmeBlock(t *testing.T, path, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(plugintest.Root(), path))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, marker)
	if i < 0 {
		t.Fatalf("%s has no %q", path, marker)
	}
	m := regexp.MustCompile("(?s)```[a-z]*\n(.*?)```").FindStringSubmatch(s[i:])
	if m == nil {
		t.Fatalf("%s: no code block after %q", path, marker)
	}
	return m[1]
}

// moduleZip writes the module in dir as version v into a GOPROXY
// directory laid out as the module proxy protocol says (@v/list, .info,
// .mod, .zip), as a tag of this tree would serve it.
func moduleZip(t *testing.T, proxy, mod, dir, v string) {
	t.Helper()
	at := filepath.Join(proxy, mod, "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		w, err := zw.Create(mod + "@" + v + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"list": []byte(v + "\n"), v + ".info": fmt.Appendf(nil, `{"Version":%q,"Time":"2026-12-01T00:00:00Z"}`, v),
		v + ".mod": gomod, v + ".zip": buf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGoSDKFromAProxy: a third party adds the Go SDK with `go get` and no
// replace line. The repository's abi and sdk/go are served, as the tags
// v<release.Next> would serve them, from a file GOPROXY; the SDK guide's
// plugin (sdk/README.md) is built in a directory outside the repository,
// requiring them by version, and answers `ruled call` as the guide says.
func TestGoSDKFromAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin with the go command")
	}
	v := "v" + release.Next
	proxy := t.TempDir()
	moduleZip(t, proxy, "github.com/ruled-dev/ruled/abi", filepath.Join(plugintest.Root(), "abi"), v)
	moduleZip(t, proxy, "github.com/ruled-dev/ruled/sdk/go", filepath.Join(plugintest.Root(), "sdk", "go"), v)
	dir := t.TempDir()
	modcache := filepath.Join(t.TempDir(), "mod")
	env := append(os.Environ(), "GOPROXY=file://"+filepath.ToSlash(proxy), "GOSUMDB=off", "GONOSUMDB=*", "GOWORK=off",
		"GOFLAGS=-mod=mod -buildvcs=false", "GOMODCACHE="+modcache, "GOTOOLCHAIN=local")
	t.Cleanup(func() { // the module cache's files are read-only
		c := exec.Command("go", "clean", "-modcache")
		c.Env = env
		c.Run()
	})
	gocmd := func(extra []string, args ...string) string {
		t.Helper()
		c := exec.Command("go", args...)
		c.Dir, c.Env = dir, append(env, extra...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gocmd(nil, "mod", "init", "example.com/battery")
	gocmd(nil, "get", "github.com/ruled-dev/ruled/sdk/go@"+v)
	main := readmeBlock(t, "sdk/README.md", "`main.go`:")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	gocmd(nil, "mod", "tidy")
	gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if strings.Contains(string(gomod), "replace") || !strings.Contains(string(gomod), "github.com/ruled-dev/ruled/sdk/go "+v) {
		t.Errorf("the plugin's go.mod:\n%s", gomod)
	}
	gocmd([]string{"GOOS=wasip1", "GOARCH=wasm"}, "build", "-buildmode=c-shared", "-o", "battery.wasm", ".")
	ev := filepath.Join(dir, "ev.json")
	os.WriteFile(ev, []byte(`{"topic":"scooter.telemetry","vehicle":"s-17","battery":12}`), 0o644)
	code, out, errs := runCLI(t, "", "call", filepath.Join(dir, "battery.wasm"), "low", "--event", ev, "--config", "below=15")
	if code != 0 || out != "true\n" {
		t.Errorf("ruled call battery.wasm low: exit %d, %q, %s", code, out, errs)
	}
}

// TestAssemblyScriptSDKFromATarball: the AssemblyScript SDK installs as an
// npm package from the tarball `npm pack` makes, in a project outside the
// repository, which builds the SDK guide's plugin (its asconfig.json and
// assembly/index.ts) and answers `ruled call` as the guide says.
func TestAssemblyScriptSDKFromATarball(t *testing.T) {
	if testing.Short() {
		t.Skip("installs npm packages")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no npm (make test installs it)")
		}
		t.Skip("no npm")
	}
	npm := func(dir string, args ...string) string {
		t.Helper()
		c := exec.Command("npm", append(args, "--no-audit", "--no-fund", "--loglevel=error")...)
		c.Dir = dir
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	packs := t.TempDir()
	npm(filepath.Join(plugintest.Root(), "sdk", "assemblyscript"), "pack", "--pack-destination", packs)
	tarball := filepath.Join(packs, "ruled-sdk-assemblyscript-"+release.Next+".tgz")
	if _, err := os.Stat(tarball); err != nil {
		t.Fatalf("npm pack made no %s: %v", filepath.Base(tarball), err)
	}
	dir := t.TempDir()
	npm(dir, "init", "-y")
	npm(dir, "install", "--save-dev", "--save-exact", "--prefer-offline", "assemblyscript@0.28.20")
	npm(dir, "install", "--save-dev", tarball)
	os.MkdirAll(filepath.Join(dir, "assembly"), 0o755)
	os.WriteFile(filepath.Join(dir, "asconfig.json"), []byte(readmeBlock(t, "sdk/README.md", "`asconfig.json`:")), 0o644)
	os.WriteFile(filepath.Join(dir, "assembly", "index.ts"), []byte(readmeBlock(t, "sdk/README.md", "`assembly/index.ts` —")), 0o644)
	c := exec.Command("npx", "asc")
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("npx asc: %v\n%s", err, out)
	}
	ev := filepath.Join(dir, "ev.json")
	os.WriteFile(ev, []byte(`{"topic":"scooter.telemetry","vehicle":"s-17","battery":12}`), 0o644)
	code, out, errs := runCLI(t, "", "call", filepath.Join(dir, "build", "battery.wasm"), "low", "--event", ev, "--config", "below=15")
	if code != 0 || out != "true\n" {
		t.Errorf("ruled call build/battery.wasm low: exit %d, %q, %s", code, out, errs)
	}
}
