// Package keyspace names every key ruled keeps, in Redis and (as bucket
// names) in bbolt: the one place the "ruled:" prefix is spelled. KEYS.md
// beside this file is the table of them, with each key's type and owner.
//
// It owns names only. What a key holds is its owner's to say — the
// sequencer's pending records, the journal's entries, the execution log's
// runs —, and a package that reads or writes a key imports its name from
// here rather than spelling it, so a dump of one backend reads like the
// other and a renamed key cannot leave a reader behind.
//
// It refuses everything else: no client, no encoding, no imports but the
// standard library. It sits below every package of host/ (.ci/layers.sh).
package keyspace
