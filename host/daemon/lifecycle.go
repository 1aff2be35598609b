package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/ruleset"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/task"
)

// Clock is the time the daemon's timers run on: waiting steps, sleeping
// rules' wake-ups. The wall clock (sched.New) unless Config.Clock says
// otherwise; tests give a sched.Virtual to live hours in milliseconds.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) *sched.Timer
}

// Why a waiting step of a killed or failed rule is dropped (Status'
// dropped_waiting_steps counts them under these).
const (
	DropRuleKilled = "rule killed"
	DropRuleFailed = "rule failed"
)

// CommandTopicPrefix starts the control topic a rule's commands arrive on
// in Redis mode: ruled.cmd.<rule>, its payload a Command as JSON. Being
// under bus.ReservedPrefix, neither ingest nor plugins can publish it.
const CommandTopicPrefix = "ruled.cmd."

// budget is a rule's error budget as Tasks takes it.
func budget(r *rules.Rule) task.Limits {
	return task.Limits{Max: r.OnError.Max, Within: r.OnError.Within, Sleep: r.OnError.Sleep}
}

// startTasks reads the state of every loaded rule, retrying a store that
// does not answer (a Redis still starting) for up to Config.StoreWait:
// rules must not start on a guess of their state. A rule whose stored state
// does not decode is failed with the reason (task.Load).
func (d *Daemon) startTasks(ctx context.Context) error {
	d.tasks = task.New(task.NewHashStore(d.hasher), d.sch, d.log.Named("task"))
	budgets := map[string]task.Limits{}
	for _, s := range d.ruleSnap().Sequences() {
		budgets[s.Rule.ID] = budget(s.Rule)
	}
	if err := d.retry(ctx, "reading the rules' states", func() error { return d.tasks.Load(budgets) }); err != nil {
		return err
	}
	d.tasks.OnChange(d.stateChanged)
	return nil
}

// stop is an error retry gives up on at once: waiting will not cure it.
type stop struct{ err error }

func (s stop) Error() string { return s.err.Error() }

// retry calls f until it succeeds, backing off from 100ms to 5s, for up to
// Config.StoreWait; the last error is returned after that or when ctx ends.
// An error f wraps in a stop (a malformed URL, a wrong password) is
// returned at once: a minute of retries would only hide it.
func (d *Daemon) retry(ctx context.Context, what string, f func() error) error {
	deadline := time.Now().Add(d.cfg.StoreWait)
	wait := 100 * time.Millisecond
	for {
		err := f()
		var st stop
		switch {
		case err == nil:
			return nil
		case errors.As(err, &st):
			return fmt.Errorf("daemon: %s: %w", what, st.err)
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("daemon: %s: %w (gave up after %v)", what, err, d.cfg.StoreWait)
		}
		d.log.Warn("store not answering; retrying", "what", what, "in", wait, "error", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("daemon: %s: %w", what, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// taskGate is the rules' lifecycle as the sequencer sees it (seq.Gate).
//
// What each state does to a rule's runs:
//   - runnable: triggers start runs, due steps run.
//   - paused, sleeping: new triggers are ignored (counted as suppressed);
//     a step that comes due is held, and runs when the rule is runnable
//     again unless it was held longer than the replay window (then it is
//     dropped, as at a restart). A step already running finishes.
//   - killed, failed: live runs end at once (a running step finishes, the
//     rest does not run) and their waiting steps' records are dropped with
//     the reason; new triggers are ignored.
//   - completed (once: true): new triggers are ignored; runs already live
//     finish.
type taskGate struct{ t *task.Tasks }

func (g taskGate) Admits(rule string) bool { return g.t.Admits(rule) }

func (g taskGate) Due(rule string) (hold bool, drop string) {
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
// gate (taskGate) and OnError (task.Tasks.Errored) it connects the runner
// and the rules' states both ways: run errors and completions become
// messages, transitions end or release runs.
func (d *Daemon) completed(rule string) {
	s := d.Current(rule)
	if s == nil || !s.Rule.Once {
		return
	}
	if _, err := d.tasks.Send(rule, task.CompleteMessage()); err != nil {
		var ill *task.IllegalError
		if !errors.As(err, &ill) { // a parallel run completed it first: fine
			d.log.Error("cannot complete a once rule", "rule", rule, "error", err)
		}
	}
}

// stateChanged acts on a stored transition: a killed or failed rule's live
// runs end, a rule runnable again gets its held steps back.
func (d *Daemon) stateChanged(rule string, from, to task.State) {
	if d.runner == nil || from.Code == to.Code {
		return
	}
	switch to.Code {
	case task.Killed:
		d.runner.EndRule(rule, DropRuleKilled)
	case task.Failed:
		d.runner.EndRule(rule, DropRuleFailed)
	case task.Runnable:
		if n := d.runner.ReleaseHeld(rule, d.cfg.ReplayWindow); n > 0 {
			d.log.Info("held steps released", "rule", rule, "steps", n)
		}
	}
}

// syncTasks follows a reload: new rules get their state (stored or
// runnable), changed ones their new budget, removed ones are forgotten
// (their stored state stays for when they come back).
func (d *Daemon) syncTasks(set *ruleset.Set, removed []string) {
	if d.tasks == nil {
		return
	}
	for _, s := range set.Sequences() {
		d.tasks.Ensure(s.Rule.ID, budget(s.Rule))
	}
	for _, id := range removed {
		d.tasks.Forget(id)
	}
}

// Command applies an operator's command to a rule and returns the rule's
// status after it. A rule that is not loaded (ErrUnknownRule), a command
// that is not one (ErrBadCommand), a transition the table does not allow
// (*task.IllegalError), a sleep without a deadline (task.MissingUntilError)
// or a store that cannot keep the new state are errors, and nothing
// changes.
func (d *Daemon) Command(rule string, c api.Command) (api.RuleStatus, error) {
	if _, ok := d.tasks.State(rule); !ok || d.Current(rule) == nil {
		return api.RuleStatus{}, fmt.Errorf("%w %q", api.ErrUnknownRule, rule)
	}
	var err error
	switch c.Command {
	case "pause":
		_, err = d.tasks.Send(rule, task.PauseMessage())
	case "resume":
		_, err = d.tasks.Send(rule, task.RunMessage())
	case "kill":
		_, err = d.tasks.Send(rule, task.KillMessage())
	case "reset":
		_, err = d.tasks.Reset(rule)
	case "sleep":
		m := &task.Message{Code: task.Sleep, Until: c.Until}
		if c.For != "" {
			if c.Until != nil {
				return api.RuleStatus{}, fmt.Errorf("%w: sleep takes until or for, not both", api.ErrBadCommand)
			}
			dur, perr := time.ParseDuration(c.For)
			if perr != nil || dur <= 0 {
				return api.RuleStatus{}, fmt.Errorf("%w: sleep for %q: want a positive duration such as 90m", api.ErrBadCommand, c.For)
			}
			u := d.sch.Now().Add(dur)
			m.Until = &u
		}
		if m.Until != nil && !m.Until.After(d.sch.Now()) {
			// A deadline already gone would wake the rule at once: surely
			// not what the operator meant (a wrong zone, a wrong day).
			return api.RuleStatus{}, fmt.Errorf("%w: sleep until %s: that is in the past", api.ErrBadCommand, m.Until.Format(time.RFC3339))
		}
		_, err = d.tasks.Send(rule, m)
	default:
		return api.RuleStatus{}, fmt.Errorf("%w %q: want one of %s", api.ErrBadCommand, c.Command, strings.Join(api.Commands, ", "))
	}
	if err != nil {
		return api.RuleStatus{}, fmt.Errorf("rule %s: %s: %w", rule, c.Command, err)
	}
	d.log.Info("rule command", "rule", rule, "command", c.Command)
	return d.ruleStatus(d.Current(rule), nil), nil
}

// commandTopic handles a control message ruled.cmd.<rule> (Redis mode):
// there is no one to answer, so its outcome is logged.
// control handles a message on the control channel: a rule's command, or
// another process's announcement that its rules changed.
func (d *Daemon) control(topic string, payload []byte) {
	if topic == TriggersChangedTopic {
		d.onTriggersChanged(payload)
		return
	}
	d.commandTopic(topic, payload)
}

func (d *Daemon) commandTopic(topic string, payload []byte) {
	rule, ok := strings.CutPrefix(topic, CommandTopicPrefix)
	if !ok {
		return
	}
	var c api.Command
	if err := json.Unmarshal(payload, &c); err != nil {
		d.log.Warn("rule command refused", "topic", topic, "error", fmt.Errorf("%w: payload: %v", api.ErrBadCommand, err))
		return
	}
	if _, err := d.Command(rule, c); err != nil {
		d.log.Warn("rule command refused", "topic", topic, "error", err)
	}
}

// ruleStatus is one loaded rule's status; groups is the pool's Groups,
// read once for every rule (nil: read for this one).
func (d *Daemon) ruleStatus(s *seq.Sequence, groups map[string]pool.GroupStats) api.RuleStatus {
	rs := api.RuleStatus{ID: s.Rule.ID, File: s.Rule.Pos.File, Stats: d.runner.RuleStats(s.Rule.ID),
		Held: d.runner.Held(s.Rule.ID)}
	if groups == nil {
		groups = d.pool.Groups()
	}
	g := groups[s.Rule.ID]
	rs.Workers = api.WorkerShare{Ran: g.Ran, Seconds: g.Used.Seconds(), LongestWait: g.LongestWait.Round(time.Millisecond).String(),
		Queued: g.Queued}
	if st, ok := d.tasks.State(s.Rule.ID); ok {
		rs.State, rs.Since, rs.Until, rs.Reason = string(st.Code), st.Since, st.Until, st.Reason
		rs.Counted = len(st.Errors)
	}
	rs.Errors = d.tasks.RecentErrors(s.Rule.ID)
	rs.History = d.tasks.History(s.Rule.ID)
	return rs
}
