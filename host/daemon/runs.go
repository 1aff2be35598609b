package daemon

import (
	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq"
)

// Runs lists the runs the execution log keeps, newest first.
func (d *Daemon) Runs(f runlog.Filter) ([]runlog.Exec, error) {
	if d.xlog == nil {
		return nil, api.ErrNoExecLog
	}
	d.xlog.Flush() // what this process wrote so far is there to read
	return runlog.List(d.xlog.Reader(), f)
}

// RunTree is a run and its sub-runs as a depth-marked list (runlog.Tree).
func (d *Daemon) RunTree(id string) ([]runlog.Row, error) {
	if d.xlog == nil {
		return nil, api.ErrNoExecLog
	}
	d.xlog.Flush()
	return runlog.Tree(d.xlog.Reader(), id)
}

// ExecLogStats is the execution log writer's counters; zero when it is
// off.
func (d *Daemon) ExecLogStats() runlog.Stats {
	if d.xlog == nil {
		return runlog.Stats{}
	}
	return d.xlog.Stats()
}

// Idle reports whether no step is queued or running on the workers: what
// has been set off has run (sdk/ruletest settles on it).
func (d *Daemon) Idle() bool {
	ps := d.pool.Stats()
	return ps.Queued == 0 && ps.Busy == 0
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
func (d *Daemon) markInterrupted(recs []seq.Pending, listErr error) {
	if d.xlog == nil {
		return
	}
	index, err := d.xlog.Reader().Index()
	if err != nil {
		d.log.Warn("execution log: cannot list runs left running", "error", err)
		return
	}
	// A run with a pending record is not interrupted: Replay resumes it
	// (or drops it, with the reason, in its own log entries).
	if listErr != nil {
		d.log.Warn("execution log: cannot list the waiting steps; no run is marked interrupted", "error", listErr)
		return
	}
	waiting := map[string]bool{}
	for _, p := range recs {
		waiting[p.ID] = true
	}
	now := d.sch.Now()
	n, unlogged := 0, 0
	for _, m := range index {
		if m.Outcome != runlog.Running || waiting[m.ID] || d.runner.Live(m.ID) {
			continue
		}
		ex, nodes, err := runlog.ReadRun(d.xlog.Reader(), m.ID)
		if err != nil || ex == nil {
			continue
		}
		e := *ex
		e.Outcome, e.Error = runlog.Unended(nodes)
		e.Ended = now
		d.xlog.Exec(e)
		if e.Outcome == runlog.Unlogged {
			unlogged++
		} else {
			n++
		}
	}
	if n+unlogged > 0 {
		d.log.Info("execution log: runs a stopped process left running marked", "interrupted", n, "unlogged", unlogged)
	}
}
