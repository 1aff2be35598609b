package seq

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq/core"
)

// Wait is a compiled wait-for step (rules.Wait): the run waits for an
// event on a topic matching Pattern with its trigger's values at Match,
// for which When (on a worker, seeing the awaited event and the run's
// context) holds, at most Timeout.
type Wait struct {
	Pattern  rules.Pattern
	Match    []string
	When     Condition // nil: any event that matches
	Timeout  time.Duration
	Continue bool // on-timeout: continue; false: stop
}

// A waiting run is parked as a run waiting out an after is — a timer (its
// timeout), a pending record when there is a store, no goroutine and no
// worker — and is listed in rn.m.waiting under its rule, where Deliver finds
// it. What ends the wait is the step's output: {"event": …} when an event
// came, {"timeout": true} when none did. A record written with the wait's
// output means the wait is over: a run replayed from it goes on at once.

// startWait runs a wait-for step on a worker: its own when (whether to
// wait at all), then the wait.
func (rn *Runner) startWait(r *run, st *CompiledStep) {
	if st.When != nil {
		c := callFor(r.seq, r.event, st, r.id, r.Pass)
		c.Context = rn.contextOf(r)
		ok, err := st.When.When(rn.ctx, c)
		if err != nil || !ok {
			var node runlog.Node
			if rn.book != nil {
				now := rn.sch.Now()
				node = runlog.Node{Kind: runlog.KindStep, Name: st.Name, Do: st.Do, Started: now, Ended: now,
					Outcome: runlog.Skipped, Detail: "its condition said no"}
			}
			failed := false
			if err != nil {
				rn.errored(r.seq.Rule.ID, err)
				rn.warn.folded("step condition failed", r.seq.Rule.ID, st.Name, "run", r.id, "error", err)
				failed = !st.ContinueOnError
				node.Outcome, node.Error, node.Detail = runlog.Failed, "its condition: "+err.Error(), ""
			}
			if rn.book != nil {
				rn.book.node(r, node) // written as it is numbered
			}
			rn.apply(func(fx *effects) {
				if err != nil {
					r.more().errText = "step " + st.Name + ": its condition: " + err.Error()
				}
				rn.m.advanceLocked(r, failed, fx)
			})
			return
		}
	}
	rn.apply(func(fx *effects) { rn.m.parkLocked(r, st, st.Wait.Timeout, rn.store != nil, "", fx) })
}

// Recent events: a wait-for often follows a step that asks for what it
// waits for (publish a command, wait for its ack), and the answer can
// come before the run reaches the wait. So each rule with a wait-for
// keeps the last recentMax events delivered to it, for at most recentFor,
// and a wait that starts takes the first of them that came after its run
// started (or after its last wait took one) and matches. In memory only:
// an event that came before a crash and before its run waited is not
// kept for it.
const (
	recentMax = 64
	recentFor = time.Minute
)

type recentEvent struct {
	seq uint64
	at  time.Time
	e   *bus.Event
}

// hasWait reports whether s has a wait-for step.
func hasWait(s *Sequence) bool {
	return slices.ContainsFunc(s.Steps, func(st CompiledStep) bool { return st.Wait != nil })
}

// rememberLocked keeps e among rule's recent events.
func (sm *machine) rememberLocked(rule string, e *bus.Event) {
	if sm.recent == nil {
		sm.recent = map[string][]recentEvent{}
	}
	now := sm.sch.Now()
	rs := sm.recent[rule]
	drop := 0
	for drop < len(rs) && (len(rs)-drop >= recentMax || now.Sub(rs[drop].at) > recentFor) {
		drop++
	}
	rs = append(rs[drop:], recentEvent{seq: sm.recentSeq + 1, at: now, e: e})
	sm.recentSeq++
	sm.recent[rule] = rs
}

// catchUpLocked offers r, which has just started waiting on st, the
// recent events of its rule that came since it last looked, in order,
// on a worker, until it takes one.
func (sm *machine) catchUpLocked(r *run, st *CompiledStep) {
	var offer []*bus.Event
	now := sm.sch.Now()
	sm.warmLocked(r)
	for _, re := range sm.recent[r.seq.Rule.ID] {
		if re.seq > r.cx.after && now.Sub(re.at) <= recentFor && st.Wait.Pattern.Match(re.e.Topic) && sameAt(r.event, re.e, st.Wait.Match) {
			offer = append(offer, re.e)
		}
	}
	r.cx.after = sm.recentSeq
	if len(offer) == 0 {
		return
	}
	sm.drv.submit(jobLocked(r, func() { sm.drv.catchUp(r, st, offer) }))
}

// catchUp offers r, waiting on st, the events in order until it takes
// one: catchUpLocked's job.
func (rn *Runner) catchUp(r *run, st *CompiledStep, offer []*bus.Event) {
	for _, e := range offer {
		rn.offer(r, e)
		var waits bool
		rn.view(func() { waits = r.waitStep() == st })
		if !waits {
			return
		}
	}
}

// waitList is one rule's runs parked on wait-for steps, indexed by the
// step they wait at (its sequence's version and index) and their
// trigger's values at the step's match paths: Deliver looks up the runs
// an event's values name instead of walking every waiting run (80,000
// parked runs made each event of the topic a walk of 80,000), and a run
// leaves its list in a step of its key's, not of the rule's.
type waitList struct {
	n      int
	groups map[waitGroup]map[string][]*run
}

// waitGroup is the step a run waits at: its rule's version and the
// step's index in it.
type waitGroup struct {
	seq  *Sequence
	step int
}

// waitKeyOf is the key e's values at paths make, as sameAt compares
// them: false when one is missing or cannot compare equal to anything
// (an object, an array).
func waitKeyOf(e *bus.Event, paths []string) (string, bool) {
	if len(paths) == 0 {
		return "", true
	}
	v, err := abi.ParseView(e.View)
	if err != nil {
		return "", false
	}
	var b []byte
	for _, p := range paths {
		x, ok := v.Find(p)
		if !ok {
			return "", false
		}
		switch x.Kind() {
		case abi.ValueString:
			s, _ := x.Str()
			b = append(strconv.AppendInt(append(b, 's'), int64(len(s)), 10), ':')
			b = append(b, s...)
		case abi.ValueBool:
			t, _ := x.Bool()
			b = strconv.AppendBool(append(b, 'b'), t)
		case abi.ValueNull:
			b = append(b, 'n')
		default:
			f, ok := x.Float()
			if !ok || f != f { // NaN equals nothing, as sameValue has it
				return "", false
			}
			if f == 0 {
				f = 0 // -0 is 0 to sameValue
			}
			b = strconv.AppendFloat(append(b, 'f'), f, 'g', -1, 64)
		}
		b = append(b, '|') // after a value no string holds unprefixed: a record keeps it unescaped
	}
	return string(b), true
}

// waitKeyForm starts a wait key as a record keeps it (Pending.WaitKey). A
// replay takes a key of this form as written, and works any other out
// from the trigger again: a form changed in a later ruled is never taken
// for this one's.
const waitKeyForm = "w1:"

// recordedWaitKey is the key a record of r parked on st keeps: its wait's,
// so that a replay lists r without decoding its trigger (issue 38); "" for
// none (not a wait, the wait over, or no key).
func recordedWaitKey(r *run, st *CompiledStep) string {
	if st.Wait == nil || r.hasOutput(st.Name) {
		return ""
	}
	if key, ok := waitKeyOf(r.event, st.Wait.Match); ok {
		return waitKeyForm + key
	}
	return ""
}

// awaitLocked lists r, parked on a wait-for step, where Deliver finds it:
// under the key recorded with r's record (recordedWaitKey) when it has
// one — a replayed run is listed without its trigger decoded — else under
// the key its trigger makes.
func (sm *machine) awaitLocked(r *run, recorded string) {
	if r.awaiting() {
		return
	}
	if r.cx == nil {
		r.cx = &runContext{}
	}
	if sm.waiting == nil {
		sm.waiting = map[string]*waitList{}
	}
	wl := sm.waiting[r.seq.Rule.ID]
	if wl == nil {
		wl = &waitList{groups: map[waitGroup]map[string][]*run{}}
		sm.waiting[r.seq.Rule.ID] = wl
	}
	wl.n++
	g := waitGroup{r.seq, r.Step}
	r.cx.waitGroup = g // awaiting from here: waitStep answers
	key, ok := "", false
	if k, found := strings.CutPrefix(recorded, waitKeyForm); found {
		key, ok = k, true
	} else if st := r.waitStep(); st != nil {
		if len(st.Wait.Match) > 0 { // no paths: the key is "", read from nothing
			sm.warmLocked(r)
		}
		key, ok = waitKeyOf(r.event, st.Wait.Match)
	}
	if !ok {
		key = "\x01" + r.id // no event can match it: listed, never found
	}
	r.cx.waitKey = key
	idx := wl.groups[g]
	if idx == nil {
		idx = map[string][]*run{}
		wl.groups[g] = idx
	}
	idx[key] = append(idx[key], r)
}

// unawaitLocked takes r off the list: its wait ended, or the run did.
func (sm *machine) unawaitLocked(r *run) {
	if !r.awaiting() {
		return
	}
	g, key := r.cx.waitGroup, r.cx.waitKey
	r.cx.waitKey, r.cx.waitGroup = "", waitGroup{}
	wl := sm.waiting[r.seq.Rule.ID]
	if wl == nil {
		return
	}
	idx := wl.groups[g]
	rs := idx[key]
	if i := slices.Index(rs, r); i >= 0 {
		rs = slices.Delete(rs, i, i+1)
		wl.n--
	}
	switch {
	case len(rs) > 0:
		idx[key] = rs
	default:
		delete(idx, key)
		if len(idx) == 0 {
			delete(wl.groups, g)
		}
	}
	if wl.n <= 0 {
		delete(sm.waiting, r.seq.Rule.ID)
	}
}

// Awaits reports whether any run of rule waits for an event now.
func (rn *Runner) Awaits(rule string) (ok bool) {
	rn.view(func() { ok = rn.m.waiting[rule] != nil })
	return ok
}

// Deliver hands e to the runs of rule waiting for it: each whose wait-for
// step's topic matches e's, whose trigger has e's values at the step's
// match paths, and for which the step's when holds (on a worker) takes it
// and goes on. done, when not nil, is called once every such run has
// taken e or passed it over — a run that took it has its record written
// with e first — so that an event the journal keeps for a waiting rule
// leaves it only then. It returns how many runs were offered e.
func (rn *Runner) Deliver(rule string, e *bus.Event, done func()) int {
	var offered []*run
	rn.apply(func(*effects) {
		rn.m.rememberLocked(rule, e)
		if wl := rn.m.waiting[rule]; wl != nil {
			for g, idx := range wl.groups {
				st := &g.seq.Steps[g.step]
				if st.Wait == nil || !st.Wait.Pattern.Match(e.Topic) {
					continue
				}
				key, ok := waitKeyOf(e, st.Wait.Match)
				if !ok {
					continue
				}
				for _, r := range idx[key] {
					ws := r.waitStep()
					switch {
					case ws == nil:
					case len(ws.Wait.Match) == 0:
						// Every run waits under the one key "": nothing of
						// its trigger is compared, so a cold one stays cold.
						offered = append(offered, r)
					default:
						rn.m.warmLocked(r)
						if sameAt(r.event, e, ws.Wait.Match) {
							offered = append(offered, r)
						}
					}
				}
			}
		}
	})
	if len(offered) == 0 {
		if done != nil {
			done()
		}
		return 0
	}
	var left atomic.Int64
	left.Store(int64(len(offered)))
	finish := func() {
		if left.Add(-1) == 0 && done != nil {
			done()
		}
	}
	for _, r := range offered {
		r := r
		rn.submit(jobLocked(r, func() { rn.offer(r, e); finish() }))
	}
	return len(offered)
}

// awaiting reports whether r is listed in Runner.waiting.
func (r *run) awaiting() bool { return r.cx != nil && r.cx.waitGroup.seq != nil }

// waitStep is the wait-for step r is parked on, or nil.
func (r *run) waitStep() *CompiledStep {
	if !r.awaiting() || r.Step >= len(r.seq.Steps) {
		return nil
	}
	st := &r.seq.Steps[r.Step]
	if st.Wait == nil {
		return nil
	}
	return st
}

// offer asks r's wait-for step's when about e, on a worker, and if it
// holds and r still waits, r takes e.
func (rn *Runner) offer(r *run, e *bus.Event) {
	var st *CompiledStep
	rn.view(func() { st = r.waitStep() })
	if st == nil {
		return
	}
	if st.Wait.When != nil {
		c := callFor(r.seq, e, st, r.id, r.Pass)
		c.Context = rn.contextOf(r)
		ok, err := st.Wait.When.When(rn.ctx, c)
		if err != nil {
			// The awaited event's condition failed: that event is passed
			// over and the run waits on; the error counts, as any
			// condition's.
			rn.errored(r.seq.Rule.ID, err)
			rn.warn.folded("a wait-for's condition failed on an event; still waiting", r.seq.Rule.ID, st.Name,
				"run", r.id, "event", e.ID, "error", err)
			return
		}
		if !ok {
			return
		}
	}
	rn.apply(func(fx *effects) { rn.m.tookLocked(r, st, e, fx) })
}

// tookLocked is r taking e, which its wait-for step st's when said yes
// to: the wait is over, its output recorded (a replay goes on at once),
// and the run goes on — or, its rule paused or asleep, is held or
// dropped as a step that comes due meanwhile is (due, ReleaseHeld).
func (sm *machine) tookLocked(r *run, st *CompiledStep, e *bus.Event, fx *effects) {
	if r.Over() || r.waitStep() != st {
		return // it took another event, timed out or ended meanwhile
	}
	sm.unawaitLocked(r)
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.cx.after = sm.recentSeq // a later wait takes only what comes after this one's
	out := append(append([]byte(`{"event":`), e.Raw...), '}')
	if len(out) > sm.maxOutput {
		out = []byte(fmt.Sprintf(`{"event":{"topic":%q},"truncated":%d}`, e.Topic, len(e.Raw)))
	}
	r.setOutputLocked(st.Name, out)
	sm.book.closeDelay(r, runlog.OK, "event "+e.ID+" on "+e.Topic)
	goOn := func(err error, fx *effects) {
		if err != nil {
			sm.log.Error("cannot record the event a run waited for; a restart now would wait for it again",
				"rule", r.seq.Rule.ID, "step", st.Name, "run", r.id, "error", err)
		}
		if sm.gate != nil {
			if hold, drop := sm.gate.Due(r.seq.Rule.ID); hold {
				sm.holdLocked(r)
				return
			} else if drop != "" {
				fx.drop(sm.dropRunLocked(r, r.seq.Rule.ID, drop)...)
				return
			}
		}
		sm.advanceLocked(r, false, fx)
	}
	if r.Record != core.NoRecord && sm.store != nil {
		fx.writes = append(fx.writes, write{rec: sm.record(r, st, 0), then: func(err error, fx *effects) {
			if err == nil && r.Over() && !r.LetGo() {
				fx.drop(r.id) // cancelled meanwhile: its drop may have landed before this write
				return
			}
			goOn(err, fx)
		}})
		return
	}
	goOn(nil, fx)
}

// waitOver is the due time of a wait-for step st of r: the event came
// before a restart (the record has the step's output) and the run goes on,
// or none came in time. Called with the lock held; it returns whether the
// run goes on (the caller advances it) and, for on-timeout: stop, the
// records the end drops.
func (sm *machine) waitOverLocked(r *run, st *CompiledStep) (goOn bool, drops []string) {
	sm.unawaitLocked(r)
	for _, o := range r.outputs() {
		if o.step == st.Name {
			sm.book.closeDelay(r, runlog.OK, "the event it waited for came before a restart")
			return true, nil
		}
	}
	r.setOutputLocked(st.Name, []byte(`{"timeout":true}`))
	if st.Wait.Continue {
		sm.book.closeDelay(r, runlog.OK, "timed out; on-timeout: continue")
		return true, nil
	}
	sm.book.closeDelay(r, runlog.OK, "timed out; on-timeout: stop")
	r.more().reason = "wait-for " + st.Name + " timed out (on-timeout: stop)"
	return false, sm.endLocked(r, core.Completed)
}
