// Package testkit holds the fakes the repository's tests share, written
// by hand against the small interfaces their consumers declare: an
// in-memory Hasher (seq.Hasher, journal.Hasher, task.Hasher) that can go
// down or lose an answer, a Log that records what a package logs (the
// Logger interfaces of seq, journal, task, bus, fleet, runlog), and a
// Buffer that is safe to write while a test reads it. Fakes are for unit
// tests of logic; the end-to-end tests use the real stores.
//
// It imports nothing but the standard library (not testing: sdk/ruletest,
// which cmd/ruled links, uses its Buffer), and owns no goroutine.
package testkit
