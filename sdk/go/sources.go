//go:build !wasip1

package ruled

import "embed"

// Sources are this module's files (tests included; a copier leaves them
// out): `ruled new plugin --lang go` writes them into the project, so a
// plugin builds with no network, on the SDK of the ruled that made it.
// Never in a plugin: wasip1 builds leave this file out.
//
//go:embed go.mod *.go tmpl/*.go
var Sources embed.FS
