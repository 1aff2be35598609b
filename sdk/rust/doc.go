// Package rustsdk is the Rust SDK's sources, for `ruled new plugin --lang
// rust`, which writes them into a new plugin's directory (ruled/): the
// crate has no dependencies and builds with rustc alone.
package rustsdk
