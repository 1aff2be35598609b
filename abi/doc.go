// Package abi is the contract between ruled's host and the plugins it runs:
// the names of the exports a plugin provides and of the host functions it may
// import, the ABI version checked at load, the status codes both sides return,
// and the encodings that cross the boundary (the event and config view, the
// call header, the describe document).
//
// ABI.md beside this file is the human-readable contract; this package is the
// same contract in code, and both the host (host/wasm) and the Go guest SDK
// (sdk/go) import it so the two sides cannot drift apart.
//
// The package imports only the standard library and owns no goroutine. It
// refuses everything that is a policy rather than an encoding: limits,
// capability grants and what a status means for a run belong to the host.
//
// # Notes
//
//   - The view format (see View) exists so that a guest reads event fields
//     without parsing JSON: the host decodes an event once, natively, and
//     every rule the event triggers reads the same bytes. Decoding JSON inside
//     a Go guest costs about 30 µs per 200-byte event; a view lookup costs a
//     binary search.
//   - Everything here is little-endian, like wasm linear memory.
package abi
