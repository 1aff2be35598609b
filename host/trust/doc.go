// Package trust decides whether a file is one a key the operator trusts
// signed: ed25519 keys (Go's standard library), a detached signature file
// beside each signed file (publish.wasm.sig beside publish.wasm), and a
// keyring of trusted public keys with revoked ids (issue 44).
//
// # What it owns
//
// Keys (Generate; a private key file: MarshalKey, ParseKey; a public key
// as the config writes it: ed25519:<id>:<base64>), signing (Key.Sign: the
// file's base name and sha256, signed under a domain string, so a signed
// publish.wasm renamed log.wasm is not log.wasm's, and a signature is
// never one of another protocol), signature files (bounded at MaxSig,
// strict JSON), and verification with the reason a file is refused
// (Error: unsigned, malformed, unknown key, revoked key, renamed,
// tampered, bad signature), naming the file and the key.
//
// A Gate is the keyring applied: the places the operator requires
// signatures at (plugins, rules, deploy), the files it refuses now and
// the refusals it counted, for status, the console and /metrics.
//
// # What it refuses
//
// Deciding what to do with an untrusted file: what keeps serving
// meanwhile (the last good version, always) is its callers' — the
// catalog's, the rule set's, the deployment's. It reads no file but a
// signature (ReadSig), and owns no goroutine.
package trust
