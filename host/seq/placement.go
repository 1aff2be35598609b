package seq

// Placement says where a run is decided and where its records go, by its
// rule and concurrency key. One process deciding every run (the zero
// Placement) files every record under PendingHash. Several sharing the
// runs (a fleet: host/placement places them by the shard of their rule and
// key) give each a place — the process holding it decides its runs and
// keeps its records in the place's own hash — and a place can move: a run
// whose place moved away is let go (ReleaseWhere), its records stay for
// the new holder, who replays that one hash (ReplayHash).
//
// It is handed over at construction: HashOf to the PendingStore
// (NewPendingStore), Owns to the Runner (RunnerConfig.Placement); give
// both the same value.
type Placement struct {
	// HashOf names the hash a rule's records for key go in; nil:
	// PendingHash.
	HashOf func(rule, key string) string
	// Owns reports whether this process decides a rule's runs for key. A
	// trigger whose key it does not is left alone — not started, and its
	// Trigger.Done not called — for the place's holder. nil: every key
	// is this process's.
	Owns func(rule, key string) bool
}
