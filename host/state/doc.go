// Package state keeps the world's current state: the latest event of each
// entity, with when it was last seen and when it last changed.
//
// An entity is what a stream of reports is about. By default it is the
// event's topic: door.front is one entity, its latest event its state.
// A topic that carries many things (scooter.telemetry for a fleet) names
// a key field (Config.Keys): its entities are <topic>/<key>, such as
// scooter.telemetry/sc-42. Rules read the state of entities other than
// their trigger's, and the state their trigger's entity had before it
// (Home Assistant's from_state): see Observe's Change.
//
// A report that changes nothing is no change. Two events are the same
// state when their JSON is the same but for the order of members,
// whitespace and the "id" and "time" members, which every report has
// anew; the state kept leaves them out (the event's id is kept beside
// it). It costs no store write: only the time it was seen moves, kept
// in memory and written every 30 s (SeenEvery).
//
// # What it owns
//
// The table in memory, its bounds (Config.MaxEntities, Config.MaxBytes:
// a new entity or a larger state past them is refused, counted and logged
// at most once a second), and its copy in the store: changes are written
// together, within 10 ms of the first (one write, one commit and fsync on
// bbolt), by one goroutine that Close stops after a last write. A start
// reads the table back (New).
//
// # What it refuses
//
// Knowing rules, runs or the bus: which events it hears is its caller's
// choice (ingest hands it every event it dispatches), and what a change
// means — a trigger, a hold — is the rule's. It declares the store it
// needs (Store) and does not know which one it has.
//
// # What it does not promise
//
// A change is written within 10 ms, not before the event is acknowledged:
// a kill -9 loses at most the changes of the last 10 ms (and up to 30 s
// of "last seen" times). The events themselves are not lost by that —
// one a durable rule takes is journaled (package journal) — only the
// table's memory of them: after the restart an entity's state is the one
// before. Writing each change before its 202 would cost an fsync an event
// (issue 39's lesson). The exception is a change a change trigger or a
// hold hears: its caller writes it first (Sync), so what the rule decided
// on is what a restart finds.
//
// # Keys
//
//	ruled:state    entity id → its latest event, when it was last seen and
//	               last changed (JSON)
package state
