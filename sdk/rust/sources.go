package rustsdk

import "embed"

// Files are Cargo.toml, build.sh and src/.
//
//go:embed Cargo.toml build.sh src/lib.rs src/tmpl.rs src/native.rs
var Files embed.FS
