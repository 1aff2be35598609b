package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/ruleset"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/task"
)

// Why a waiting step of a killed or failed rule is dropped (Status'
// dropped_waiting_steps counts them under these).
const (
	DropRuleKilled = "rule killed"
	DropRuleFailed = "rule failed"
)

// budget is a rule's error budget as Tasks takes it.
func budget(r *rules.Rule) task.Limits {
	return task.Limits{Max: r.OnError.Max, Within: r.OnError.Within, Sleep: r.OnError.Sleep}
}

// startTasks reads the state of every loaded rule (through Config.Retry).
// A rule whose stored state does not decode is failed with the reason
// (task.Load).
func (e *Engine) startTasks(ctx context.Context) error {
	e.tasks = task.New(task.NewHashStore(e.cfg.Hasher), e.clock, e.log.Named("task"))
	budgets := map[string]task.Limits{}
	for _, s := range e.rules.Current().Sequences() {
		budgets[s.Rule.ID] = budget(s.Rule)
	}
	if err := e.cfg.Retry(ctx, "reading the rules' states", func() error { return e.tasks.Load(budgets) }); err != nil {
		return err
	}
	e.tasks.OnChange(e.stateChanged)
	return nil
}

// gate is the rules' lifecycle as the sequencer sees it (seq.Gate); what
// each state does is in the package's doc.
type gate struct{ t *task.Tasks }

func (g gate) Admits(rule string) bool { return g.t.Admits(rule) }

func (g gate) Due(rule string) (hold bool, drop string) {
	st, ok := g.t.State(rule)
	if !ok {
		return false, ""
	}
	switch st.Code {
	case task.Paused, task.Sleeping, task.Fault:
		return true, ""
	case task.Killed:
		return false, DropRuleKilled
	case task.Failed:
		return false, DropRuleFailed
	}
	return false, ""
}

// completed is told of each run that completes (seq.RunnerConfig's
// OnComplete): a once rule's first completion completes the rule. With the
// gate and OnError (task.Tasks.Errored) it connects the runner and the
// rules' states both ways: run errors and completions become messages,
// transitions end or release runs.
func (e *Engine) completed(rule string) {
	s := e.Current(rule)
	if s == nil || !s.Rule.Once {
		return
	}
	if _, err := e.tasks.Send(rule, task.CompleteMessage()); err != nil {
		var ill *task.IllegalError
		if !errors.As(err, &ill) { // a parallel run completed it first: fine
			e.log.Error("cannot complete a once rule", "rule", rule, "error", err)
		}
	}
}

// stateChanged acts on a stored transition: a killed or failed rule's live
// runs end, a rule runnable again gets its held steps back.
func (e *Engine) stateChanged(rule string, from, to task.State) {
	e.changed.Add(1)
	if e.runner == nil || from.Code == to.Code {
		return
	}
	switch to.Code {
	case task.Killed:
		e.runner.EndRule(rule, DropRuleKilled)
	case task.Failed:
		e.runner.EndRule(rule, DropRuleFailed)
	case task.Runnable:
		if n := e.runner.ReleaseHeld(rule, e.cfg.ReplayWindow); n > 0 {
			e.log.Info("held steps released", "rule", rule, "steps", n)
		}
	}
}

// syncTasks follows a reload: new rules get their state (stored or
// runnable), changed ones their new budget, removed ones are forgotten
// (their stored state stays for when they come back).
func (e *Engine) syncTasks(set *ruleset.Set, removed []string) {
	if e.tasks == nil {
		return
	}
	for _, s := range set.Sequences() {
		e.tasks.Ensure(s.Rule.ID, budget(s.Rule))
	}
	for _, id := range removed {
		e.tasks.Forget(id)
	}
}

// Command applies an operator's command to a rule and returns the rule's
// status after it. A rule that is not loaded (ErrUnknownRule), a command
// that is not one (ErrBadCommand), a transition the table does not allow
// (*task.IllegalError), a sleep without a deadline (task.MissingUntilError)
// or a store that cannot keep the new state are errors, and nothing
// changes.
func (e *Engine) Command(rule string, c status.Command) (status.RuleStatus, error) {
	if _, ok := e.tasks.State(rule); !ok || e.Current(rule) == nil {
		return status.RuleStatus{}, fmt.Errorf("%w %q", status.ErrUnknownRule, rule)
	}
	var err error
	switch c.Command {
	case "pause":
		_, err = e.tasks.Send(rule, &task.Message{Code: task.Pause, By: c.By})
	case "resume":
		_, err = e.tasks.Send(rule, &task.Message{Code: task.Run, By: c.By})
	case "kill":
		_, err = e.tasks.Send(rule, &task.Message{Code: task.Kill, By: c.By})
	case "reset":
		_, err = e.tasks.Reset(rule, c.By)
	case "sleep":
		m := &task.Message{Code: task.Sleep, Until: c.Until, By: c.By}
		if c.For != "" {
			if c.Until != nil {
				return status.RuleStatus{}, fmt.Errorf("%w: sleep takes until or for, not both", status.ErrBadCommand)
			}
			dur, perr := time.ParseDuration(c.For)
			if perr != nil || dur <= 0 {
				return status.RuleStatus{}, fmt.Errorf("%w: sleep for %q: want a positive duration such as 90m", status.ErrBadCommand, c.For)
			}
			u := e.clock.Now().Add(dur)
			m.Until = &u
		}
		if m.Until != nil && !m.Until.After(e.clock.Now()) {
			// A deadline already gone would wake the rule at once: surely
			// not what the operator meant (a wrong zone, a wrong day).
			return status.RuleStatus{}, fmt.Errorf("%w: sleep until %s: that is in the past", status.ErrBadCommand, m.Until.Format(time.RFC3339))
		}
		_, err = e.tasks.Send(rule, m)
	default:
		return status.RuleStatus{}, fmt.Errorf("%w %q: want one of %s", status.ErrBadCommand, c.Command, strings.Join(status.Commands, ", "))
	}
	if err != nil {
		return status.RuleStatus{}, fmt.Errorf("rule %s: %s: %w", rule, c.Command, err)
	}
	e.log.Info("rule command", "rule", rule, "command", c.Command, "by", cmp.Or(c.By, "unknown"))
	return e.ruleStatus(e.Current(rule), nil), nil
}

// ruleStatus is one loaded rule's status; groups is the pool's Groups,
// read once for every rule (nil: read for this one).
func (e *Engine) ruleStatus(s *seq.Sequence, groups map[string]pool.GroupStats) status.RuleStatus {
	rs := status.RuleStatus{ID: s.Rule.ID, File: s.Rule.Pos.File, Stats: e.runner.RuleStats(s.Rule.ID),
		Held: e.runner.Held(s.Rule.ID)}
	if groups == nil {
		groups = e.pool.Groups()
	}
	g := groups[s.Rule.ID]
	rs.Workers = status.WorkerShare{Ran: g.Ran, Seconds: g.Used.Seconds(), LongestWait: g.LongestWait.Round(time.Millisecond).String(),
		Queued: g.Queued}
	if st, ok := e.tasks.State(s.Rule.ID); ok {
		rs.State, rs.Since, rs.Until, rs.Reason = string(st.Code), st.Since, st.Until, st.Reason
		rs.Counted = len(st.Errors)
	}
	rs.Errors = e.tasks.RecentErrors(s.Rule.ID)
	rs.History = e.tasks.History(s.Rule.ID)
	if len(s.Rule.Schedules) > 0 {
		next := e.sch.Next(s.Rule.ID)
		for i := range s.Rule.Schedules {
			sc := status.ScheduleStatus{Schedule: s.Rule.Schedules[i].String(), Missed: s.Rule.Schedules[i].Missed.String()}
			if t, ok := next[i]; ok && !t.IsZero() {
				sc.Next = &t
			}
			rs.Schedules = append(rs.Schedules, sc)
		}
	}
	return rs
}
