// Package pipeline runs one shard's supply cycle: it looks at what is due,
// asks the planner what it may serve, fetches that, and pushes it to the
// candidate cache the workers drain (ARCHITECTURE.md, "Where the design came from").
//
// One cycle has five phases, and they name everything here:
//
//	sleep -> tallying -> planning -> fetching -> pushing
//
// There is no loop and no goroutine in this package. Cycle paces itself —
// it sleeps at the FRONT, for whatever remains of the interval since the
// last cycle began — so a caller drives it in a tight loop and holds no
// cadence policy of its own:
//
//	for {
//		select {
//		case <-ctx.Done():
//			return
//		default:
//		}
//		observe(p.Cycle(ctx))
//	}
//
// Any delay the caller adds between calls is therefore absorbed rather than
// added to the period.
//
// Cycle NEVER returns an error, only a Result carrying one: every failure it
// can hit is already dealt with here, and the next cycle retries. A caller
// reads the Result for its log line and carries on.
//
// It drives a durable backlog in a datastore (fleet mode: each held shard's
// backlog in Redis) and is the only part of ruled with a cadence; a device's
// worker pool is woken on submit instead (host/pool). Both order work by the
// same policy, host/planner's.
//
// Adapted from the seed: backlog items are named by strings (a run id and a
// step), not ints, so FetchSteps returns string ids.
//
// SetInterval and SetMinGap are live and safe to call from anywhere; Cycle
// itself is not safe for concurrent use — one Pipeline per shard, driven by
// one goroutine.
package pipeline
