// Package ingest owns the way in: taking an accepted event onto the bus
// (from an HTTP client, the events file or a plugin's publish), the
// journal admissions that make "accepted" mean "kept" for rules with a
// durable step, dispatch from the bus to the rules an event cancels and
// triggers, re-admission at start of what the journal still holds, and a
// plugin's fire of another rule. A plugin's publish is offered to the
// outbox first (SendOut: the MQTT client's), which keeps what its routes
// take for the broker before the publishing step counts as done (the
// call's owed writes, wasm.Call.Owed; the publish waits itself when its
// caller takes none).
//
// What it does when it cannot take an event now depends on where the
// event comes from (Source): a client is told to retry (ErrBusy,
// ErrBusDown → 503), an input with no one to tell waits for room, a
// plugin's publish never waits for the pool its own worker is in.
//
// On the in-process bus (ConnectLocal) Take dispatches what it accepts
// itself, after the bus's subscribers have seen it: one pass an event,
// the index it was planned on and its journal entry in hand. On Redis the
// event comes back through the subscription (DispatchWaiting), and its
// journal entry waits for it by the event's id.
//
// It refuses what is not the way in: which rules an event triggers is the
// rule set's (ruleset.Set.Index), a run is the runner's (Runner), room is
// the pool's (Room), and the bus it publishes on is handed in once the
// bus is open (Connect), because the start replays and re-admits before
// the bus opens. It owns no goroutine: ReadEvents runs on the caller's,
// until its input ends or Config.Stop is closed.
package ingest
