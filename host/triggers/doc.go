// Package triggers holds the topic → rule index in memory, so the bus reader
// finds the rules an event triggers (and the rules it cancels) without
// asking a datastore and without scanning every rule: literal topics are a
// map lookup; only patterns with wildcards are matched one by one.
//
// An Index is immutable: a change of rules builds a new one and swaps it in
// (the daemon publishes it copy-on-write), so readers never lock.
// It owns no goroutine.
package triggers
