//go:build !wasip1

package abi

import "embed"

// Sources are this module's files (tests included; a copier leaves them
// out): `ruled new plugin --lang go` writes them into the project beside
// the Go SDK's, so a plugin builds with no network, on the ABI of the
// ruled that made it. Never in a plugin: wasip1 builds leave this file out.
//
//go:embed go.mod *.go tmpl/*.go
var Sources embed.FS
