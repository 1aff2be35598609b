// Package catalog owns the plugins a process has loaded: each plugin's
// slot (the module hot reload swaps), its reload history and backoff, the
// files that never loaded and why, the configured handles the rules call,
// and the module store — modules kept by content while a waiting step
// needs the code it was scheduled with (the fingerprint's digest), live
// and after a restart.
//
// A load is a transaction (Catalog.Load): compile, handshake, describe,
// check the grant, start a first instance (wasm.Runtime.Load), let the
// caller check that no loaded rule breaks (Config.Check), and only then
// swap. On any failure the last good version keeps serving.
//
// It refuses what is not a plugin's: which rules use a plugin, which
// records pin a digest, and when to reload are the caller's (host/engine
// passes them in: Config.Check, Collect's referenced, Reload's paths). It
// owns no goroutine; Load of a whole directory (LoadDir) runs a few loads
// in parallel and returns when all are done.
package catalog
