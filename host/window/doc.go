// Package window keeps windows: counts, sums, averages, least and most
// of the events of the last minutes, of a day, or of the last N events,
// per key (eKuiper's windows, Home Assistant's statistics sensor and
// utility meter).
//
// A window is a Spec — sliding (the last 15m, in buckets), tumbling (a
// period on the epoch's grid, or a calendar day or week in a time zone,
// from local midnight to the next across daylight-saving changes), or
// count (the last 100 events) — and a series per key. What it keeps per
// key is bounded by the spec, never by the events: a sliding window's
// buckets that hold events (at most Buckets of 72 bytes), a tumbling
// window's one Agg, a count window's Events values. A sliding window's
// far edge moves a bucket at a time: it covers between Last − Last/Buckets
// and Last of the past — the cost of not keeping each event.
//
// # What it owns
//
// The series, their bounds (a window's max keys: a new key past it is
// refused, counted and logged at most once a second; a full sliding
// window first forgets keys whose buckets all fell out), lateness (an
// event older than the window holds, or of a tumbling period closed
// already, is not counted; one more than MaxSkew ahead of the clock is
// refused, one less counts as now), the tumbling windows' closes (a
// timer at each period's end; each key closed once, with its
// aggregates, a key with none closed with a count of 0 once and then
// forgotten), and their records in the store (keyspace.Windows): what
// changed is written by Sync, which its caller runs before it
// acknowledges the events counted, so a group of them costs one write.
// A close is recorded before its rules run and removed once they took
// it: a start fires again what a kill left untaken, and closes each
// period that ended while the daemon was down, once.
//
// A fleet's windows are Shared: the same arithmetic on series kept in
// Redis (keyspace.FleetWindows), each write a compare-and-set by version
// that the script appending the event to the ingest stream makes (Plan),
// so members agree on one value, and an event is counted when it is
// accepted; a tumbling key's series is one a period, written with its
// close event, which the members' poll appends when the period ends.
//
// # What it refuses
//
// Knowing events, rules or runs: which events a window hears, its key,
// number and time are its caller's (host/daemon's, from the rule
// files' windows:), and what a close starts is Config.Fire's. It
// declares the store it needs (Store).
//
// # Keys
//
//	ruled:windows   w\0<window> → its spec; s\0<window>\0<key> → a key's
//	                series; c\0<window>\0<key>\0<start> → a close not taken
package window
