package engine

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/schedule"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/sun"
)

// newScheduler builds the rules' scheduler: its records in the states'
// store, its checks on the pool, its occurrences fired as triggers with a
// Done (the record moves only once a run has taken the occurrence).
func (e *Engine) newScheduler() *schedule.Scheduler {
	owns := e.cfg.Placement.Owns
	cfg := schedule.Config{Store: e.cfg.Hasher, Clock: e.clock, Fire: e.fireOccurrence, Live: func(id string) bool {
		return e.runner != nil && e.runner.Live(id)
	}, Submit: func(rule string, f func()) {
		if e.pool != nil {
			e.pool.Submit(pool.Job{Group: rule, Key: rule, Run: f})
		}
	}, Idle: func(rule string) bool {
		return e.runner == nil || e.runner.RuleStats(rule).Active == 0
	}, Window: e.cfg.ReplayWindow, Log: e.log.Named("schedule")}
	if owns != nil {
		cfg.Owns = func(rule string) bool { return owns(rule, "") }
	}
	if _, real := e.clock.(*sched.Scheduler); real {
		// A device's clock may be set forward (NTP after a boot without a
		// real-time clock): look once a minute. A virtual clock (tests,
		// ruled test) is moved by its owner and woken at each occurrence.
		cfg.MaxWait = time.Minute
	}
	return schedule.New(cfg)
}

// fireOccurrence starts the run of a schedule's occurrence on the rule
// as loaded now.
func (e *Engine) fireOccurrence(o schedule.Occurrence, done func()) {
	s := e.rules.Current().Rule(o.Rule)
	if s == nil || e.runner == nil {
		done()
		return
	}
	e.runner.Fire(seq.Trigger{Seq: s, Event: o.Event, RunID: o.RunID, Done: done})
}

// syncSchedules gives the scheduler the schedules of the rules as loaded
// now.
func (e *Engine) syncSchedules() {
	var entries []schedule.Entry
	for _, s := range e.rules.Current().Sequences() {
		for i := range s.Rule.Schedules {
			entries = append(entries, schedule.Entry{Rule: s.Rule.ID, Index: i, Schedule: &s.Rule.Schedules[i], Sun: e.cfg.Sun})
		}
	}
	e.sch.Set(entries)
}

// sunAt is the sun's place seen from l as a rule reads it below sun.
// (rules.SunFields); nil without a location.
func sunAt(l *sun.Location) func(time.Time) []byte {
	if l == nil {
		return nil
	}
	at := *l
	return func(t time.Time) []byte {
		p := at.At(t)
		return fmt.Appendf(nil, `{"elevation":%s,"azimuth":%s,"above_horizon":%t,"rising":%t}`,
			strconv.FormatFloat(math.Round(p.Elevation*100)/100, 'f', -1, 64),
			strconv.FormatFloat(math.Round(p.Azimuth*100)/100, 'f', -1, 64), p.Up, p.Rising)
	}
}
