// Package fleet makes a ruled process one member of a fleet sharing work
// over one Redis (or a Redis Cluster): it admits accepted events from the
// ingest stream into the shards' backlogs, holds a fair share of the shards
// through leases with fencing tokens, runs one supply pipeline per shard it
// holds (host/pipeline), and gives what the pipelines select to its
// workers, who run each item through an Executor.
//
// What it promises, and how:
//
//   - Every accepted event is admitted once fleet-wide. An event is accepted
//     when its XADD is acknowledged; a member reads it through the stream's
//     consumer group, adds one backlog item per rule it triggers (the item
//     id is the stream id and the rule, so an admission retried after a
//     crash adds nothing twice), and only then acknowledges it. Entries a
//     dead member read and never acknowledged are claimed by another once
//     idle for a lease's TTL.
//   - No item runs on two members at once, and nothing taken is lost. A
//     worker takes an item only under its shard's current fencing token;
//     the item stays in flight until done, and a member that takes over a
//     shard first queues again whatever its predecessor took and never
//     finished (at least once: an action's idempotency key makes a repeat
//     harmless), then starts the shard's pipeline.
//   - A dead member's shards are taken over within a lease's TTL. A lease
//     is renewed only while the shard's pipeline shows progress
//     (Pipeline.WorkingFor under half the TTL), so a member whose scans hang
//     cannot hold work forever.
//   - Strict priority holds fleet-wide within a member (one planner for its
//     shards) and across members through the candidates each shard pushes;
//     fair shares hold within a band (host/planner).
//
// Which shard an item goes to: a hash of its rule and fairness key, so one
// key's runs stay on one shard, where its mode (single, queue) is decided.
//
// A Member owns its goroutines: Run starts them and returns when its
// context is done and they have all ended (leases released, so the others
// take the shards over at once rather than after the TTL).
package fleet
