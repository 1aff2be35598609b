// Package release says what this build of ruled is: the version it
// carries (a release tag set at build time, the module version `go
// install` stamps, or the next release's number marked -dev), the commit
// and whether the tree had changes, the Go toolchain and platform, the
// plugin ABI it speaks, and the SDK releases that go with it.
//
// It owns those numbers, once: `ruled version`, /metrics'
// ruled_build_info, `ruled status` and the packages built by `make dist`
// read them here. It refuses to read anything but the binary's own build
// information: no files, no network.
package release
