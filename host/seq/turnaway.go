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

// spell is one rule's turning away for one reason since it was last
// logged.
type spell struct {
	logged time.Time // zero: never
	since  int       // turned away since then, unlogged
}

// turnedAway logs, rate-limited, that rule turned a trigger away for why:
// the first at once, then at most once every turnAwayEvery with how many
// there were since. It takes the runner's lock (apply): call it without.
func (rn *Runner) turnedAway(rule, why string) {
	now := rn.sch.Now()
	n := 0
	rn.apply(func(*effects) {
		if rn.spells == nil {
			rn.spells = map[[2]string]*spell{}
		}
		k := [2]string{rule, why}
		sp := rn.spells[k]
		if sp == nil {
			sp = &spell{}
			rn.spells[k] = sp
		}
		sp.since++
		if !sp.logged.IsZero() && now.Sub(sp.logged) < turnAwayEvery {
			return
		}
		n = sp.since
		sp.logged, sp.since = now, 0
	})
	if n == 0 {
		return
	}
	msg := "rule turned a trigger away"
	if why == awayHeld {
		msg = "rule holds a trigger"
	}
	if why == awayHoldFull || why == awayKeys {
		rn.log.Warn(msg, "rule", rule, "reason", why, "triggers", n)
		return
	}
	rn.log.Info(msg, "rule", rule, "reason", why, "triggers", n, "next-log-within", turnAwayEvery.String())
}

// warnFolded logs a warning a plugin's behaviour triggers — a step or a
// condition that failed — at most once a second per message, rule and
// step, with how many it folded since: a plugin failing on every event
// at 1,500 runs/s wrote a warning a run. Each failure is still counted
// (the rule's error budget, its stats) and kept in the execution log.
func (rn *Runner) warnFolded(msg, rule, step string, args ...any) {
	folded, ok := rn.warns.Allow(msg + "\x00" + rule + "\x00" + step)
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
	rn.log.Warn(msg, args...)
}
