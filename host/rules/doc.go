// Package rules owns the rule file format: YAML files of rules (triggers,
// condition, concurrency mode, cooldown, repeat, cancel-on, priority, key,
// steps), parsed strictly so that every mistake is reported with its
// file:line:col and a hint, all in one pass. It checks references against a
// catalog of plugin functions the caller provides, computes step
// fingerprints, and matches topic patterns.
//
// It refuses to run anything: turning a Rule into runnable steps (configuring
// plugin handles) is the daemon's wiring, and walking them is host/seq's.
// It owns no goroutine.
//
// # The format
//
// A file is a YAML list of rules, or a mapping whose rules: is that
// list and whose windows: lists windows (see Windows below); a stream of
// several documents of either form is read document by document. Anchors, aliases and merge keys (<<) work anywhere. A file is at most 4 MiB, and may expand through its aliases to 16 values a byte up to 100,000 values (or as many values as it has bytes, when that is more: any file without aliases fits).
//
//	# rules/scooter.yaml
//	- id: low-battery                   # required: [a-z0-9][a-z0-9_-]*, at most 64, unique across the directory
//	  description: warn, then call the depot
//	  on: scooter.telemetry             # required: a topic pattern, a schedule, a change, or a list of them
//	  # on: {schedule: "0 3 * * *", timezone: Europe/Berlin, missed: once, within: 6h}
//	  # on: {every: 15m}                # or a fixed interval (see Schedules below)
//	  # on: {sun: sunset, offset: -30m} # or the sun at the config's location (see Schedules below)
//	  # on: {topic: scooter.telemetry, changes: locked, from: false, to: true} # a change (see Changes below)
//	  # on: {topic: door.front, changes: open, to: true, for: 10m} # a hold: open for 10 minutes
//	  when: battery < 20 && !charging   # an expr expression, or {do: plugin.condition, with: {...}}
//	  mode: queue                       # single (default), restart, queue, parallel
//	  max: 10                           # queue: runs live and waiting; parallel: at once (default 10); past it: refused
//	  max-keys: 10000                   # keys holding runs, queued or throttled triggers, a cooldown or a debounce; a new key past it: refused (the default)
//	  cooldown: 10m                     # a Go duration above 0
//	  debounce: {for: 30s, max-wait: 5m} # or debounce: 30s: one run, with the last trigger, once the key is quiet
//	  throttle: {limit: 10, per: 1m, burst: 20, excess: queue} # runs a key may start; excess: queue (default) or drop
//	  repeat: {passes: 3, interval: 1m} # or just a number of passes (default 1)
//	  cancel-on:                        # a pattern, a list of patterns, or a list of {topic, match}
//	    - {topic: scooter.charging.started, match: vehicle}
//	  priority: 0                       # the band, 0 first
//	  key: vehicle                      # the event field runs are counted by (left out: the whole rule)
//	  on-plugin-change: pin             # pin (default), upgrade, drop
//	  once: false                       # true: the rule completes after its first successful run
//	  on-error: {max: 8, within: 4h, sleep: 10m} # the error budget (these are the defaults)
//	  on-pause: hold                    # while paused or asleep: drop, hold, {hold: N} (default:
//	                                    # hold up to 1000 with a durable step, else drop)
//	  retry: 3                          # every step's retry (default: none); a step's own replaces it
//	  vars:                             # worked out once from the trigger when a run starts
//	    zone: "{{data.zone}}"           # read by steps as vars.zone (a template: see Step outputs)
//	    limit: 20
//	  states:                           # entities' states the rule reads as states.<name> (see States below)
//	    depot: depot.status             # an entity: a topic, or <topic>/<key>
//	    dock: {entity: "dock.{{vehicle}}", max-age: 1h} # filled from the trigger; stale after 1h: missing
//	  max-age: 24h                      # the default max-age of the rule's states (default: none)
//	  steps:                            # required, at least one
//	    - name: warn                    # unique in the rule; default: the step's index
//	      do: publish.publish           # required: plugin.action
//	      with: {topic: "alerts.{{vehicle}}"} # its output: {"topic": ...}, later steps' steps.warn.topic
//	      on-error: continue            # stop (default): a failure ends the run; continue: the next step runs
//	      retry:                        # a failed action is tried again: attempts counts every try
//	        attempts: 5                 # 1 to 100; retry: 5 is this with the defaults below
//	        backoff: 1s                 # the wait before the 2nd attempt (default 1s)
//	        factor: 2                   # each later wait is this many times the one before (1 to 10, default 2)
//	        max-backoff: 5m             # the longest wait (default 5m, or backoff if longer)
//	        jitter: 0.2                 # up to this share taken off each wait (0 to 1, default 0.2)
//	    - after: 30m                    # waits this long after the step before
//	      durable: true                 # survives a restart; needs after
//	      when: battery < 10 && vars.limit > 10
//	      do: publish.publish
//	      with: {topic: depot.pickup, payload: {after: "{{steps.warn.topic}}"}}
//	    - name: pickup                  # a wait-for step: waits for an event, no do
//	      wait-for:
//	        topic: depot.pickup.done    # required: a topic pattern
//	        match: vehicle              # paths equal in the awaited event and the trigger
//	        when: ok == true            # a condition on the awaited event (and steps., vars.)
//	        timeout: 2h                 # required, at most 8784h
//	        on-timeout: continue        # continue (default): goes on, steps.pickup.timeout true; stop: the run ends
//	  finally:                          # run when a run ends for any reason but the daemon stopping
//	    - name: safe                    # name, do, with, when only; unnamed: finally-<index>
//	      do: publish.publish
//	      with: {topic: "speed.{{vehicle}}.reset"}
//
// Topic patterns are segments joined by '.': `*` matches one segment and a
// final `>` one or more. A wildcard is a whole segment, no segment is empty,
// and a pattern that could only match the reserved ruled. topics is refused,
// since rules never see them.
//
// A string when: is an expression the host checks here (with the file's
// line and column) and evaluates itself, with no plugin loaded: the
// subset of expr-lang that host/exprcheck holds it to, with the answers
// and errors of the expr plugin, which {do: expr.expr, with: {expr:
// <string>}} calls (a string when:'s fingerprint is that call's):
// literals (1, 2.5, "s", 's', `raw`, true, false, nil, [1, "a"]), fields
// (battery, pos.lat, pos?.lat, tags[0], tags[-1], pos["lat"], $env.type),
// ! not - +, * / %, + -, == != < <= > >= (a < b < c chains), in, contains,
// startsWith, endsWith and their not forms, && and || or, ??, c ? a : b,
// len lower upper trim. Anything else of expr-lang (matches, predicates,
// maps, slices, let, other functions) is refused with a hint. One
// evaluation is bounded (exprcheck.MaxWork: about a million steps, each a
// node, an element or a member compared, 256 bytes of a string read; about a second
// at worst, as a plugin call's deadline): past it the condition fails. It
// is not a plugin call: the execution log names it expr.expr with no
// module digest, and ruled_plugin_call_seconds does not count it. A
// condition that fails (an error, not a no) counts among its rule's
// errors (ruled status's ERRORS, ruled_rule_errors_total) and against its
// error budget; it starts no run, so STARTED and FAILED do not count it,
// though the execution log keeps it as a failed run (ruled log ls).
// A with: becomes canonical JSON (Call.With): keys sorted, no space, YAML
// integers, floats, strings, booleans and null as themselves; what JSON
// cannot hold (non-string keys, NaN, infinities, binary, custom tags) is an
// error. Durations use Go's syntax (250ms, 5m, 1h30m): a bare number is
// refused, since it has no unit.
//
// # Schedules
//
// A schedule in on: fires the rule on the clock, with an event of topic
// ruled.schedule carrying rule, schedule, due (RFC 3339 in the schedule's
// zone) and late_ms: {schedule: "<cron>"} is a five-field cron expression
// (minute hour day-of-month month day-of-week; *, lists, ranges, steps,
// JAN-DEC, SUN-SAT, @daily and the like) in timezone: (an IANA name, UTC
// or Local; default: the daemon's local zone); {every: 15m} is a fixed
// interval on the grid from the Unix epoch (whole seconds). Each matching
// wall-clock time comes due once across daylight-saving changes: a time in
// the spring gap at the end of the gap, a time in the autumn's repeated
// hour at its first instant. The last occurrence run is in the store, so
// one that fell while the daemon was down (or the clock jumped over) runs
// as missed: says — once (default: the latest, if within the window), skip
// (none), all (each within the window, one after another) — where the
// window is within: (default: the daemon's replay window); a catch-up runs
// one after another, each once the run before it has ended. A clock behind
// the last occurrence run waits until it has passed it. A rule with a
// schedule holds its occurrences while paused or asleep (on-pause: hold by
// default).
//
// {sun: sunset, offset: -30m} is a schedule on the sun at the daemon's
// location (its config's location: latitude, longitude and, optionally,
// elevation in metres): sunrise and sunset (the sun's upper edge on the
// horizon, refraction counted), dawn and dusk (civil: its centre 6°
// below), noon (solar noon); offset: moves it earlier (negative) or
// later, at most 12h either way. Its times come from NOAA's solar
// calculator, within a minute or two of published tables from 78° S to
// 78° N (host/sun), on the whole second after the event; they follow the
// seasons and summer time by themselves (its event's due is in UTC, and
// carries sun: with the event's name). Where the event does not happen
// that day — no sunset in a polar summer, no dusk in a white night — there
// is no occurrence: the next is the next day that has one. missed: and
// within: are as for any schedule. A sun schedule has no timezone:. With
// no location in the config, a rule that uses the sun is warned about at
// load and its sun schedules never come due.
//
// sun.<field> is the sun's place at the daemon's location when the call
// is made, readable in every condition and template of any rule, as
// states. is: sun.elevation (degrees above the horizon, refraction
// counted; negative below), sun.azimuth (degrees from north, clockwise),
// sun.above_horizon (between sunrise and sunset), sun.rising (before
// solar noon). Lint refuses any other field; with no location, sun. is
// nil.
//
// # Changes
//
// A change in on: fires the rule when an event changes its entity's
// state, not on every report: {topic: door.front, changes: open} runs
// when the field open takes another value (a report that repeats it runs
// nothing), changes: true when anything in the state changes. from: and
// to: narrow it to the values the field had and has (a value, or a list
// of any of them; numbers compare by value, so 30 and 30.0 are one). The
// entity is the event's topic, or its topic and key field when the
// daemon's state.keys names one (scooter.telemetry=vehicle: each scooter's
// own; a number key is written as JSON would, so 5 and "5" are one; an id
// over 256 bytes, or a key value with a control character, names no
// entity). Two reports are the same state when their JSON is, but for
// member order, spacing and the "id" and "time" members: any other field
// that moves on each report (a counter, a last_seen) makes every report
// a change for changes: true. The first report of an
// entity changes every field it has (from: matches no value before it).
// The state is kept across restarts (ruled state ls shows it), so a
// report after a restart that repeats the state before it runs nothing.
// A rule heard only through change triggers counts its runs by topic
// (key: topic) unless key: says otherwise — give a topic of many
// entities its state key (key: vehicle). Under mode: single (the
// default) a change that comes while its key's run is live is turned
// away (ruled log why); mode: queue runs each change in order. A report
// the table refuses at its bounds (ruled status) fires no change trigger
// (ruled log why says so) and ends the entity's holds.
// With the daemon keeping no state (state.max-entities: -1) a change
// fires nothing, warned. A change some change trigger or hold hears is
// written to the store before its rules run (on the in-process bus,
// before the event's 202), so a restart judges the next report against
// it. A durable rule's change trigger whose event its run had not taken
// when the daemon was killed (queued behind another run, say) runs at the
// next start whether or not the event still counts as a change: at least
// once, as the journal promises.
//
// above: and below: make a change a threshold: {topic: room.temp,
// changes: t, above: 30} runs when t crosses above 30 — a report above
// it after one at or below it, or the entity's first report above it —
// not on each report above it; with both, a range (above: 18, below: 24).
// A value that is no number is outside. With for:, the number must stay
// in the range that long (it may move inside it): "above 30 for 5
// minutes". A sensor wobbling around the line runs the rule at each
// crossing; hysteresis: keeps it from that: {changes: t, above: 30,
// hysteresis: 1} runs above 30, then not again until t has been at or
// below 29 (with one line, above or below; not with for:, which is the
// other way to wait out noise). Its "fired, waiting for the dip" is kept
// with the entity's state, across restarts.
//
// for: makes a change a hold: {topic: door.front, changes: open, to: true,
// for: 10m} runs the rule once the door has stayed open ten minutes, with
// the event that opened it. A report that keeps the value (a repeat, or
// another field changing) does not restart the hold; one that changes it
// cancels it; the value must change away and back before the next hold.
// With to: (or a threshold), the hold lasts while the value is one of to:
// (in the range), even if it moves among them; without, while the field
// keeps the value it changed to. for: is 1s to 8784h.
// A hold is a record in the store, written before the event that began
// or ended it is acknowledged (on the in-process bus, before its 202):
// after a restart, or a kill -9, it is
// checked against the entity's state as kept — dropped if the state no
// longer has its value, else it waits out the rest of its time, or runs
// at once if it came due while the daemon was down (within the replay
// window; past it dropped). A rule edited or removed so that the trigger
// says something else drops its holds: at the entity's next report, when
// one comes due, or at a start. ruled status counts them.
//
// In a fleet (several daemons on one Redis, --shards), change triggers,
// holds, thresholds and previous. work as on one daemon: an event on a
// topic a rule watches goes into the fleet's ingest stream by a Redis
// script that swaps its entity's state ({ruled:in}:states), puts the
// state before it in the entry, and begins, keeps or cancels the
// entity's holds and fires its thresholds with hysteresis
// ({ruled:in}:triggers), so the members agree on the order of an
// entity's reports whichever member accepted them. A hold that comes due
// is appended to the stream by whichever member looks first (every 250
// ms, or by the entity's next report if it comes first; one that came
// due longer than the replay window ago, every member away, is dropped)
// and runs its rule on the member holding the key. A hold's due time is
// read from the clock of the member that began it. The fleet's states
// are bounded by state.max-entities; a full one forgets entities not
// reported for state.forget-after, else refuses new ones. ruled state rm
// forgets an entity there with its holds. A trigger remembers the last
// report it heard of each entity: a trigger new to an entity (deployed,
// or edited, since its last report) takes the next report as the first.
// Every member must load the same rules (a deploy does): a member that
// does not watch a topic appends its events without their state, so the
// fleet's state of those entities falls behind — their change triggers
// fire nothing on such an event, and the next watched one is judged
// against the state before it. Upgrade a fleet's members together: a
// member of an earlier version routes a hold that came due as a new
// event.
//
// # States
//
// A rule reads other entities' states, as the daemon keeps them (see
// Changes), by naming them in its states: — {door: door.front} makes the
// front door's latest state readable as states.door.<path> in the rule's
// when:, its vars:, every step's when: and with: templates, wait-for's
// when: and the finally steps — states.door.open is the door's open
// field. An entity is a topic, or <topic>/<key> when the config's
// state.keys names the topic's key; its {{path}} placeholders are filled
// from the run's trigger ("scooter.battery/{{vehicle}}": the same
// scooter's). A state is read when each call is made, not when the run
// began: a step after a delay sees the entity as it is then. A state the
// daemon does not have is nil, and so is a stale one: with max-age: (the
// rule's, or a read's own in {entity, max-age}) a state last reported
// longer ago than that counts as missing — a sensor whose battery died
// says nothing. Reading a chain below states. is never an error:
// states.door.open is nil when the door has no state, and == compares it
// as nil (states.door.open == false is false). But ordering and
// arithmetic with nil fail the condition, as in expr-lang — nil > 100 is
// an error, and a failing condition counts against the rule's error
// budget —, so give a value that may be missing a default: (states.lux.v
// ?? 0) < 50. Lint warns of a states., previous. or sun. path compared
// by order without one.
//
// previous.<path> is the state the trigger's entity had before the
// trigger (Home Assistant's trigger.from_state): {on: plug.washer, when:
// (previous.watts ?? 0) > 100 && watts < 5}. The run keeps it from its start —
// in its records, across a restart —, so a step after a delay still sees
// the state before the trigger, not the one before the latest report. A
// hold's run sees the state before the report that began the hold, and a
// debounced trigger keeps its own in its record. It is nil for an
// entity's first report, for a schedule, for an event a plugin fired,
// for a run started again by hand (ruled rerun: its trigger is
// taken from the execution log, which keeps no state), and in a fleet
// for an event a member accepted before it loaded a rule that reads it.
// Only a rule whose condition or templates name a
// previous. path is given it (a plugin reading it by itself needs the
// rule to name it once). After a kill, a durable rule's event re-run from
// the journal may see its own state as previous (the table had kept it).
//
// Lint holds every states.<name> to a name in states:, refuses an entity
// id that is empty, over 256 bytes, or filled from anything but the
// trigger, and a max-age: on a rule that reads no states. A rule reads at
// most 32 states. A plugin built for an ABI before 1.4 does not see
// states, previous or the sun: it reads a path below them from the
// event, as it always did (the daemon warns when a rule that reads them
// calls one); the first-party plugins and both SDKs see them.
//
// Upgrading from a version before states: a rule that read its event's
// own field below states., previous. or sun. now reads the run's
// context there. Lint refuses a states.<name> the rule does not name in
// states:, so that change is never silent; previous.<path> and
// sun.<path> read the state before the trigger and the sun. Rename such
// a field at its source, or read it whole by its bare name.
//
// # Windows
//
// A window counts, sums and averages what events said over time, per key,
// with no plugin (eKuiper's windows, Home Assistant's statistics sensor).
// A rule file defines windows beside its rules, and any rule of the
// directory reads them:
//
//	windows:
//	  - name: outdoor                 # required: unique across the directory
//	    on: weather.outdoor           # required: topic patterns, or a change: {topic, changes, from, to, above, below}
//	    key: station                  # the event field it keeps a value per (left out: one value)
//	    field: temp                   # the number it aggregates (left out: it counts events)
//	    time: ts                      # the event's own time: RFC 3339, or Unix s, ms, µs or ns (left out: when it arrived)
//	    last: 15m                     # sliding: the last 15 minutes, in buckets: (default 60)
//	    # last: 100 events            # count: the last 100 events
//	    # every: 1h                   # tumbling: periods on the grid from the Unix epoch
//	    # every: day                  # or day or week from local midnight, in timezone: (default: the daemon's)
//	    max-keys: 10000               # keys it holds; a new key past it is not counted (the default)
//	  - name: door-opens
//	    on: {topic: door.front, changes: open, to: true} # each opening
//	    every: day
//	    timezone: Europe/Berlin
//	rules:
//	  - id: heat
//	    on: weather.outdoor
//	    states: {out: {window: outdoor}}          # the trigger's station's; {window: outdoor, key: "{{site}}"} names it
//	    when: (states.out.avg ?? 99) < 5
//	    steps: [{do: publish.publish, with: {topic: heating.on}}]
//	  - id: nightly
//	    on: {window: door-opens, closed: true}    # a tumbling window's period closed
//	    steps: [{do: publish.publish, with: {topic: summary, payload: {opens: "{{count}}", day: "{{start}}"}}}]
//
// A rule reads a window as a state (see States): states.out.count (the
// events), .sum, .avg, .min, .max, .first and .last (of the field's
// numbers, first and last by their time), .per_second and .per_minute
// (events over the span, a second at least), .start and .end (RFC 3339,
// UTC: the span the aggregates cover; a count window's runs from its
// oldest event to now). It is read when each call is made. The read's key is
// the trigger's value of the window's key field (for a rule the window's
// close triggers, the close's key), or key: (a template filled from the
// trigger; refused for a window of one value); a key the window has not
// heard of reads as a window without events, and a trigger without the
// key field reads nil (lint warns of a keyed window read by the trigger
// in a rule only schedules trigger). count and the rates are never nil; avg, min,
// max, first and last are nil without events, and sum too for a window
// with no field (lint warns of reading one of them there): give a
// default, (states.out.avg ?? 99) < 5. Lint holds
// every window read and close trigger to a window of the directory, a
// close trigger to a tumbling window, and states.<name>.<aggregate> to
// the names above.
//
// A sliding window (last: 15m) keeps its events in buckets (buckets:, 60
// by default: 15 seconds for 15 minutes), so its far edge moves a bucket
// at a time: it covers between last − last/buckets and last of the past.
// A tumbling window (every:) keeps the current period; when it ends, each
// key's period closes: a rule with on: {window, closed: true} runs with
// an event (topic ruled.window) carrying window, key, count, sum, avg,
// min, max, first, last, per_second, per_minute, start and end. A rule
// heard only through closes counts its runs by the close's key (key:
// key) unless key: says otherwise, so each key's period is a run of its
// own. In its when:, write $env.count ($env.min, $env.max …): count, min
// and max alone are expr-lang's functions; templates read {{count}}. A
// key whose period had no events closes once with count 0, then is
// forgotten until its next event. every: day runs from local midnight to the next —
// 23 or 25 hours across a daylight-saving change —, every: week from
// Monday's. A count window (last: 100 events) keeps the last events in the
// order they came.
//
// An event counts in a window when its topic matches (or its change fires
// the window's change trigger, as for a rule; from:/to: count, say, each
// opening of a door), it has the key field (a string, a number or a
// boolean; not "") and, for a window with field:, a number there. Its time
// is its time: field — RFC 3339, or a Unix time whose size says its unit
// (below 1e11 seconds, below 1e14 milliseconds, below 1e17 microseconds,
// else nanoseconds) —, else when it arrived. An event older than a sliding window,
// or of a tumbling period closed already, is late: not counted. One more
// than a minute ahead of the daemon's clock is not counted either; within
// a minute, it counts as now. A count window has no late events. A new key
// past max-keys is not counted (a full sliding window first forgets keys
// whose events all fell out). An event with no key, no number in field:
// (a string "5" is no number), a number past ±1e100, or a time: it cannot
// read (or at or before 1970) is invalid, not counted. Each of these is
// counted in ruled status and /metrics (ruled_window_events_total) and
// logged at most once a second a window and cause. ruled window show NAME
// [KEY] prints a window's value for a key (GET /v1/windows/NAME?key=KEY),
// ruled window ls NAME its keys.
//
// A day or a week starts at the first instant of its local date — where
// the clocks skip midnight, when they land; where they repeat it, the
// first. A clock set forward (NTP on a device with no real-time clock)
// closes the periods that ended within a minute.
//
// Windows are kept in the store (ruled:windows) and come back after a
// restart, or a kill -9: what an event counted is written before its 202
// (an NDJSON body's events, or the messages an MQTT source takes
// together, in one write). On the Redis bus, which delivers an event
// after its sender was answered, the count is written within 10 ms. A
// close is recorded until its rules took it: a start fires again one a
// kill left untaken, and closes, once, each key's period that ended while
// the daemon was down. A window whose definition is edited starts afresh;
// one removed is forgotten. A directory defines at most 256 windows; a
// sliding window's key is at most buckets × 72 bytes (and the slice's slack: 5 KB for all 60 of 15 minutes), a count window's
// events × 16, a tumbling window's about 200 bytes. A fleet keeps its
// windows in Redis: each member counts what it accepts, in the same script
// that appends the event (so an event is counted once, exactly when it is
// accepted), and every member reads the same value; a tumbling window's key
// closes once, appended by whichever member's poll sees its end first
// (within a quarter second). In a fleet a window on changes counts only the
// events of its on: topics (warned at load), a tumbling key counts against
// max-keys in both periods for the quarter second before its close, and a
// window removed from the rules keeps its records in Redis (its tumbling
// closes are dropped an hour after they came due). Every member must load
// the same windows (a deploy does): a member that does not define one
// counts nothing in it.
//
// # Debounce and throttle
//
// Both count by the rule's key, as cooldown does, after the rule's
// condition (a false condition neither holds nor spends anything) and
// before its mode. debounce holds a key's trigger until no other has come
// for for:, then starts one run with the last (Inngest's trailing edge);
// max-wait: starts it at the latest that long after the burst's first. The
// held trigger is a record in the store, so a restart keeps it, and a
// cancel-on event drops it. throttle lets a key start limit: runs every
// per:, burst: (default limit) at once after a quiet time; a trigger past
// that waits its turn, oldest first, up to 1000 a key (excess: queue), or
// is dropped and counted as suppressed (excess: drop). A key at its limit
// keeps its state in the store, so a restart gives it no fresh burst;
// triggers waiting their turn are a durable rule's journaled events, and
// lost with the process otherwise, as any trigger not yet run is.
//
// # Step outputs, variables and templates
//
// What a step's action returns is its output, kept under the step's name:
// a JSON object as it is, any other result as {"result": <the JSON value,
// or the text as a string>} (publish answers {"topic"}, fire {"run"}, http
// the response body). Every later step of the run — its when: and its
// with: — and the rule's finally steps read it as steps.<name>.<path>, and
// vars: as vars.<name>. A repeat pass starts with no outputs. A run's
// pending record carries its outputs and variables, so a step replayed
// after a restart sees what its run had, not what the earlier steps would
// return now. An output is at most max-step-output-kb (64 KiB by default);
// a larger one fails its step, and is not retried (a rule's last step,
// whose output nothing reads, is not held to it).
//
// A path below steps., vars., states., previous. or sun. is the run's
// context's — missing when the run has no such output, variable or
// state, never the event's, so a trigger cannot pass off a field of its
// own as a step's answer —; every other path is the event's (abi/ABI.md
// §4.1). An event's own steps, vars, states, previous or sun field is
// reached only whole, by its bare name.
//
// {{path}} placeholders are the SDKs' templates (abi/tmpl, the
// AssemblyScript SDK's tmpl.ts), the same in every plugin that takes
// them: in text the value's text (a string as it is, anything else as its
// JSON, missing as nothing); in a JSON value a string that is exactly one
// placeholder takes the value with its type (missing: null), and longer
// strings splice text in. vars: is rendered with them from the trigger
// (and the states the rule reads, previous and the sun), once, when a run starts
// (after the rule's when:), and held to
// max-step-output-kb as an output is: past it the rendering stops and the
// run's first step fails, not retried.
//
// Lint holds every steps.<name> in a condition and in a template of a
// with: to a step that runs before it, and every vars.<name> to a declared
// variable, reporting a typo, a later step, the step itself or the rule's
// own condition at its line and column inside the string.
//
// # Waiting for an event
//
// A wait-for step waits for an event on its topic whose match paths hold
// the trigger's values (the same vehicle, as cancel-on correlates) and for
// which its when — evaluated with the awaited event as the event, beside
// the run's steps. and vars. — holds. The event that came is
// steps.<name>.event to the steps after it (and steps.<name>.timeout is
// absent: nil in a when, "" in a template; test steps.<name>.timeout ??
// false, or steps.<name>.event != nil); when none came within timeout,
// steps.<name>.timeout is true and the run goes on (on-timeout: continue,
// the default; test it in the next steps' when) or ends there, completed
// (stop). The step's own when says whether to wait at all. The wait is
// durable as an after is: a pending record (with a store, always), no
// goroutine and no worker while it waits; a restart keeps waiting out what
// is left, and an event accepted before the stop that the run had not
// taken is re-admitted to it from the journal (a rule with a wait-for has
// its events journaled, as a durable rule has). An event reaches the runs
// waiting for it before it triggers any run. The answer to a step that
// asks (publish a command, wait for its ack) can come before the run
// reaches its wait: a wait that starts takes the first matching event of
// the last 64 its rule heard within a minute that came after its run
// started (or after the run's last wait took one) — kept in memory only.
// A run whose rule is cancel-on or mode: restart on the topic it waits
// for is ended by that event, not given it: wait on a topic of its own. A wait-for step takes name,
// when and wait-for only: no do, with, after, durable, retry or on-error.
// In a fleet a wait hears the event as a cancel-on does, from the pub/sub
// copy: one that comes while the run's holder is away is not seen.
//
// A run that has passed a durable step is recorded between its repeat
// passes too: a restart during the interval resumes it at the next pass
// when the interval ends, and the pass that ran does not run again. A
// replayed run keeps the concurrency key it started under: an edit of key:
// made while the daemon was down applies to the runs started after it (a
// replayed run and a new one of one entity may then run side by side under
// mode: single), and an edit of mode: to the triggers taken after it.
//
// A retry's wait is recorded in the store (durable: true or not), so a
// restart during it tries the step again at its due time; every attempt
// has the same idempotency key and the next attempt number, and is a node
// of the run's tree. An action whose plugin says a retry would fail the
// same way (abi.StatusPermanent) is not retried, nor is a condition's
// error: a condition sees only the event. The rule's error budget counts a
// step that failed after its last attempt, once; on-error applies then.
//
// Finally steps run in order when a run ends — completed, failed,
// cancelled (cancel-on, a restart-mode trigger), dropped (its rule killed
// or removed, a waiting step past the replay window) — each
// whatever the one before did, so that a run cut short leaves a device
// safe. They wait for a step of the run's own that is on a worker, and the
// run keeps its key's slot until they are done: a single-mode trigger is
// suppressed meanwhile, a restart- or queue-mode one starts after them. A
// failed finally step counts against the error budget and makes a run that
// had completed a failed one. A stop is not an end: a run let go when the
// process stops runs its finally steps when it ends after the restart (a
// durable run) or not at all (a memory-only run, lost with the process).
// A durable run's finally steps (a rule with a durable step or a
// wait-for step, whose wait is recorded whenever there is a store) are
// recorded while they run: a crash in the middle runs them again, from the first,
// at the next start; a memory-only run's are lost with the process.
//
// An unnamed step is called by its index, so an explicit name made of
// digits must be the step's own index: "1" on step 0 would name two steps.
package rules
