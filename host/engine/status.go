package engine

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
)

// Status reports the engine's part of a daemon's status: runs, the pool,
// the rules and their problems, the plugins and the pinned modules, the
// execution log. The adapters' parts (ingest, bus, fleet, the API, the
// store) are the caller's to fill in.
func (e *Engine) Status() status.Status {
	st := status.Status{Active: e.runner.Counts().Active, Parked: e.runner.Parked(), Undropped: e.runner.Counts().Undropped,
		Refused: e.runner.Counts().Refused, Replayed: e.replayed, Dropped: e.runner.Counts().Dropped, Denied: e.rt.Denied(),
		ExecLog: e.ExecLogStats()}
	ps := e.pool.Stats()
	st.Pool = status.PoolStatus{Queued: ps.Queued, ByBand: ps.ByBand, Busy: ps.Busy, Refused: ps.Refused}
	set := e.rules.Current()
	groups := e.pool.Groups()
	for _, s := range set.Sequences() {
		st.Rules = append(st.Rules, e.ruleStatus(s, groups))
	}
	for _, p := range set.Problems() {
		st.Invalid = append(st.Invalid, status.RuleProblem{At: p.Pos.String(), Rule: p.Rule, Error: p.Msg, Hint: p.Hint})
	}
	current, pinned := e.references()
	st.Plugins = e.cat.Status(pinned)
	for dg, by := range pinned {
		if _, ok := current[dg]; !ok {
			if st.Pinned == nil {
				st.Pinned = map[string]*status.PinnedBy{}
			}
			st.Pinned[dg] = by
		}
	}
	for _, p := range st.Plugins {
		if !p.Loaded {
			st.Failed = append(st.Failed, status.Problem{File: p.File, Error: p.LastError})
		}
	}
	sort.Slice(st.Rules, func(i, j int) bool { return st.Rules[i].ID < st.Rules[j].ID })
	return st
}

// Plugins reports every plugin: loaded ones with their digest and reload
// history, files that never loaded with their error, and which old digests
// are kept for what.
func (e *Engine) Plugins() []status.PluginStatus {
	_, pinned := e.references()
	return e.cat.Status(pinned)
}

// Rules reports every loaded rule, sorted by id.
func (e *Engine) Rules() []status.RuleStatus {
	set := e.rules.Current()
	out := make([]status.RuleStatus, 0, len(set.Sequences()))
	groups := e.pool.Groups()
	for _, s := range set.Sequences() {
		out = append(out, e.ruleStatus(s, groups))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Rule reports one loaded rule: its status, and its definition as its
// file has it now (ruleset.Set.Written: a reload that changed only its
// comments or description keeps its compiled sequence, not its text).
func (e *Engine) Rule(id string) (status.RuleDetail, error) {
	set := e.rules.Current()
	s := set.Rule(id)
	if s == nil {
		return status.RuleDetail{}, fmt.Errorf("%w %q", status.ErrUnknownRule, id)
	}
	d := status.RuleDetail{RuleStatus: e.ruleStatus(s, nil)}
	r := set.Written(id)
	if r == nil {
		r = s.Rule
	}
	d.At = fmt.Sprintf("%s:%d", r.Pos.File, r.Pos.Line)
	d.Description, d.Source = r.Description, r.Source
	for _, p := range r.On {
		d.On = append(d.On, string(p))
	}
	for _, c := range r.Changes {
		d.On = append(d.On, c.String())
	}
	for _, sr := range r.States {
		d.States = append(d.States, e.ruleState(sr))
	}
	return d, nil
}

// ruleState is a state r reads as its page shows it: what the entity
// holds now, when its id does not depend on the trigger.
func (e *Engine) ruleState(sr rules.StateRead) status.RuleState {
	rs := status.RuleState{Name: sr.Name, Entity: sr.Entity}
	if sr.MaxAge > 0 {
		rs.MaxAge = sr.MaxAge.String()
	}
	if e.cfg.States == nil || strings.Contains(sr.Entity, "{{") {
		return rs
	}
	if b, seen, ok := e.cfg.States.State(sr.Entity); ok {
		rs.State, rs.Seen = b, &seen
		rs.Stale = sr.MaxAge > 0 && e.clock.Now().Sub(seen) > sr.MaxAge
	}
	return rs
}

// Pending lists the waiting durable steps, soonest first (in a fleet,
// every shard's, held here or not: Config.PendingHashes).
func (e *Engine) Pending() ([]status.PendingRecord, error) {
	return ListPending(e.pending, e.cfg.PendingHashes...)
}

// ListPending reads the waiting steps from a store, soonest first, without
// changing it (a running daemon reads through its API; `ruled pending ls`
// opens the store itself when no daemon runs): from the standard hash, or
// from the hashes named (fleet mode's shards).
func ListPending(ps *seq.PendingStore, hashes ...string) ([]status.PendingRecord, error) {
	if len(hashes) == 0 {
		hashes = []string{seq.PendingHash}
	}
	var recs []seq.Pending
	for _, h := range hashes {
		rs, err := ps.ListHash(h)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rs...)
	}
	out := make([]status.PendingRecord, 0, len(recs))
	for _, p := range recs {
		step := p.Step
		if step == "" {
			step = "#" + strconv.Itoa(p.StepIndex)
		}
		out = append(out, status.PendingRecord{Run: p.ID, Rule: p.Rule, Step: step, Pass: p.Iter, Due: p.Due(),
			Fingerprint: p.Fingerprint, Digest: p.Digest, Event: p.EventID})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Due.Before(out[j].Due) })
	return out, nil
}

// Runs lists the runs the execution log keeps, newest first.
func (e *Engine) Runs(f runlog.Filter) ([]runlog.Run, error) {
	if e.xlog == nil {
		return nil, status.ErrNoExecLog
	}
	e.xlog.Flush() // what this process wrote so far is there to read
	return runlog.List(e.xlog.Reader(), f)
}

// RunTree is a run and its sub-runs as a depth-marked list (runlog.Tree).
func (e *Engine) RunTree(id string) ([]runlog.Row, error) {
	if e.xlog == nil {
		return nil, status.ErrNoExecLog
	}
	e.xlog.Flush()
	return runlog.Tree(e.xlog.Reader(), id)
}

// WhyNot says why a loaded rule started no run for the triggers it
// turned away, by reason (seq.Runner.WhyNot): this process's, since it
// started.
func (e *Engine) WhyNot(rule string) ([]seq.WhyNot, error) {
	if e.Current(rule) == nil {
		return nil, fmt.Errorf("%w %q", status.ErrUnknownRule, rule)
	}
	return e.runner.WhyNot(rule), nil
}

// ExecLogStats is the execution log writer's counters; zero when it is
// off.
func (e *Engine) ExecLogStats() runlog.Stats {
	if e.xlog == nil {
		return runlog.Stats{}
	}
	return e.xlog.Stats()
}

// markInterrupted ends, in the log, the runs a stopped process left
// running that Replay will not resume: no durable step was waiting for
// them, so nothing will ever end them. Each is judged by where its log
// ends (runlog.Unended): a run waiting in a durable delay whose record is
// gone went on unlogged (the step came due in the log's last moments
// before a kill); any other was interrupted there. Their open node stays
// open, which is where the log stops. It runs once, before Replay (a replayed
// run could otherwise end with its last entry still queued and look
// abandoned), and leaves alone every run with a pending record.
func (e *Engine) markInterrupted(recs []seq.Pending, listErr error) {
	if e.xlog == nil {
		return
	}
	index, err := e.xlog.Reader().Index()
	if err != nil {
		e.log.Warn("execution log: cannot list runs left running", "error", err)
		return
	}
	// A run with a pending record is not interrupted: Replay resumes it
	// (or drops it, with the reason, in its own log entries).
	if listErr != nil {
		e.log.Warn("execution log: cannot list the waiting steps; no run is marked interrupted", "error", listErr)
		return
	}
	waiting := map[string]bool{}
	for _, p := range recs {
		waiting[p.ID] = true
	}
	now := e.clock.Now()
	n, unlogged := 0, 0
	for _, m := range index {
		if m.Outcome != runlog.Running || waiting[m.ID] || e.runner.Live(m.ID) {
			continue
		}
		ex, nodes, err := runlog.ReadRun(e.xlog.Reader(), m.ID)
		if err != nil || ex == nil {
			continue
		}
		x := *ex
		x.Outcome, x.Error = runlog.Unended(nodes)
		x.Ended = now
		e.xlog.Run(x)
		if x.Outcome == runlog.Unlogged {
			unlogged++
		} else {
			n++
		}
	}
	if n+unlogged > 0 {
		e.log.Info("execution log: runs a stopped process left running marked", "interrupted", n, "unlogged", unlogged)
	}
}
