package seq

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq/core"
	"github.com/ruled-dev/ruled/internal/traceparent"
)

// Reasons a waiting step is dropped instead of resumed. Each drop is logged
// with its reason and counted (Dropped).
const (
	DropRuleGone    = "rule gone"
	DropStepGone    = "step gone"
	DropStepChanged = "step changed"
	DropOverdue     = "past the replay window"
	DropTooEarly    = "dated further ahead than its step could wait"
	DropBadEvent    = "event does not decode"
)

// ClockCheck reports whether the wall clock can be trusted to date pending
// records: now is the clock, newest the latest time a record was written. A
// device without a real-time clock boots in 1970 or wherever its clock
// stopped, and judging records by that clock would drop all of them as
// dated too far ahead, or fire all of them as overdue.
type ClockCheck func(now, newest time.Time) bool

// ClockAfterNewest trusts the clock once it reads at least the newest write:
// a clock behind what this device already wrote has certainly jumped back.
func ClockAfterNewest(now, newest time.Time) bool { return !now.Before(newest) }

// untrusted is a replayed record waiting for a trusted clock.
type untrusted struct {
	rec  Pending
	run  *run
	step int // the run's step when replayed: a wait-for may have gone on since
}

// Replay picks up the steps that were waiting when the service last went
// down and returns how many it resumed (or holds, waiting for a trusted
// clock). Call it once, after the rules are compiled and before the bus
// subscription starts: a replayed step must not race a live re-fire of the
// same rule.
//
// A record is dropped, with a line saying why, when the rule it names is no
// longer loaded, when the rule no longer has the step it names, when the
// step under that name is not the step the record was written for any more,
// when it is more than window past due, or when it is dated further ahead
// than the step it names could ever wait. The middle two are one situation: a
// user is free to edit their rule files while the service is down, and a
// record whose step moved or was rewritten must not fire whatever took its
// place. The last two are the limits on the clock in both directions.
// Anything left is resumed on the run it belonged to, keeping its id, so the
// record still covers it until it fires.
func (rn *Runner) Replay(seqs []*Sequence, window time.Duration) int {
	if rn.store == nil {
		return 0
	}
	recs, err := rn.store.Load()
	if err != nil {
		rn.log.Error("cannot load pending records; none replayed", "error", err)
		rn.loadTimes()
		return 0
	}
	return rn.ReplayLoaded(seqs, window, recs)
}

// ReplayLoaded is Replay of the records the caller has read with the
// runner's store (PendingStore.Load), for a caller that needs them too:
// one read of every record at a start, not one for each use (issue 38:
// 100,000 records took 0.7 s to read and decode, each time).
func (rn *Runner) ReplayLoaded(seqs []*Sequence, window time.Duration, recs []Pending) int {
	if rn.store == nil {
		return 0
	}
	rn.loadTimes()
	return rn.replay(seqs, window, recs, false)
}

// ReplayHash is Replay for the records filed under one hash (a place's,
// Placement.HashOf), for a process that has just taken the place over: its
// runs resume here, under their ids, and their steps fire at their due
// times. Call it before the place's work is served, as Replay before the
// bus.
func (rn *Runner) ReplayHash(seqs []*Sequence, window time.Duration, hash string) int {
	if rn.store == nil {
		return 0
	}
	recs, err := rn.store.LoadHash(hash)
	if err != nil {
		rn.log.Error("cannot load a place's pending records; none replayed", "hash", hash, "error", err)
		return 0
	}
	return rn.replay(seqs, window, recs, false)
}

// ReleaseWhere lets go of the runs of a place this process no longer
// holds — those whose rule and concurrency key owned reports — the way
// Stop lets go of all of them: each ends without its record being dropped
// (the place's new holder replays it), queued triggers of those keys are
// thrown away, and replayed records waiting for a trusted clock are
// forgotten. The task Release semantics, for one place. It returns how many
// runs it ended, once no step of theirs is still on a worker (waiting at
// most wait): a step running when its place is let go finishes and removes
// its record before the place's next holder can replay that record and run
// the step again.
func (rn *Runner) ReleaseWhere(owned func(rule, key string) bool, wait time.Duration) int {
	n := 0
	var running, let []*run
	rn.apply(func(*effects) {
		for _, r := range rn.m.runs {
			if owned(r.seq.Rule.ID, r.key) {
				rn.m.endLocked(r, core.Stop)
				if r.Running > 0 || r.Hand != core.NoHand { // a step on a worker, or its record being written
					running = append(running, r)
				} else {
					r.Release() // a step queued for a worker stays unrun
				}
				let = append(let, r)
				n++
			}
		}
		for rule, rs := range rn.m.rules {
			// The place's next holder replays their records.
			rn.m.dropDebouncedLocked(rs, func(d *debounced) bool { return owned(rule, d.key) }, true)
			for key, ks := range rs.keys {
				if owned(rule, key) {
					for _, t := range ks.few().queue {
						t.tk.abandon()
					}
					if ks.m != nil {
						ks.m.queue = nil
					}
					dropThrottledLocked(ks, nil, true)
				}
			}
		}
		rn.m.untrusted = slices.DeleteFunc(rn.m.untrusted, func(h untrusted) bool { return owned(h.rec.Rule, h.rec.Key) })
		rn.m.absent = slices.DeleteFunc(rn.m.absent, func(p Pending) bool { return owned(p.Rule, p.Key) })
	})
	if rn.releaseWaits != nil {
		rn.releaseWaits(len(running))
	}
	deadline := time.Now().Add(wait)
	busy := func(r *run) (b bool) {
		rn.view(func() { b = r.Running > 0 || r.Hand != core.NoHand })
		return b
	}
	for _, r := range running {
		for busy(r) && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
	}
	// Records written or removed aside (a completed run's removal is not
	// a run's any more) land before the place's next holder replays them.
	for rn.m.aside.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if rn.store != nil {
		// The place's next holder has their records: stop tracking them,
		// once nothing of theirs here writes or removes one (a removal
		// finds its record's hash by what is tracked).
		for _, r := range let {
			if !busy(r) {
				rn.store.Forget(r.id)
			}
		}
	}
	return n
}

// replay resumes or drops recs (Replay, ReplayHash), or keeps those of
// rules refused for now (ReplayAbsent), which it tells of unless again
// (they were told of when they were first kept).
func (rn *Runner) replay(seqs []*Sequence, window time.Duration, recs []Pending, again bool) int {
	slices.SortFunc(recs, func(a, b Pending) int { return int(a.FireAt - b.FireAt) })
	byRule := map[string]*Sequence{}
	for _, s := range seqs {
		byRule[s.Rule.ID] = s
	}
	var newest time.Time
	for _, p := range recs {
		if w := time.UnixMilli(p.WrittenAt); p.WrittenAt > 0 && w.After(newest) {
			newest = w
		}
	}
	wait := rn.clockOK != nil && !rn.clockOK(rn.sch.Now(), newest)
	rn.apply(func(*effects) { rn.m.roomForLocked(recs, byRule) })
	n := 0
	var drops []string
	var absent []Pending
	shared := newSharing()
	for _, p := range recs {
		if rn.refused(byRule, p.Rule) {
			absent = append(absent, p)
			continue
		}
		if p.Debounce > 0 {
			if reason := rn.replayDebounce(byRule, p, window); reason != "" {
				rn.log.Warn("dropping a debounced trigger", "rule", p.Rule, "key", p.Key, "reason", reason)
				drops = append(drops, p.ID)
			} else {
				n++
			}
			continue
		}
		if p.Finally != "" {
			if reason := rn.replayFinally(byRule, p); reason != "" {
				rn.log.Warn("dropping a run's finally steps", "rule", p.Rule, "run", p.ID, "reason", reason)
				drops = append(drops, p.ID)
			} else {
				n++
			}
			continue
		}
		r, reason := rn.resolve(byRule, p, shared, !wait)
		if reason != "" {
			rn.apply(func(*effects) { rn.m.noteDropLocked(p.ID, p.Rule, stepLabel(p), reason) })
			rn.book.traceDroppedRecord(p, reason)
			if rn.finallyOfDropped(byRule, p, reason) {
				continue // its finally run keeps the record until it ends
			}
			drops = append(drops, p.ID)
			continue
		}
		rn.apply(func(*effects) {
			if wait {
				rn.m.untrusted = append(rn.m.untrusted, untrusted{p, r, r.Step})
				// A wait-for hears events meanwhile: only its timeout needs
				// the clock.
				if st := &r.seq.Steps[r.Step]; st.Wait != nil && !r.hasOutput(st.Name) {
					rn.m.awaitLocked(r, "")
				}
				r.event.View = nil // its record waits in untrusted: not cold
				n++
			} else if id := rn.m.armLocked(r, p, window); id != "" {
				drops = append(drops, id)
			} else {
				rn.m.freezeLocked(r) // its trigger is its own, rebuilt from the record
				n++
			}
		})
	}
	var untrusted int
	rn.apply(func(fx *effects) {
		untrusted = len(rn.m.untrusted)
		if len(absent) > 0 {
			// Once each: a fleet member that takes a shard again replays
			// its records again (ReplayHash).
			have := make(map[string]bool, len(rn.m.absent))
			for _, q := range rn.m.absent {
				have[q.ID] = true
			}
			for _, p := range absent {
				if !have[p.ID] {
					have[p.ID] = true
					rn.m.absent = append(rn.m.absent, p)
				}
			}
		}
		fx.drop(drops...)
	})
	if len(absent) > 0 && !again {
		ids := map[string]bool{}
		for _, p := range absent {
			ids[p.Rule] = true
		}
		rn.log.Warn("waiting steps of rules refused for a problem of their files wait for them: mend the files (ruled lint) and they are judged then",
			"records", len(absent), "rules", slices.Sorted(maps.Keys(ids)))
	}
	if wait && untrusted > 0 {
		rn.log.Warn("the clock is not trusted yet; replayed steps wait for it", "records", untrusted, "newest-write", newest)
		rn.sch.AfterFunc(rn.clockPoll, func() { rn.recheck(newest, window) })
	}
	return n
}

// refused reports whether rule is not loaded now but was refused for a
// problem an operator may mend (Refuser): its records wait.
func (rn *Runner) refused(byRule map[string]*Sequence, rule string) bool {
	rf, ok := rn.resolver.(Refuser)
	if !ok {
		return false
	}
	if rn.resolver.Current(rule) != nil || byRule[rule] != nil {
		return false
	}
	return rf.Refused(rule)
}

// ReplayAbsent judges again the records Replay kept for rules refused for
// a problem of their files (Refuser), after a reload of the rules (seqs):
// a rule loaded now takes up its records as Replay would have (a step
// changed meanwhile is dropped, one past window too); a rule still
// refused keeps them waiting; a rule no file refuses any more is gone,
// and its records with it. It returns how many it resumed.
func (rn *Runner) ReplayAbsent(seqs []*Sequence, window time.Duration) int {
	if rn.store == nil {
		return 0
	}
	var recs []Pending
	rn.apply(func(*effects) { recs, rn.m.absent = rn.m.absent, nil })
	if len(recs) == 0 {
		return 0
	}
	n := rn.replay(seqs, window, recs, true)
	if n > 0 {
		rn.log.Info("waiting steps of rules loaded again taken up", "resumed", n)
	}
	return n
}

// Absent is how many records wait for rules refused for a problem of
// their files (ReplayAbsent).
func (rn *Runner) Absent() int {
	var n int
	rn.view(func() { n = len(rn.m.absent) })
	return n
}

// recheck runs on the scheduler while replayed records wait for the clock.
func (rn *Runner) recheck(newest time.Time, window time.Duration) {
	if !rn.clockOK(rn.sch.Now(), newest) {
		rn.sch.AfterFunc(rn.clockPoll, func() { rn.recheck(newest, window) })
		return
	}
	var hs []untrusted
	rn.apply(func(fx *effects) {
		hs, rn.m.untrusted = rn.m.untrusted, nil
		for _, h := range hs {
			if h.run.Ended() || h.run.Step != h.step || h.run.seq.Steps[h.step].Wait != nil && !h.run.awaiting() {
				continue // it took the event it waited for meanwhile
			}
			if id := rn.m.armLocked(h.run, h.rec, window); id != "" {
				fx.drop(id)
			}
		}
	})
	rn.log.Info("the clock is trusted; replayed steps judged", "records", len(hs))
}

// sharing is what the runs one replay resumes have in common: a string
// many records repeat (a topic, a wait's detail) is kept once, not once a
// run (issue 38: 100,000 parked runs, each with its copies), and a wait
// step's detail is worked out once (it was a tenth of a replay's time).
type sharing struct {
	strs  map[string]string
	waits map[*CompiledStep]string
}

func newSharing() *sharing {
	return &sharing{strs: map[string]string{}, waits: map[*CompiledStep]string{}}
}

// of is s, or the equal string already kept.
func (sh *sharing) of(s string) string {
	if x, ok := sh.strs[s]; ok {
		return x
	}
	sh.strs[s] = s
	return s
}

// waitDetail is waitDetail(st.Wait, true), once for each step.
func (sh *sharing) waitDetail(st *CompiledStep) string {
	d, ok := sh.waits[st]
	if !ok {
		d = waitDetail(st.Wait, true)
		sh.waits[st] = d
	}
	return d
}

// roomForLocked grows the maps the runs of recs go in — runs by id, each
// rule's keys — to hold them all before they come: 100,000 runs replayed
// into maps grown as they went spent a fifth of a replay rehashing them
// (issue 38). Only records of a rule loaded now count: the others are
// dropped, and a rule that is gone gets no state from them.
func (sm *machine) roomForLocked(recs []Pending, byRule map[string]*Sequence) {
	perRule := map[string]int{}
	n := 0
	for i := range recs {
		if byRule[recs[i].Rule] != nil {
			perRule[recs[i].Rule]++
			n++
		}
	}
	if n < 1024 { // too few to matter (grown)
		return
	}
	sm.runs = grown(sm.runs, n)
	for rule, k := range perRule {
		if k >= 1024 {
			rs := sm.rule(rule)
			rs.keys = grown(rs.keys, k)
		}
	}
}

// grown is m, or a copy of it with room for n more.
func grown[V any](m map[string]V, n int) map[string]V {
	if n < 1024 { // too few to matter
		return m
	}
	g := make(map[string]V, len(m)+n)
	maps.Copy(g, m)
	return g
}

// resolve judges a record against the rule as loaded now (judge, as a
// live wait is judged when it comes due) and registers its run, or says why
// it cannot.
//
// With lazy (the clock is trusted: the run is armed at once), a run that
// reads nothing of its trigger before it wakes gets it without its view,
// which warmLocked builds when something reads it: no variables to
// render, a record that names its key, and a wait-for's key recorded.
// 100,000 views built at a start, and thrown away as the runs went cold,
// were a third of a replay's time (issue 38).
func (rn *Runner) resolve(byRule map[string]*Sequence, p Pending, shared *sharing, lazy bool) (*run, string) {
	current := func(id string) *Sequence { return byRule[id] }
	name := p.Step
	if p.Version < 2 { // the seed's records name the step by index
		s := byRule[p.Rule]
		if rn.resolver != nil {
			s = rn.resolver.Current(p.Rule)
		}
		if s != nil && p.StepIndex >= 0 && p.StepIndex < len(s.Steps) {
			name = s.Steps[p.StepIndex].Name
		} else if s != nil {
			return nil, DropStepGone
		}
	}
	w := waitFor{name: name, fingerprint: p.Fingerprint, digest: p.Digest}
	if rn.gate != nil {
		if _, drop := rn.gate.Due(p.Rule); drop != "" {
			return nil, drop // a killed or failed rule's records go at once
		}
	}
	v := rn.judge(p.Rule, w, current)
	if v.drop != "" {
		return nil, v.drop
	}
	// The run is parked for the step judged equal to the record's: its
	// name and fingerprint are the step's, and its module too unless the
	// record names another (kept apart: pinned).
	st := &v.seq.Steps[v.idx]
	var e *bus.Event
	if lazy && p.Version >= 2 && v.seq.Vars == nil && (st.Wait == nil || strings.HasPrefix(p.WaitKey, waitKeyForm)) {
		e = triggerOf(p)
	} else {
		var err error
		if e, err = eventOf(p); err != nil {
			return nil, DropBadEvent
		}
	}
	e.Topic = shared.of(e.Topic)
	key := p.Key
	if p.Version < 2 {
		key = keyOf(v.seq.Rule, e)
	}
	last := 0
	if rn.book != nil {
		// The log may hold nodes past the record's: the step was running
		// when the process died. Numbering goes on after them, so the
		// interrupted node stays as it was left.
		last, _ = rn.book.tracer.LastSeq(p.ID)
	}
	var r *run
	rn.apply(func(*effects) { r = rn.m.resumeLocked(v, st, w, e, key, p, last, shared) })
	return r, ""
}

// resumeLocked starts the run of record p, judged (v) and read back (st,
// w, e, key), where its record left it.
func (sm *machine) resumeLocked(v verdict, st *CompiledStep, w waitFor, e *bus.Event, key string, p Pending, last int, shared *sharing) *run {
	r := sm.startLocked(v.seq, e, key, p.ID, v.idx, p.Iter, nil)
	r.Attempt = uint8(min(max(p.Attempt, 0), rules.MaxAttempts))
	// v.pinned is not kept: the step is judged again when it comes due, as
	// the rules may change before that.
	r.Record, r.parked = core.Written, st
	if w.digest != st.Digest {
		rr := r.more()
		rr.digest, rr.pinned = w.digest, true
	}
	r.started = startedOf(p).UnixNano()
	if p.Parent != "" {
		r.more().parent = p.Parent
	}
	r.restoreLocked(&p)
	r.nodes.Store(int64(max(p.Node, last)))
	if sm.book != nil {
		now := sm.sch.Now()
		sm.book.node(r, runlog.Node{Kind: runlog.KindReplay, Name: w.name, Started: now, Ended: now, Outcome: runlog.OK,
			Detail: "resumed from its pending record after a restart"})
		if p.DelayNode > 0 {
			d := time.Duration(p.Remaining) * time.Millisecond
			wait, detail := false, ""
			switch {
			case st.Wait != nil:
				wait, detail = true, shared.waitDetail(st)
			case p.Attempt > 1:
				detail = fmt.Sprintf("retry: attempt %d of %d in %v (durable)", p.Attempt, st.Retry.Attempts, d)
			default:
				detail = fmt.Sprintf("after %v (durable)", d)
			}
			detail = shared.of(detail)
			r.delay = delayNode{Seq: int32(p.DelayNode), Wait: wait, Name: st.Name,
				Started: time.UnixMilli(p.WrittenAt).UnixNano(), Detail: detail}
		}
	}

	return r
}

// replayFinally takes up a run that had ended and was running its finally
// steps when the process stopped: they run again, from the first, on the
// rule as loaded now.
func (rn *Runner) replayFinally(byRule map[string]*Sequence, p Pending) string {
	s := byRule[p.Rule]
	if rn.resolver != nil {
		s = rn.resolver.Current(p.Rule)
	}
	why, ok := core.OutcomeOf(p.Finally)
	switch {
	case s == nil:
		return DropRuleGone
	case len(s.Finally) == 0:
		return "its rule has no finally steps now"
	case !ok:
		return "the record names no outcome this ruled knows"
	}
	e, err := eventOf(p)
	if err != nil {
		return DropBadEvent
	}
	last := 0
	if rn.book != nil {
		last, _ = rn.book.tracer.LastSeq(p.ID)
	}
	rn.apply(func(*effects) { rn.m.finallyAgainLocked(s, e, p, why, last) })
	return ""
}

// finallyOfDropped starts the finally steps of a run whose waiting step a
// start dropped (the step changed or went, its module too): as a drop
// while the process runs does, since finally: runs however a run ends
// but by the process stopping. False when the rule has none, or is gone.
func (rn *Runner) finallyOfDropped(byRule map[string]*Sequence, p Pending, reason string) bool {
	if reason == DropRuleGone || reason == DropBadEvent || p.Debounce > 0 {
		return false
	}
	s := byRule[p.Rule]
	if rn.resolver != nil {
		s = rn.resolver.Current(p.Rule)
	}
	if s == nil || len(s.Finally) == 0 {
		return false
	}
	e, err := eventOf(p)
	if err != nil {
		return false
	}
	last := 0
	if rn.book != nil {
		last, _ = rn.book.tracer.LastSeq(p.ID)
	}
	rn.apply(func(*effects) {
		rn.m.finallyLocked(s, e, p, core.Dropped, last, "its waiting step was dropped at the start ("+reason+"): its finally steps run")
	})
	return true
}

// finallyAgainLocked starts the finally steps of record p's run (s, its
// trigger e, why it ended) again.
func (sm *machine) finallyAgainLocked(s *Sequence, e *bus.Event, p Pending, why core.Outcome, last int) {
	sm.finallyLocked(s, e, p, why, last, "its finally steps run again after a restart (it ended "+p.Finally+")")
}

// finallyLocked starts the finally steps of record p's run (s, its
// trigger e, why it ended), telling the run's tree detail.
func (sm *machine) finallyLocked(s *Sequence, e *bus.Event, p Pending, why core.Outcome, last int, detail string) {
	r := sm.startLocked(s, e, p.Key, p.ID, 0, p.Iter, nil)
	r.started = startedOf(p).UnixNano()
	if p.Parent != "" {
		r.more().parent = p.Parent
	}
	r.restoreLocked(&p)
	r.nodes.Store(int64(max(p.Node, last)))
	ks := sm.rule(p.Rule).key(p.Key)
	ks.live = slices.DeleteFunc(ks.live, func(x *run) bool { return x == r })
	m := ks.more()
	m.closing = append(m.closing, r)
	r.Final, r.Why, r.Record = true, why, core.Written
	sm.rule(p.Rule).stats.Started++ // replayed runs count as starts
	if sm.book != nil {
		now := sm.sch.Now()
		sm.book.node(r, runlog.Node{Kind: runlog.KindReplay, Name: s.Finally[0].Name, Started: now, Ended: now, Outcome: runlog.OK,
			Detail: detail})
	}
	sm.submitLocked(r)
}

// armLocked judges a resolved record against the clock: parks its run until
// the step is due, or ends it and returns the record's id to drop.
func (sm *machine) armLocked(r *run, p Pending, window time.Duration) string {
	// The longest the record's wait can be: its step's after, or for a
	// retry the wait it was written with.
	st := &r.seq.Steps[r.Step]
	waits := st.After
	if p.Attempt > 1 {
		waits = time.Duration(p.Remaining) * time.Millisecond
	}
	if st.Wait != nil {
		waits = st.Wait.Timeout
	}
	if r.Step == 0 && r.Pass > 0 && p.Attempt <= 1 {
		waits += r.seq.Rule.Repeat.Interval // recorded in the gap before its pass (recordPassLocked)
	}
	now := sm.sch.Now()
	due := p.Due()
	switch {
	case now.Sub(due) > window:
		// Not a cancel: the record goes, with its reason.
		return sm.dropArmedLocked(r, p, fmt.Sprintf("%s: due %v ago, the window is %v", DropOverdue, now.Sub(due).Round(time.Second), window))
	case due.Sub(now) > waits+time.Second:
		return sm.dropArmedLocked(r, p, fmt.Sprintf("%s: due in %v, the step waits %v", DropTooEarly, due.Sub(now).Round(time.Second), waits))
	}
	r.timer, r.AtStep = sm.sch.AfterFunc(max(due.Sub(now), 0), func() { sm.drv.due(r) }), true
	if st.Wait != nil && !r.hasOutput(st.Name) {
		sm.awaitLocked(r, p.WaitKey) // still waiting: an event re-admitted from the journal finds it
	}
	sm.rule(r.seq.Rule.ID).stats.Started++ // replayed runs count as starts
	return ""
}

// dropArmedLocked drops a replayed run's record as the clock judges it:
// the run ends (dropped, in the log) and the record's id is returned.
func (sm *machine) dropArmedLocked(r *run, p Pending, reason string) string {
	sm.noteDropLocked(p.ID, p.Rule, stepLabel(p), reason)
	r.more().reason = reason
	r.Record = core.NoRecord // the caller drops the record
	sm.endLocked(r, core.Dropped)
	return p.ID
}

func stepLabel(p Pending) string {
	if p.Step != "" {
		return p.Step
	}
	return strconv.Itoa(p.StepIndex)
}

// eventOf rebuilds a record's trigger, its view built.
func eventOf(p Pending) (*bus.Event, error) {
	e := triggerOf(p)
	view, err := abi.AppendJSONView(nil, e.Raw, false)
	if err != nil {
		return nil, err
	}
	e.View = view
	return e, nil
}

// triggerOf is a record's trigger without its view (warmLocked builds it),
// with the state before it that the record keeps, if any.
func triggerOf(p Pending) *bus.Event {
	at := time.UnixMilli(p.FireAt)
	if p.EventTime != 0 {
		at = time.Unix(0, p.EventTime)
	}
	return &bus.Event{ID: p.EventID, Topic: p.Source, Time: at, Raw: []byte(p.Event), Hops: min(max(p.Hops, 0), bus.MaxHops+1),
		Prior: []byte(p.Previous), Trace: traceparent.Canonical(p.Trace)}
}

// Stop refuses new runs, throws away anything queued behind them, and
// abandons the in-flight ones, cancelling any pending tail along the way: a
// run parked on a timer is still active, and letting that timer fire after
// the runner considers itself stopped would submit a step into a pool that
// may already be gone. A step already on a worker still runs to the end; its
// callback then finds the run ended and stops there rather than queueing
// more work into a pool that is going away (its record moved past it, or
// kept when it failed: cut). A step queued for a worker is not run: its
// record runs it at the next start.
//
// Ending goes through endLocked like every other cancel, so there is one
// definition of what ending a run means rather than two that can drift.
//
// The pending records endLocked would hand back are deliberately kept rather
// than removed from the datastore. Every other caller ends a run because it
// is over; Stop ends one because this process is. A step still waiting out
// its delay has not run, and leaving its record is what lets the next start
// run it. Removing them here would break the one case durability exists for.
//
// Records being written aside for runs that park (park), and steps
// waiting aside for what their action owed (runStep: a publish's outbox
// write), are waited for, at most StopParks: the store is still open, and
// a write cut off by its close would log an error for a run that is only
// let go. A step still waiting then is let go with its run: its record
// (a durable run's) still names it, and the next start runs it again,
// under the same idempotency key.
//
// Stop the pool after the runner: it drops what is queued.
func (rn *Runner) Stop() {
	rn.stop()
	done := make(chan struct{})
	go func() { rn.m.parks.Wait(); close(done) }() // ends when the writes do
	select {
	case <-done:
	case <-time.After(StopParks):
		rn.log.Warn("stopping with records of parking runs, or steps' writes, still being written", "waited", StopParks)
	}
}

// StopParks is how long Stop waits for the records of parking runs and
// the owed writes of steps: as long as the engine waits for steps on
// workers (engine.StopDrain).
const StopParks = 10 * time.Second

func (rn *Runner) stop() { rn.apply(func(*effects) { rn.m.stopLocked() }) }

// stopLocked lets go of every run, held and queued trigger: their records
// stay for the next start.
func (sm *machine) stopLocked() {
	if sm.stopped {
		return
	}
	sm.stopped = true
	for _, r := range sm.runs {
		sm.endLocked(r, core.Stop)
		if r.Running == 0 {
			r.Release() // a step queued for a worker stays unrun: its record runs it at the next start
		}
	}
	for rule, rs := range sm.rules {
		sm.heldTriggersLocked(rule, false)
		sm.dropDebouncedLocked(rs, nil, true) // its record (or the journal) keeps it for the next start
	}
	for _, rs := range sm.rules {
		for _, ks := range rs.keys {
			for _, t := range ks.few().queue {
				t.tk.abandon()
			}
			if ks.m != nil {
				ks.m.queue = nil
			}
			dropThrottledLocked(ks, nil, true)
		}
	}
	sm.untrusted = nil
}
