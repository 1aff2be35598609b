// Package testkit holds the fakes the repository's tests share, written
// by hand against the small interfaces their consumers declare: an
// in-memory Hasher (seq.Hasher, journal.Hasher, task.Hasher, mqtt.Hasher)
// that can go down or lose an answer, a Log that records what a package
// logs (the Logger interfaces of seq, journal, task, bus, fleet, runlog,
// mqtt), and Eventually, the poll loop that waits for a condition. Fakes are
// for unit tests of logic; the end-to-end tests use the real stores. (A
// buffer safe to write while read is internal/syncbuf: sdk/ruletest, which
// is not a test, uses it too.)
//
// It is imported by tests only, imports nothing but the standard library,
// and owns no goroutine.
package testkit
