package seq

import (
	"time"

	"github.com/ruled-dev/ruled/host/seq/core"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// Why a rule turned a trigger away, as its log line says. Home Assistant
// logs a warning (max_exceeded) for the mode's refusals; here they are
// logged at info, at most once a minute per rule and reason with a count,
// because a rule in single mode on a telemetry topic turns triggers away
// every second by design.
const (
	awayPaused    = "the rule is paused or asleep (on-pause: drop)"
	awayHoldFull  = "the rule is paused or asleep and holds as many triggers as on-pause allows"
	awaySingle    = core.WhySingle
	awayParallel  = core.WhyParallel
	awayQueueFull = core.WhyQueueFull
	awayHeld      = "held until the rule runs again (on-pause: hold)"
	awayKeys      = "its key is new and the rule holds max-keys keys"
)

// turnAwayEvery is how often one rule's turning away for one reason is
// logged.
const turnAwayEvery = time.Minute

// warnings are the lines the runner logs for what its inputs trigger — a
// trigger turned away, a plugin failing — folded, so that a flood writes
// one line per cause and period, with how many it folded. Each is still
// counted (the rule's stats, its error budget) and kept in the execution
// log. Safe for concurrent use: it needs no runner's lock.
type warnings struct {
	log Logger
	// plugins: a failing step or condition, once a second per message,
	// rule and step (a plugin failing on every event at 1,500 runs/s
	// wrote a warning a run).
	plugins lograte.Limiter
	// away: a trigger turned away, once a turnAwayEvery per rule and
	// reason, on the scheduler's clock.
	away lograte.Limiter
}

// newWarnings logs to log; now is the scheduler's clock.
func newWarnings(log Logger, now func() time.Time) *warnings {
	return &warnings{log: log, away: lograte.Limiter{Every: turnAwayEvery, Now: now}}
}

// turnedAway logs that rule turned a trigger away for why: the first at
// once, then at most once every turnAwayEvery with how many there were
// since.
func (w *warnings) turnedAway(rule, why string) {
	folded, ok := w.away.Allow(rule + "\x00" + why)
	if !ok {
		return
	}
	n := folded + 1
	msg := "rule turned a trigger away"
	if why == awayHeld {
		msg = "rule holds a trigger"
	}
	if why == awayHoldFull || why == awayKeys {
		w.log.Warn(msg, "rule", rule, "reason", why, "triggers", n)
		return
	}
	w.log.Info(msg, "rule", rule, "reason", why, "triggers", n, "next-log-within", turnAwayEvery.String())
}

// folded logs a warning a plugin's behaviour triggers — a step or a
// condition that failed — at most once a second per message, rule and
// step, with how many it folded since.
func (w *warnings) folded(msg, rule, step string, args ...any) {
	folded, ok := w.plugins.Allow(msg + "\x00" + rule + "\x00" + step)
	if !ok {
		return
	}
	head := []any{"rule", rule}
	if step != "" {
		head = append(head, "step", step)
	}
	args = append(head, args...)
	if folded > 0 {
		args = append(args, "folded", folded, "next-log-within", lograte.Every.String())
	}
	w.log.Warn(msg, args...)
}
