// Package placement says which process runs what, and in a fleet makes
// this process a member: placement of a rule's run for a key (its shard,
// the pending hash its records go in, whether this process holds it), and
// the adapter between a fleet.Member and the engine — routing an accepted
// event to the rules it triggers, executing an admitted item on the
// runner, replaying a shard taken and letting go of one lost.
//
// Outside a fleet there is one place: every run is this process's and
// its records go in the standard hash (a nil *Placement answers so). In a
// fleet (Config.Shards), events are accepted into Redis's ingest stream
// rather than dispatched; the member admits them into the shards'
// backlogs, holds this process's share of the shards, and hands each item
// it takes to Execute. Pending records are filed per shard and replayed by
// whoever takes the shard; the Redis pub/sub bus still carries every
// event, for cancel-on (every process ends its own matching runs) and for
// watchers, but triggers nothing.
//
// The placement is made before the engine (the runner is given Owns and
// the pending store PendingHash at construction) and joins the fleet once
// the engine and the bus are up (Join). It refuses membership's own
// business — leases, fencing, the supply pipelines — which is
// host/fleet's. Goroutines: the member's, started by Join and stopped by
// Close.
package placement
