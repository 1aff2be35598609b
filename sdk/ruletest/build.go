package ruletest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// CacheDir is where ruletest keeps what it builds and compiles, shared by
// every test and `ruled test` run on the machine: $RULED_PLUGIN_DIR holds
// built plugins and $RULED_WAZERO_CACHE wazero's compilation cache when
// set, else both live under the user's cache directory (ruled/plugins,
// ruled/wazero). A warm cache is what makes a scenario take milliseconds
// instead of the seconds a Go build and a compilation take.
func CacheDir(kind string) string {
	env := map[string]string{"plugins": "RULED_PLUGIN_DIR", "wazero": "RULED_WAZERO_CACHE"}[kind]
	if d := os.Getenv(env); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "ruled", kind)
}

// BuildGo builds the Go plugin package in dir (any module: the build runs
// in dir) with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared and returns the
// module's path. The output is named by a hash of the Go version and of
// every file in the directories of the packages it depends on outside the
// standard library (`go list -deps`), so an unchanged plugin is not built
// again, and a change in anything it imports — a local SDK replaced in
// go.mod included — is.
func BuildGo(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	sum, err := hashPackage(abs)
	if err != nil {
		return "", fmt.Errorf("ruletest: plugin %s: %w", dir, err)
	}
	out := filepath.Join(CacheDir("plugins"), filepath.Base(abs)+"-"+sum[:16]+".wasm")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	unlock := lockFile(out + ".lock")
	defer unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil // built while we waited
	}
	tmp := out + ".tmp"
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", tmp, ".")
	cmd.Dir = abs
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("ruletest: build plugin %s: %v\n%s", dir, err, b)
	}
	return out, os.Rename(tmp, out)
}

func hashPackage(dir string) (string, error) {
	h := sha256.New()
	v, err := exec.Command("go", "version").Output()
	if err != nil {
		return "", fmt.Errorf("a Go plugin needs the go command: %w", err)
	}
	h.Write(v)
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	list, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list: %v\n%s", err, stderr.String())
	}
	dirs := strings.Fields(string(list))
	sort.Strings(dirs)
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			return "", err
		}
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(d, e.Name()))
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s/%s %d\n", d, e.Name(), len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
