// Package cronspec owns the language of schedules — the five-field cron
// expressions of `on: {schedule: ...}` and the intervals of `on: {every:
// ...}` — and when each next comes due.
//
// Parse reads a standard cron expression (minute hour day-of-month month
// day-of-week, with *, lists, ranges, steps, month and day names, and the
// @yearly … @hourly shorthands) and refuses anything else with the field
// it is in, its offset and a hint: the rule parser turns the offset into
// the file's line and column. Tests hold it to robfig/cron/v3's standard
// parser (the cron most Go programs use): every expression both accept
// matches the same minutes.
//
// Next is where it parts from cron implementations that add minutes to
// instants: it walks wall-clock (civil) times in the schedule's zone, so
// a daylight-saving change neither doubles nor drops an occurrence. Each
// matching civil time comes due once, at its first instant: the repeated
// hour of an autumn change runs nothing twice, and a civil time that does
// not exist (the skipped hour of a spring change) comes due at the end of
// the gap, once however many matching times fell in it.
//
// It refuses time itself: it owns no clock, no timer and no store (the
// durable scheduler, host/schedule, does). It embeds the time zone
// database (time/tzdata), so a device without /usr/share/zoneinfo reads
// Europe/Berlin as a server does and lint and the daemon agree.
package cronspec
