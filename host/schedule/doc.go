// Package schedule runs rules' schedules (`on: {schedule}` and `{every}`)
// durably: when each occurrence comes due, what an occurrence that fell
// while the process was down does (the schedule's missed: policy), and
// what the store keeps so that a restart, a kill -9 or another fleet
// member knows which occurrence ran last.
//
// The store holds one small record a schedule — its key (expression,
// zone or interval) and the last occurrence handled — written when an
// occurrence has been taken (its run wrote its first pending record or
// ended: the trigger's Done) or passed over, and at no other time: an idle
// device with a nightly schedule writes once a night. An occurrence fired
// and not yet taken when the process dies is fired again at the next
// start, under the same run id (so its steps' idempotency keys repeat, and
// a run already replayed from its record is not started twice).
//
// The wall clock is checked, not trusted. A timer waits for the next
// occurrence, at most Config.MaxWait (a minute on the real clock), and
// the wall clock is read again when it fires: a clock set back meanwhile
// makes it wait again (nothing runs before its time, or twice), a clock
// set forward makes what it passed over run as missed: says, as an outage
// does, noticed within MaxWait. A clock behind the last occurrence run (set
// back, or a device without a real-time clock booting in 1970) fires
// nothing until it has passed that occurrence again, looking once a
// minute (Poll). Between occurrences nothing is read or written.
// Daylight-saving changes are cronspec's: each civil time once.
//
// It owns one record a schedule and a timer each (sched's heap; no
// goroutine of its own: checks run on the caller's workers, Config.Submit,
// and Stop stops the timers). It refuses knowing what a run is: an
// occurrence is handed to Config.Fire.
package schedule
