// Package plugins holds ruled's first-party plugins, each a main package
// built to wasm with the Go SDK:
//
//   - expr: conditions written as expressions (expr-lang), compiled once per
//     config.
//   - publish: an action that puts an event on the bus.
//   - log: an action that writes a line to the daemon's log.
//
// They are ordinary plugins: they reach the host only through ABI v1, and
// they pass through the same grants and limits as a third party's.
package plugins
