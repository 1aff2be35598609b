package assemblyscript

import "embed"

// Files are the package as npm packs it (package.json's files): written
// into a new plugin's ruled-sdk/ and installed from there.
//
//go:embed package.json index.ts exports.ts plugin.asconfig.json README.md assembly/*.ts
var Files embed.FS
