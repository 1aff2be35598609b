package release

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestSDKVersionsAgree: the AssemblyScript SDK's package says the release
// this tree becomes, as the Go SDK's tag will (release.Next).
func TestSDKVersionsAgree(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	b, err := os.ReadFile(filepath.Join(root, "sdk", "assemblyscript", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Name, Version string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Version != Next {
		t.Errorf("sdk/assemblyscript/package.json says %s; release.Next is %s: release them together", pkg.Version, Next)
	}
	if got := Read().SDKs["assemblyscript"]; got != pkg.Name+" "+pkg.Version {
		t.Errorf("Read says the AssemblyScript SDK is %q; its package is %s %s", got, pkg.Name, pkg.Version)
	}
}

// TestRead: without a tag, a build says the next release, -dev; a tag
// set at build time wins; the line names the ABI.
func TestRead(t *testing.T) {
	in := Read()
	if in.Version != "v"+Next+"-dev" {
		t.Errorf("untagged test build says %q", in.Version)
	}
	if !strings.Contains(in.String(), "plugin ABI 1.") || !strings.HasPrefix(in.String(), "ruled v") {
		t.Errorf("line %q", in.String())
	}
	tag, commit = "v9.9.9", "0123456789abcdef0123"
	defer func() { tag, commit = "", "" }()
	in = Read()
	if in.Version != "v9.9.9" || in.Short() != "0123456789ab"+map[bool]string{true: "+changes"}[in.Modified] {
		t.Errorf("tagged build %+v", in)
	}
}
