// Package candidates is the cache between the supply pipelines and the
// workers: each shard's pipeline replaces its shard's candidates every
// cycle (host/pipeline's pushing phase), and workers pop from it, the best
// band first across every shard, each shard's candidates in the order its
// cycle chose.
//
// Replacing rather than appending is what keeps a cycle's decisions fresh:
// candidates a cycle pushed and the workers had not taken yet are
// discarded by the next cycle's push (and counted, so a pipeline turning
// faster than the workers drain shows), and a shard outranked by a better
// band elsewhere pushes nothing, which empties its share of the cache at
// once. The items themselves stay in the datastore's backlog; a discarded
// candidate is only a pointer a later cycle fetches again.
//
// It owns no goroutine and is safe for concurrent use.
package candidates
