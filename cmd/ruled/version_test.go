package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/release"
)

// TestVersion: `ruled version`, `--version` and `version --json` say the
// build — untagged, the next release marked -dev — with the plugin ABI
// and the SDKs; a binary built with a tag (as make does on a tagged tree)
// says the tag.
func TestVersion(t *testing.T) {
	want := "ruled v" + release.Next + "-dev ("
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := runCLI(t, "", args...)
		if code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, "plugin ABI "+abi.VersionString(abi.Version)) ||
			!strings.Contains(out, "SDK go") || !strings.Contains(out, "SDK assemblyscript") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	code, out, _ := runCLI(t, "", "version", "--json")
	var in release.Info
	if err := json.Unmarshal([]byte(out), &in); code != 0 || err != nil || in.ABI != abi.VersionString(abi.Version) || in.Go == "" {
		t.Errorf("version --json: exit %d, %v: %s", code, err, out)
	}
	if code, _, errs := runCLI(t, "", "version", "extra"); code != 2 || !strings.Contains(errs, "no arguments") {
		t.Errorf("version extra: exit %d, %s", code, errs)
	}
	if testing.Short() {
		return
	}
	bin := filepath.Join(t.TempDir(), "ruled")
	const rel = "github.com/ruled-dev/ruled/internal/release"
	build := exec.Command("go", "build", "-ldflags", "-X "+rel+".tag=v7.8.9 -X "+rel+".commit=0123456789abcdef -X "+rel+".modified=true", "-o", bin, ".")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	b, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(b), "ruled v7.8.9 (commit 0123456789ab+changes, go") {
		t.Errorf("a tagged build says %q (%v)", b, err)
	}
}
