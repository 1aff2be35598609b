package build

import "embed"

// Modules are the first-party plugins' modules, by file name.
//
//go:embed expr.wasm publish.wasm log.wasm fire.wasm http.wasm
var Modules embed.FS
