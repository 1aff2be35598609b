// Package store keeps ruled's state: on an embedded bbolt file by default
// (Bolt, nothing to install) or on a Redis or Valkey server (Redis). It
// implements the small interfaces its consumers declare (the sequencer's
// Hasher and Commander, the wasm host's KV) and declares none of its own:
// what a consumer needs is the consumer's to say.
//
// It refuses to know what it stores. A pending record is a field holding
// bytes, not a type this package decodes; the sequencer owns its records,
// the wasm host owns its scopes' meaning, and this package owns only the
// keys, their durability and the kv quota.
//
// # Keys
//
// Every key starts with "ruled:", in Redis and, as a bucket name, in bbolt:
// the two backends name things alike, so a dump of one reads like the other.
//
//	ruled:pending            the sequencer's pending records: one field per
//	                         waiting durable step, keyed by run id (the name
//	                         is the sequencer's constant; written here to
//	                         keep the list whole)
//	ruled:journal            accepted events not yet taken by every durable
//	                         rule they trigger (package journal's)
//	ruled:kv:<plugin>        one plugin's kv scope: one field per key. In
//	                         Redis the field "" holds the scope's byte count
//	                         (plugin keys are never empty)
//
// host/keyspace/KEYS.md lists every key, the execution log's, task states' and fleet
// mode's per-shard backlog and leases ({shard} hash tags) included. A hash
// or scope left empty is deleted, in both backends.
//
// # Fleet backlog (Redis)
//
// RedisBacklog is host/pipeline's Source over Redis, with the writes the
// pipeline does not make: Add, and Take, which claims an item only under
// the shard's current fencing token (leases: Acquire, Renew, Release).
//
// # Execution log
//
// runlog.Store three ways: SegmentLog (a device: append-only segment
// files, the index in memory), RedisLog (the seed's staging keys and one
// hash per run), and BoltLog (the bbolt file it used before segments, kept
// to read and convert an old log.db).
//
// # Deployments (Redis)
//
// RedisDeploy keeps what `ruled deploy` puts in Redis: rule files and
// modules by content digest, and one manifest naming them (host/keyspace/KEYS.md). It
// checks names and digests; what the files mean is the daemon's.
//
// # Durability (bbolt)
//
// Bolt fsyncs every write transaction before returning (bbolt's default;
// NoSync stays off). A pending record acknowledged to the sequencer is on
// the disk: it survives kill -9 and a power cut. kill -9 alone would not
// need the fsync (the page cache outlives the process), but a scooter's
// battery can be pulled, and losing a scheduled step to that is the case
// durability exists for. The cost, measured by BenchmarkPendingRecord on
// this project's ext4 virtual disk: 1.1-1.6 ms per pending record (an HSet
// and an HDel, two commits of two fdatasyncs each) against about 50 µs with
// NoSync; a kv Set, one commit, 0.35-0.47 ms against about 50 µs. An SD card
// or eMMC can take several times that per fsync. A durable step writes its
// record once and deletes it once, so this is milliseconds per delayed step,
// not per event. The freelist is not synced (NoFreelistSync): bbolt rebuilds
// it with a scan at open, which is cheap for a file this size, and every
// commit writes a page less.
//
// Writes that arrive together share one transaction and its fsync (group
// commit, group.go): a write waits only for the commit in progress, and no
// write returns before the commit holding it is synced. Bolt.Commits counts
// commits and the writes they held.
//
// Nothing is written unless asked: no background goroutine, no compaction,
// no statistics flush, and a read or a delete of something missing runs no
// commit (bbolt would otherwise fsync a new meta page even for an empty
// transaction). An idle daemon leaves the file byte for byte unchanged, so
// a device's flash wears only with work done.
//
// # Durability (Redis)
//
// On Redis an acknowledged write is as durable as the server is told to
// make it: the same guarantee as bbolt's needs appendonly yes with
// appendfsync always (0.6-7 ms per pending record here, noisier than
// bbolt); the common everysec loses up to a second of writes when the
// server's machine crashes, and a server without persistence loses all of
// them when it restarts. The store does not check the server's settings:
// they are the operator's.
//
// # Concurrency
//
// Bolt and Redis are safe for concurrent use. Bolt starts no goroutine.
// SegmentLog runs one, its syncer: it wakes once a second and syncs what
// was written since, so an idle log still writes nothing; Close stops it
// (a log opened read-only runs none).
// Redis owns a go-redis client: its connections and whatever goroutines
// go-redis runs for them (none at rest with the options OpenRedis sets;
// maintenance notifications, which would add handoff workers, are off).
// Close releases them. A second process opening the same
// bbolt file waits BoltOptions.LockTimeout for the lock and then fails with
// ErrLocked, naming the pid that holds it.
//
// # Kv quota
//
// Each plugin's scope holds at most Quota.Keys keys and Quota.Bytes bytes
// of keys and values (defaults 1,000 and 1 MiB). A Set that would go over
// fails with an error wrapping ErrQuota, which the guest sees as
// StatusTooLarge. The check is exact under concurrent writers: bbolt counts
// inside its single write transaction, Redis inside a Lua script.
package store
