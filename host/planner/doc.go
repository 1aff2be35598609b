// Package planner decides what a supply cycle may serve: strict priority
// across bands, fleet-wide, and fair shares across fairness keys within the
// band served, within the workers' capacity.
//
// It is the policy of host/pipeline's planning phase, and the
// same policy the device's worker pool applies to its own queue (host/pool:
// band 0 first, keys taking turns): one rule, whichever caller asks.
//
// Strict priority: every shard's cycle reports its minimum due band to a
// Board, and a shard whose band is worse than the best band any shard holds
// serves nothing that cycle. A band-5 flood therefore yields to a band-0 step
// within one cycle of that step's shard reporting it, wherever it is. The
// Board is in memory for the shards of one process (NewBoard); fleet mode
// gives each process's planner a Board over Redis.
//
// Fair shares: the capacity is divided among the keys that have work by
// max-min fairness (water-filling): each key gets an equal share, a key that
// needs less than its share gives the rest to the others, and the slots left
// over after the equal division go to the keys in turn, starting one key
// further each cycle, so over cycles no key is favoured by its name.
//
// It owns no goroutine and does no I/O; a Planner is safe for concurrent use
// by the pipelines of several shards.
package planner
