// Package hold runs holds: a change trigger with for: ("door open for
// 10 minutes") runs its rule only once the entity has kept the value it
// changed to that long.
//
// A hold begins with the report that fires the change trigger (package
// state decides: Fires). A report that keeps the field's value — a repeat,
// or a change of another field — leaves it running; it does not restart
// it. A report that changes the value cancels it. When it comes due its
// rule runs with the event that began it, once: the field must change
// again, away and back, before another hold begins.
//
// Home Assistant drops a pending for: on a restart; a hold here is a
// record in the store, written when it begins and removed when its rule
// has taken its run (the trigger's Done) or it is cancelled. A start
// reads them back (Restore) and checks each against the entity's state as
// the state table has it: a hold whose value the state no longer has is
// dropped; one still holding waits out the rest of its time, or runs at
// once if it came due while the process was down — within the replay
// window, past it dropped with its reason. A kill between a hold's run
// starting and its record's removal runs it again at the next start (at
// least once, as a schedule's occurrence). A rule changed meanwhile so
// that the trigger is not the one the hold began under drops it.
//
// It owns the holds in memory and their records (ruled:holds), a timer
// each on the daemon's clock (Close stops them), and their bound
// (Config.Max: a hold past it is refused, counted and warned). It refuses
// to know what a run is (Config.Fire) and where the states come from
// (Config.Entity).
//
// # Keys
//
//	ruled:holds    <rule>\x00<trigger>\x00<entity>\x00<began, unix ns> →
//	               the hold: the trigger it began under, when it is due,
//	               the event that began it
package hold
