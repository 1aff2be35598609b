package release

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/ruled-dev/ruled/abi"
)

// Next is the release this tree becomes when it is tagged: the tag is
// v<Next> for the daemon's module and abi/v<Next>, sdk/go/v<Next> for the
// SDK's, and the AssemblyScript SDK's package.json says <Next> (a test
// holds it to that). A build from an untagged tree says <Next>-dev.
const Next = "0.1.0"

// tag, commit and modified are set at build time, by make (-ldflags -X
// github.com/ruled-dev/ruled/internal/release.tag=v0.1.0 …): the release
// tag of the tree built when it has one, its commit, and "true" when the
// tree had changes. A build without them reads Go's build information
// (which -buildvcs=false, common in CI, leaves without a commit).
var (
	tag      string
	commit   string
	modified string
)

// Info is one build's identity.
type Info struct {
	// Version is v<semver>: the tag given at build time, the module
	// version `go install …@vX` recorded, or v<Next>-dev.
	Version string `json:"version"`
	// Commit is the VCS revision built, "" when unknown (a build outside
	// a checkout); Modified says the tree had uncommitted changes.
	Commit   string `json:"commit,omitempty"`
	Time     string `json:"commit_time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"` // GOOS/GOARCH, and GOARM for 32-bit arm
	// ABI is the plugin ABI this host speaks, major.minor: it loads
	// plugins of the same major and a minor no greater.
	ABI string `json:"abi"`
	// SDKs are the SDK releases built for this ABI, by language.
	SDKs map[string]string `json:"sdks"`
}

// Read is this binary's Info.
func Read() Info {
	in := Info{Version: "v" + Next + "-dev", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		ABI:  abi.VersionString(abi.Version),
		SDKs: map[string]string{"go": "github.com/ruled-dev/ruled/sdk/go v" + Next, "assemblyscript": "@ruled/sdk-assemblyscript " + Next}}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			in.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Commit = s.Value
			case "vcs.time":
				in.Time = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			case "GOARM":
				in.Platform += "/v" + s.Value
			}
		}
	}
	if tag != "" {
		in.Version = tag
	}
	if commit != "" {
		in.Commit, in.Modified = commit, modified == "true"
	}
	return in
}

// Short is the commit's first 12 hex digits, with "+changes" for a
// modified tree; "" when the commit is unknown.
func (in Info) Short() string {
	c := in.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if c != "" && in.Modified {
		c += "+changes"
	}
	return c
}

// String is the version line: "ruled v0.1.0 (commit 1a2b3c4d5e6f,
// go1.26.8, linux/arm64), plugin ABI 1.4".
func (in Info) String() string {
	var b strings.Builder
	b.WriteString("ruled " + in.Version + " (")
	if c := in.Short(); c != "" {
		b.WriteString("commit " + c + ", ")
	}
	b.WriteString(in.Go + ", " + in.Platform + "), plugin ABI " + in.ABI)
	return b.String()
}
