package seq

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq/core"
)

// scheduleLocked submits the run's next step, or parks it for the step's
// after. A durable step's record is written before the timer is armed
// (parkLocked): the write is an effect, and its answer comes back through
// apply, where a cancel that arrived meanwhile wins and the record goes.
//
// A run whose record follows it (it has passed a durable point) is
// recorded at every step it reaches, its afters included: follow, and
// park as a durable wait.
func (sm *machine) scheduleLocked(r *run, fx *effects) {
	if r.Over() {
		return
	}
	st := &r.seq.Steps[r.Step]
	switch g := core.Schedule(st.After, st.Durable, r.Record, sm.store != nil); g.Kind {
	case core.Submit:
		sm.submitLocked(r)
	case core.Follow:
		sm.followLocked(r, st, fx)
	case core.Park:
		sm.parkLocked(r, st, g.After, g.Durable, "", fx)
	}
}

// parkLocked waits d before the run's step st runs, as a durable record
// when durable: an after delay (retry "") or the wait before attempt
// r.Attempt of a failed step (retry says which attempt, for the log). The
// record is written before the timer is armed (parkedLocked, with the
// write's answer), so a crash during the wait replays it.
func (sm *machine) parkLocked(r *run, st *CompiledStep, d time.Duration, durable bool, retry string, fx *effects) {
	if r.Over() {
		return
	}
	if st.Wait != nil {
		sm.book.openWait(r, st, durable)
	} else {
		sm.book.openDelay(r, st.Name, d, durable, retry)
	}
	r.Hand = core.HandParking
	if !durable {
		sm.parkedLocked(r, st, d, core.NotWritten, fx)
		return
	}
	w := write{rec: sm.record(r, st, d), aside: sm.parkAsideLocked()}
	if r.tk != nil {
		w.put = r.tk.put // the first record, written as the caller asked
	}
	w.then = func(err error, fx *effects) {
		wrote := core.WriteOK
		switch {
		case errors.Is(err, ErrNotHeld):
			sm.log.Info("a run's trigger is no longer this process's; its new holder admits it",
				"rule", r.seq.Rule.ID, "run", r.id, "error", err)
			wrote = core.WriteNotHeld
		case err != nil:
			// The step still runs, from memory: losing durability is better
			// than losing the step.
			sm.log.Error("cannot record a durable step; it will not survive a restart",
				"rule", r.seq.Rule.ID, "step", st.Name, "run", r.id, "error", err)
			wrote = core.WriteFailed
		}
		sm.parkedLocked(r, st, d, wrote, fx)
	}
	fx.writes = append(fx.writes, w)
}

// MaxParking is the most runs whose records are written (park) or
// removed (advance, a run completed), or whose step's owed writes are
// waited for (runStep), aside at once: past it a run's worker does it
// itself, and waits.
const MaxParking = 1024

// parkAsideLocked takes a slot for a record written on a goroutine of its own
// rather than on the run's worker: the worker goes on to the next run's
// step, and the records of many runs parking together share the store's
// commit (issue 39: one fsync a run on the one worker held a durable rule
// to a thousandth of the same rule without). False when MaxParking are
// being written, or once the runner is stopped (Stop waits for the
// slots taken before).
func (sm *machine) parkAsideLocked() bool {
	if sm.stopped {
		return false
	}
	select {
	case sm.parking <- struct{}{}:
		sm.parks.Add(1)
		sm.aside.Add(1)
		sm.quiet.add()
		return true
	default:
		return false
	}
}

// parkedAside gives back parkAsideLocked's slot.
func (rn *Runner) parkedAside() {
	defer rn.m.quiet.done()
	rn.m.aside.Add(-1)
	<-rn.m.parking
	rn.m.parks.Done()
}

// parkedLocked arms a parking run's timer once its record's write has
// answered (wrote; NotWritten when not durable): park's second half.
func (sm *machine) parkedLocked(r *run, st *CompiledStep, d time.Duration, wrote core.Wrote, fx *effects) {
	p := core.Parked(&r.Run, wrote)
	switch {
	case p.LetGo:
		sm.endLocked(r, core.Stop)
		r.Release()
		r.tk.abandon()
		r.tk = nil
		return
	case p.Ended:
		// A run cancelled meanwhile takes its record along; one let go of
		// (Stop, its place released) keeps it for whoever replays it next —
		// in a fleet the record may be all that holds the event now.
		if p.DropRecord {
			fx.drop(r.id)
		}
		if r.Handover && r.Running == 0 && !r.Ended() {
			// It closed while this record was written: its finally steps
			// (and their record, which replaces this one) begin now.
			r.Handover = false
			sm.submitLocked(r)
		}
		return
	}
	if p.Settle {
		r.tk.settle() // the record holds the event now
		r.tk = nil
	}
	r.parked = st
	if r.rare != nil {
		r.rare.pinned = false
	}
	if d := r.data(); d != nil {
		d.view = nil // built again when the step runs: a parked run keeps its outputs' JSON only
	}
	switch {
	case p.Drop: // an operator dropped it while it parked
		fx.drop(sm.dropRunLocked(r, r.seq.Rule.ID, "dropped by "+r.byOf())...)
		return
	case p.Now: // an operator asked for it now while it parked
		sm.dueLocked(r, fx)
		return
	}
	r.timer, r.AtStep = sm.sch.AfterFunc(d, func() { sm.drv.due(r) }), true
	if st.Wait != nil {
		sm.awaitLocked(r, "")
		sm.catchUpLocked(r, st)
	}
}

// record is the pending record for r waiting d on st.
func (sm *machine) record(r *run, st *CompiledStep, d time.Duration) Pending {
	sm.warmLocked(r)
	now := sm.sch.Now()
	attempt := 0
	if r.Attempt > 1 {
		attempt = int(r.Attempt)
	}
	return Pending{
		ID: r.id, Rule: r.seq.Rule.ID, Source: r.event.Topic, Step: st.Name, StepIndex: r.Step,
		Iter: r.Pass, FireAt: now.Add(d).UnixMilli(), WrittenAt: now.UnixMilli(), Attempt: attempt,
		Remaining: d.Milliseconds(), Fingerprint: st.Fingerprint, Digest: st.Digest, Key: r.key,
		EventID: r.event.ID, EventTime: r.event.Time.UnixNano(), Event: r.triggerJSON(), Hops: r.event.Hops, Trace: r.event.Trace,
		Started: r.startedAt().UnixMilli(), Parent: r.few().parent, Node: int(r.nodes.Load()), DelayNode: int(r.delay.Seq),
		Steps: stepsJSON(r.outputs()), Vars: r.vars(), Previous: r.previous(), WaitKey: recordedWaitKey(r, st),
	}
}

// due runs when a parked step's timer fires.
func (rn *Runner) due(r *run) { rn.apply(func(fx *effects) { rn.m.dueLocked(r, fx) }) }

// dueLocked is a parked step come due. The waiting step is judged
// against the rule as loaded now (judge, an effect: it may load a
// module): it runs, runs on the module it was scheduled with, or is
// dropped with a reason — the same rule Replay applies after a restart.
func (sm *machine) dueLocked(r *run, fx *effects) {
	r.timer, r.AtStep = nil, false
	if !r.Over() {
		sm.unawaitLocked(r) // a wait-for's time is up: no event is taken past it
	}
	in := core.DueIn{Owned: sm.owns == nil || sm.owns(r.seq.Rule.ID, r.key)}
	if sm.gate != nil && !r.Over() && in.Owned {
		in.Hold, in.Drop = sm.gate.Due(r.seq.Rule.ID)
	}
	kind, why := core.Due(&r.Run, in)
	if kind == core.DueJudge {
		fx.judge = append(fx.judge, judging{r: r, w: r.waitingFor(), seq: r.seq, in: in})
		return
	}
	sm.dueNowLocked(r, r.seq, kind, why, fx)
}

// judging is a run whose step came due, to judge (effects.judge): the
// step it waited for and the sequence it was parked with, and what its
// rule's gate and place said.
type judging struct {
	r   *run
	w   waitFor
	seq *Sequence
	in  core.DueIn
}

// judgeDue judges j's step and feeds the verdict back.
func (rn *Runner) judgeDue(j judging) {
	v := rn.judge(j.seq.Rule.ID, j.w, func(string) *Sequence { return j.seq })
	rn.apply(func(fx *effects) {
		r, in := j.r, j.in
		in.Judged, in.Verdict = true, v.drop
		if v.drop == "" && !r.Over() { // an ended run is not moved: Due says gone
			r.seq, r.Step = v.seq, v.idx
			if v.pinned != nil || r.rare != nil {
				r.more().override = v.pinned
			}
			in.Wait = r.seq.Steps[r.Step].Wait != nil
		}
		kind, why := core.Due(&r.Run, in)
		if kind == core.DueRun && v.pinned != nil {
			why = "runs on the module it was scheduled with"
		}
		rn.m.dueNowLocked(r, j.seq, kind, why, fx)
	})
}

// dueNowLocked does what core.Due said of r's step come due (kind, why);
// captured is the sequence r was parked with.
func (sm *machine) dueNowLocked(r *run, captured *Sequence, kind core.DueKind, why string, fx *effects) {
	switch kind {
	case core.DueGone:
	case core.DueLetGo:
		sm.endLocked(r, core.Stop)
	case core.DueHold:
		sm.book.closeDelay(r, runlog.Held, "came due while its rule was paused or asleep")
		sm.holdLocked(r)
	case core.DueDrop:
		fx.drop(sm.dropRunLocked(r, captured.Rule.ID, why)...)
	case core.DueWaitOver:
		if r.rare != nil {
			r.rare.override = nil
		}
		goOn, drops := sm.waitOverLocked(r, &r.seq.Steps[r.Step])
		fx.drop(drops...)
		if goOn {
			sm.advanceLocked(r, false, fx)
		} else {
			fx.complete = append(fx.complete, r.seq.Rule.ID)
		}
	default: // core.DueRun
		sm.book.closeDelay(r, runlog.OK, why)
		sm.submitLocked(r)
	}
}

// holdLocked keeps r, whose next step is due while its rule is paused or
// asleep, for ReleaseHeld.
func (sm *machine) holdLocked(r *run) {
	r.more().dueAt = sm.sch.Now()
	if sm.gated == nil {
		sm.gated = map[string][]*run{}
	}
	sm.gated[r.seq.Rule.ID] = append(sm.gated[r.seq.Rule.ID], r)
}

// jobLocked is a pool job of r's rule and key (band, group, fairness
// key) that runs f.
func jobLocked(r *run, f func()) pool.Job {
	return pool.Job{Band: r.seq.Rule.Priority, Group: r.seq.Rule.ID, Key: fairKey(r.seq.Rule, r.key), Run: f}
}

// submitLocked hands the run's next step to the pool. Never refused: the run
// was admitted already.
// A run's finally step is its own kind of job: a step of the run's own
// that was queued before it ended finds the run final and does not run.
func (sm *machine) submitLocked(r *run) {
	sm.warmLocked(r)
	fin := r.Final
	sm.drv.submit(jobLocked(r, func() { sm.drv.runStep(r, fin) }))
}

// runStep runs on a worker. A step given to the pool runs even if its run
// was cancelled meanwhile; the completion callback (advance) is where a
// cancelled run stops.
func (rn *Runner) runStep(r *run, fin bool) {
	var runs bool
	var override *CompiledStep
	var failErr error
	rn.apply(func(*effects) { runs, override, failErr = rn.m.beginLocked(r, fin) })
	if !runs {
		return
	}
	handedOn := false // the step's end went to a goroutine of its own (owed)
	defer func() {
		if !handedOn {
			rn.stepOver(r)
		}
	}()
	if fin {
		rn.runFinally(r)
		return
	}
	st := &r.seq.Steps[r.Step]
	if override != nil { // the step's function on the module it was scheduled with
		st = override
	}
	if st.Wait != nil && failErr == nil {
		rn.startWait(r, st)
		return
	}
	var began time.Time
	if rn.obs != nil {
		began = time.Now() // real time: a metric of the machine, not of the rule's clock
	}
	attempt := max(int(r.Attempt), 1)
	c := callFor(r.seq, r.event, st, r.id, r.Pass)
	c.Info.Attempt = uint32(attempt)
	c.Context = rn.contextOf(r)
	var node runlog.Node
	if rn.book != nil {
		node = rn.book.node(r, runlog.Node{Kind: runlog.KindStep, Name: st.Name, Do: st.Do, Digest: st.Digest,
			Started: rn.sch.Now(), Outcome: runlog.Open})
	}
	c.Trace = rn.stepTrace(r, node.Seq)
	var told []string
	if rn.book != nil {
		c.Effects = &told
	}
	read := core.Reads(r.Pos, r.shape())
	var run bool
	var out []byte
	var condErr, actErr error
	if failErr != nil {
		// The run's variables are past the bound, or its trigger could not
		// be read back: the step fails as if its action had, for good
		// (VarsError and RereadError are permanent).
		run, actErr = true, failErr
	} else {
		var owed []func() error
		c.Owed = &owed
		run, out, condErr, actErr = rn.perform(st, c, read)
		if len(owed) > 0 {
			// The action queued writes (its publishes into the outbox)
			// that must be in the store before the step counts as done.
			// They are waited for aside when there is room, so that the
			// worker runs the next run's step and its writes join the
			// same commit: one fsync a step on the one worker held a
			// publishing flow to ~1,400 alerts/s (issue 39).
			var aside bool
			rn.apply(func(*effects) { aside = rn.m.parkAsideLocked() })
			if aside {
				handedOn = true
				go func() {
					defer rn.parkedAside()
					defer rn.stepOver(r)
					actErr = cmp.Or(actErr, pay(owed))
					rn.stepDone(r, st, c, node, began, attempt, told, run, out, condErr, actErr)
				}()
				return
			}
			actErr = cmp.Or(actErr, pay(owed))
		}
	}
	rn.stepDone(r, st, c, node, began, attempt, told, run, out, condErr, actErr)
}

// beginLocked is a step of r (a finally step when fin) taken by a
// worker: whether it runs, and what few runs have for it, taken (a
// cancel may make r's rare part while the step runs: more).
func (sm *machine) beginLocked(r *run, fin bool) (runs bool, override *CompiledStep, failErr error) {
	if !r.Ended() && sm.owns != nil && !sm.owns(r.seq.Rule.ID, r.key) {
		// The key's place moved, or this process can no longer be sure it
		// holds it, while the step waited for a worker: the place's holder
		// replays the record and runs the step; here the run just ends.
		sm.endLocked(r, core.Stop)
		r.Release()
	}
	if r.Phase == core.Released || r.Final != fin || fin && r.Ended() {
		// Released; or a step of its own queued before the run ended (its
		// finally steps run instead); or a finally step of a run stopped.
		return false, nil, nil
	}
	r.Running++
	if r.rare != nil && !fin {
		override, failErr = r.rare.override, r.rare.failErr
		r.rare.override, r.rare.failErr = nil, nil
	}
	return true, override, failErr
}

// pay runs a call's owed waits (Call.Owed): the first error.
func pay(owed []func() error) error {
	var first error
	for _, wait := range owed {
		first = cmp.Or(first, wait())
	}
	return first
}

// stepOver marks r's step no longer running, and hands a run that ended
// meanwhile to its finally steps.
func (rn *Runner) stepOver(r *run) {
	if rn.beforeOver != nil {
		rn.beforeOver()
	}
	rn.apply(func(*effects) {
		r.Running--
		if r.Running == 0 && r.Handover && !r.Ended() {
			r.Handover = false
			rn.m.submitLocked(r) // the run ended while this step ran: its finally steps now
		}
	})
}

// stepDone is runStep's second half, once the step's action (and what
// it owed) is done: the outcome — cut, failed, tried again or gone on
// from (core.Settle) — its node and its metrics. One lock: the decision
// and what it changes on the run, together.
func (rn *Runner) stepDone(r *run, st *CompiledStep, c *Call, node runlog.Node, began time.Time, attempt int, told []string,
	run bool, out []byte, condErr, actErr error) {
	var stepErr error
	var retryIn time.Duration // > 0: the step is to be tried again after it
	var retryNote string
	if condErr != nil {
		// Not retried: a condition sees only the event, so it would fail
		// the same way again.
		stepErr = fmt.Errorf("its condition: %w", condErr)
	}
	if actErr != nil {
		stepErr = actErr
		retryIn, retryNote = retryPlan(r, st, attempt, actErr)
	}
	failed := stepErr != nil
	var unread *RereadError
	// The record covered the step until it ran, and stays: advance moves
	// it to the next step (schedule, follow) or drops it when the run
	// ends, so a crash during any later step runs that step again (at
	// least once) rather than losing it. A step tried again keeps it too:
	// the retry's record replaces it.
	var kind core.SettleKind
	var recorded bool
	var children []string
	rn.apply(func(*effects) {
		kind = core.Settle(&r.Run, attempt, core.SettleIn{Failed: failed, RetryIn: retryIn,
			ContinueOnError: st.ContinueOnError, Unread: errors.As(actErr, &unread)})
		recorded = r.Record != core.NoRecord
		children = r.takeChildren()
		if kind != core.SettleCut {
			r.setOutputLocked(st.Name, out)
			switch {
			case kind == core.SettleFail:
				r.more().errText = "step " + st.Name + ": " + stepErr.Error()
			case failed && kind == core.SettleGoOn && r.rare != nil:
				r.rare.errText = "" // on-error: continue: the run's outcome is the rest's
			}
		}
	})
	if kind == core.SettleCut {
		rn.cut(r, st, node, cmp.Or(condErr, actErr), recorded, children)
		return
	}
	switch {
	case kind == core.SettleRetry:
		rn.log.Info("step failed; it is tried again", "rule", r.seq.Rule.ID, "step", st.Name, "run", r.id,
			"attempt", attempt, "of", st.Retry.Attempts, "in", retryIn, "error", stepErr)
	case retryIn > 0:
		retryIn, retryNote = 0, "not retried: its run ended meanwhile"
	case condErr != nil:
		rn.errored(r.seq.Rule.ID, condErr)
		rn.warn.folded("step condition failed", r.seq.Rule.ID, st.Name, "run", r.id, "error", condErr)
	case failed:
		// The rule's error budget counts a step that failed for good,
		// not each attempt.
		rn.errored(r.seq.Rule.ID, actErr)
		rn.warn.folded("step failed", r.seq.Rule.ID, st.Name, "run", r.id, "error", actErr)
	}
	if rn.book != nil {
		node.Ended, node.Outcome, node.Children = rn.sch.Now(), runlog.OK, children
		node.Output, node.Detail = rn.book.bounded("output", out)
		switch {
		case failed:
			node.Outcome, node.Error, node.Detail = runlog.Failed, stepErr.Error(), retryNote
			if st.ContinueOnError && retryIn == 0 {
				node.Detail = joinDetail(node.Detail, "on-error: continue")
			}
		case !run:
			node.Outcome, node.Detail = runlog.Skipped, "its condition said no"
		}
		rn.book.stepDetail(&node, st, c, told)
		rn.book.tracer.Node(node)
	}
	if rn.obs != nil {
		rn.obs.Step(r.seq.Rule.ID, st.Name, time.Since(began), failed)
	}
	rn.apply(func(fx *effects) {
		if kind == core.SettleRetry {
			rn.m.parkLocked(r, st, retryIn, rn.store != nil, fmt.Sprintf("attempt %d of %d", attempt+1, st.Retry.Attempts), fx)
			return
		}
		rn.m.advanceLocked(r, kind == core.SettleFail, fx)
	})
}

// cut ends a step that failed after its run was let go — the process is
// stopping (Stop) or the run's place was taken over (ReleaseWhere) — most
// often because the services the step called were going away with it (a
// publish refused by a daemon stopping). That is nobody's error: it is not
// counted against the rule, not retried, and not the run's end. The
// run's record, if it has one (recorded), is left as it is, so whoever
// replays it next runs the step again, under the same idempotency key.
func (rn *Runner) cut(r *run, st *CompiledStep, node runlog.Node, err error, recorded bool, children []string) {
	detail := "cut: its process was letting the run go; not counted; nothing records it"
	if recorded {
		detail = "cut: its process was letting the run go; not counted; its record runs it again"
	}
	rn.log.Info("a step failed while its run was let go; not counted", "rule", r.seq.Rule.ID, "step", st.Name,
		"run", r.id, "recorded", recorded, "error", err)
	if rn.book != nil {
		node.Ended, node.Outcome, node.Children = rn.sch.Now(), runlog.Interrupted, children
		node.Error, node.Detail = err.Error(), detail
		rn.book.tracer.Node(node)
	}
}

// perform runs st's condition and, when it holds, its action: whether
// the action ran, its output (outputOf), and the error of the one that
// failed. The output is bounded when read says a later step or finally
// step may read it; otherwise it is made for the execution log only, or,
// without a log, not at all: a rule's last action pays nothing for
// outputs, and is never failed by a bound nothing needed.
func (rn *Runner) perform(st *CompiledStep, c *Call, read bool) (ran bool, out []byte, condErr, actErr error) {
	if st.When != nil {
		ok, err := st.When.When(rn.ctx, c)
		if err != nil || !ok {
			return false, nil, err, nil
		}
	}
	res, err := st.Action.Act(rn.ctx, c)
	switch {
	case err != nil:
	case read:
		out, err = outputOf(res, rn.maxOutput)
	case rn.book != nil: // for the log only: not bounded, as no step keeps it
		out, _ = outputOf(res, math.MaxInt)
	}
	return true, out, nil, err
}

// runFinally runs the run's finally step r.Step on a worker: its
// condition, then its action; a failure is logged, counted against the
// rule and marks a run that had completed failed, and the next finally
// step runs all the same.
func (rn *Runner) runFinally(r *run) {
	rn.apply(func(fx *effects) {
		if !r.FinRecord {
			return
		}
		r.FinRecord = false
		now := rn.sch.Now()
		rec := Pending{ID: r.id, Rule: r.seq.Rule.ID, Source: r.event.Topic, Step: r.seq.Finally[0].Name, Iter: r.Pass,
			FireAt: now.UnixMilli(), WrittenAt: now.UnixMilli(), Finally: r.Why.String(), Key: r.key,
			EventID: r.event.ID, EventTime: r.event.Time.UnixNano(), Event: r.triggerJSON(), Hops: r.event.Hops, Trace: r.event.Trace,
			Started: r.startedAt().UnixMilli(), Parent: r.few().parent, Node: int(r.nodes.Load()), Steps: stepsJSON(r.outputs()), Vars: r.vars(), Previous: r.previous()}
		fx.writes = append(fx.writes, write{rec: rec, then: func(err error, _ *effects) {
			if err == nil {
				r.Record = core.Written
				return
			}
			rn.log.Error("cannot record a run's finally steps; a crash now would skip them", "rule", r.seq.Rule.ID, "run", r.id, "error", err)
			r.Record = core.Uncertain
		}})
	})
	st := &r.seq.Finally[r.Step]
	c := callFor(r.seq, r.event, st, r.id, r.Pass)
	c.Info.Attempt = 1
	c.Context = rn.contextOf(r)
	var node runlog.Node
	if rn.book != nil {
		node = rn.book.node(r, runlog.Node{Kind: runlog.KindStep, Name: st.Name, Do: st.Do, Digest: st.Digest,
			Started: rn.sch.Now(), Outcome: runlog.Open})
	}
	c.Trace = rn.stepTrace(r, node.Seq)
	var began time.Time
	if rn.obs != nil {
		began = time.Now()
	}
	var told []string
	if rn.book != nil {
		c.Effects = &told
	}
	doIt, out, condErr, stepErr := rn.perform(st, c, core.Reads(r.Pos, r.shape()))
	if condErr != nil {
		stepErr = fmt.Errorf("its condition: %w", condErr)
	}
	if stepErr != nil {
		rn.errored(r.seq.Rule.ID, stepErr)
		rn.warn.folded("finally step failed", r.seq.Rule.ID, st.Name, "run", r.id, "error", stepErr)
	}
	var children []string
	rn.apply(func(*effects) {
		children = r.takeChildren()
		r.setOutputLocked(st.Name, out)
		if stepErr != nil && r.Why == core.Completed {
			r.Why, r.more().errText = core.Failed, "finally step "+st.Name+": "+stepErr.Error()
		}
	})
	if rn.book != nil {
		node.Ended, node.Outcome, node.Children, node.Detail = rn.sch.Now(), runlog.OK, children, "finally"
		var note string
		node.Output, note = rn.book.bounded("output", out)
		node.Detail = joinDetail(node.Detail, note)
		switch {
		case stepErr != nil:
			node.Outcome, node.Error = runlog.Failed, stepErr.Error()
		case !doIt:
			node.Outcome, node.Detail = runlog.Skipped, "finally; its condition said no"
		}
		rn.book.stepDetail(&node, st, c, told)
		rn.book.tracer.Node(node)
	}
	if rn.obs != nil {
		rn.obs.Step(r.seq.Rule.ID, st.Name, time.Since(began), stepErr != nil)
	}
	rn.apply(func(fx *effects) {
		switch m := core.Advance(r.Pos, r.shape(), false); {
		case r.Ended(): // stopped meanwhile
		case m.Kind == core.Next:
			r.Pos = m.To
			rn.m.submitLocked(r)
		default: // core.Closed
			fx.drop(rn.m.endLocked(r, r.Why)...)
			if queued := rn.m.startQueuedLocked(r, fx); queued != nil {
				rn.m.scheduleLocked(queued, fx)
			}
		}
	})
}

// Permanent is what an error says when trying again would fail the same
// way: a plugin's StatusPermanent (host/wasm.CallError). Declared here,
// where it is consumed, so this package does not know plugins are wasm.
type Permanent interface {
	error
	Permanent() bool
}

// retryPlan says whether the failed attempt of st is tried again and
// after how long (0: not), and what the log's node says about it.
func retryPlan(r *run, st *CompiledStep, attempt int, err error) (time.Duration, string) {
	p, ok := errors.AsType[Permanent](err)
	return core.Retry(st.Retry, attempt, ok && p.Permanent(), func() float64 {
		return core.Jitter(r.id, st.Name, r.Pass, attempt+1)
	})
}

func joinDetail(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// advanceLocked is a step's completion: the next step, the next pass, or
// the end of the run.
func (sm *machine) advanceLocked(r *run, failed bool, fx *effects) {
	var next *run
	var drops []string
	completed := false
	if r.Over() {
		// Cancelled or stopped while the step ran: the tail stops here
		// (a run with finally steps hands over to them: runStep). A run
		// let go of keeps its record for whoever replays it, moved past
		// the step that has just run.
		if r.LetGo() && !failed && r.Record != core.NoRecord && sm.store != nil {
			sm.movePastLocked(r, fx)
		}
	} else {
		switch m := core.Advance(r.Pos, r.shape(), failed); m.Kind {
		case core.Fail:
			drops = sm.endLocked(r, core.Failed)
		case core.Next:
			r.Pos = m.To
			next = r
		case core.NextPass:
			r.Pos = m.To
			if d := r.data(); d != nil { // a pass sees its own steps' outputs
				d.outputs, d.view = nil, nil
			}
			if m.Gap > 0 {
				sm.book.openDelay(r, fmt.Sprintf("pass %d", r.Pass+1), m.Gap, false, "")
				r.timer = sm.sch.AfterFunc(m.Gap, func() { sm.drv.nextPass(r) })
				sm.recordPassLocked(r, m.Gap, fx)
			} else {
				next = r
			}
		case core.Complete:
			drops = sm.endLocked(r, core.Completed)
			completed = true
		}
	}
	// A run that is over with no finally steps to go writes no record of
	// its id again: its record may go aside, its worker free for the next
	// step (the removal's commit shared with others'). Otherwise the
	// removal comes first, on the worker, so that it cannot land after
	// the finally steps' record.
	if completed && !r.Final && len(drops) > 0 && (len(fx.aside) > 0 || sm.parkAsideLocked()) {
		fx.aside = append(fx.aside, drops...)
	} else {
		fx.drop(drops...)
	}
	if completed {
		fx.complete = append(fx.complete, r.seq.Rule.ID)
	}
	queued := sm.startQueuedLocked(r, fx)
	if next != nil {
		sm.scheduleLocked(next, fx)
	}
	if queued != nil {
		sm.scheduleLocked(queued, fx)
	}
}

// recordPassLocked moves the record of a run past its durable point to
// the first step of its next pass, due after gap (and that step's
// after), unless that step is a wait-for: its record named the step of the pass that had just run, and a
// kill or a stop during the gap ran that step again at the next start,
// and began the gap anew (an outside tester's soak: a repeat's step ran
// twice in one of four kills).
func (sm *machine) recordPassLocked(r *run, gap time.Duration, fx *effects) {
	st := &r.seq.Steps[r.Step]
	if r.Record == core.NoRecord || sm.store == nil || st.Wait != nil {
		// A pass that begins with a wait-for keeps the record of the step
		// that ran (at least once): a wait's record is armed at once at a
		// start, and would listen through the gap and time out at its end.
		return
	}
	fx.writes = append(fx.writes, write{rec: sm.record(r, st, gap+max(st.After, 0)), then: func(err error, fx *effects) {
		switch {
		case err != nil:
			sm.log.Error("cannot record a run's next pass; a crash now runs the pass before it again",
				"rule", r.seq.Rule.ID, "run", r.id, "error", err)
		case r.Over() && !r.LetGo():
			fx.drop(r.id) // ended meanwhile: this write may have put its record back
		}
	}})
}

// movePastLocked writes the record of a run let go of while a step of it
// ran, moved past that step: the next step's, due after its after; or,
// when the run's steps are done, drops it. A run with another pass or
// finally steps to go keeps the record of the step that ran (the next
// start runs it again: at least once), as their position is not one a
// record of a step can name.
func (sm *machine) movePastLocked(r *run, fx *effects) {
	switch past, to := core.MovePast(r.Pos, r.shape()); past {
	case core.PastMove:
		r.Pos = to
		st := &r.seq.Steps[r.Step]
		fx.writes = append(fx.writes, write{rec: sm.record(r, st, max(st.After, 0)), then: func(err error, _ *effects) {
			if err != nil {
				sm.log.Error("cannot move a let-go run's record past the step that ran; its next start runs that step again",
					"rule", r.seq.Rule.ID, "run", r.id, "error", err)
			}
		}})
	case core.PastDrop:
		r.Record = core.NoRecord
		fx.drop(r.id)
	}
}

// followLocked submits r's step st, which has no after, once its record
// says that r is at st: a run that has passed a durable point is recorded
// at every step until it ends (issue 37), so a crash during any of them
// runs that step again at the next start, and the steps after it. The
// write replaces the record of the step before (one Put, no Drop). A
// write that fails leaves that record: the step before runs again after a
// crash.
func (sm *machine) followLocked(r *run, st *CompiledStep, fx *effects) {
	fx.writes = append(fx.writes, write{rec: sm.record(r, st, 0), then: func(err error, fx *effects) {
		if err != nil {
			sm.log.Error("cannot record a run's next step; a crash now runs the step before it again",
				"rule", r.seq.Rule.ID, "step", st.Name, "run", r.id, "error", err)
		}
		if r.Over() {
			// Ended meanwhile: a cancel dropped the record this write may
			// have put back (one let go of keeps it: it names the step to
			// run).
			if !r.LetGo() && err == nil {
				fx.drop(r.id)
			}
			return
		}
		sm.submitLocked(r)
	}})
}

// nextPass runs when the gap between two repeat passes is over.
func (rn *Runner) nextPass(r *run) {
	rn.apply(func(fx *effects) {
		r.timer = nil
		if r.Over() {
			return
		}
		rn.book.closeDelay(r, runlog.OK, "")
		rn.m.scheduleLocked(r, fx)
	})
}

// endLocked ends a run: its timer stopped, its slot freed, its counters
// moved. It returns the ids of pending records to drop — except when the
// runner is stopping, whose records must survive (see Stop).
//
// Ending goes through here for every cause, so there is one definition of
// what ending a run means rather than several that can drift.
func (sm *machine) endLocked(r *run, why core.Outcome) []string {
	durable := len(r.seq.Finally) > 0 && sm.store != nil && durableRule(r.seq)
	end, ok := core.End(&r.Run, why, r.shape(), sm.store != nil, durable)
	if !ok {
		return nil
	}
	sm.unawaitLocked(r)
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	rs := sm.rule(r.seq.Rule.ID)
	ks := rs.key(r.key)
	ks.live = without(ks.live, r)
	if end.Close {
		// The run holds its key's slot until its finally steps are
		// done (closing): a cancel no longer finds it.
		m := ks.more()
		m.closing = append(m.closing, r)
		if r.rare != nil {
			r.rare.override = nil
		}
		sm.book.traceClose(r, why)
	} else {
		delete(sm.runs, r.id)
		if ks.m != nil {
			ks.m.closing = without(ks.m.closing, r)
		}
		switch why {
		case core.Completed:
			rs.stats.Completed++
		case core.Failed:
			rs.stats.Failed++
		case core.Cancelled, core.Restarted:
			rs.stats.Cancelled++
		case core.Dropped:
			rs.stats.Dropped++
		}
		sm.book.traceEnd(r, why)
		if why != core.Stop && sm.onEnd != nil {
			sm.onEnd(r.seq.Rule.ID)
		}
	}
	if end.Settle {
		r.tk.settle()
	} else {
		r.tk.abandon() // let go before its first record: not settled here
	}
	r.tk = nil
	if end.Submit {
		sm.submitLocked(r)
	}
	if end.Drop {
		return []string{r.id}
	}
	return nil
}

// durableRule reports whether any of s's steps is durable: its runs'
// finally steps are recorded.
func durableRule(s *Sequence) bool {
	return slices.ContainsFunc(s.Steps, func(st CompiledStep) bool { return st.Durable || st.Wait != nil })
}

// startQueuedLocked starts the trigger queued behind r's key once r has
// ended and nothing else of that key is live (ModeQueue).
func (sm *machine) startQueuedLocked(r *run, fx *effects) *run {
	if !r.Ended() || sm.stopped {
		return nil
	}
	ks := sm.rule(r.seq.Rule.ID).key(r.key)
	if len(ks.live) > 0 || len(ks.few().closing) > 0 || len(ks.few().queue) == 0 {
		return nil
	}
	t := ks.m.queue[0]
	ks.m.queue = ks.m.queue[1:]
	sm.rule(r.seq.Rule.ID).stats.Started++
	next := sm.startLocked(t.seq, t.event, r.key, t.runID, 0, 0, nil)
	next.tk = t.tk
	fx.keepCooldown(t.seq.Rule, r.key, ks.cooldownUntil)
	sm.book.traceStart(next, nil, "started from the queue")
	return next
}
