package seq

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq/core"
)

// Tracer is told what runs do, for the execution log (host/runlog.Log is
// one). Its methods are called from workers and timer callbacks, some with
// the runner's lock held, so they must not block: they enqueue. LastSeq is
// asked once per replayed run, at Replay.
type Tracer interface {
	Run(runlog.Run)
	Node(runlog.Node)
	LastSeq(run string) (int, error)
}

// Observer is told how long each step ran on its worker, for metrics. It
// is called on the worker and must not block.
type Observer interface {
	Step(rule, step string, took time.Duration, failed bool)
}

// NewRunID names a run: 32 hex digits, the first 12 the time in unix
// milliseconds, the next 4 a count of the runs this process named in that
// millisecond, and the rest random (unique across processes). Runs named
// in the order they start keep a store's index of them append-mostly (a
// bbolt B+tree grows at its end instead of dirtying pages all over at each
// commit; the log writer's retention index appends instead of searching
// back among the dozens of runs a busy millisecond starts) and list in
// time order for free. A clock that steps back keeps the last time: ids
// stay increasing within a process.
func NewRunID() string {
	var b [16]byte
	now := uint64(time.Now().UnixMilli()) << 16
	for {
		last := lastRunID.Load()
		next := max(now, last+1) // a new millisecond, or the next in this one
		if lastRunID.CompareAndSwap(last, next) {
			now = next
			break
		}
	}
	for i := 7; i >= 0; i-- {
		b[i] = byte(now)
		now >>= 8
	}
	rand.Read(b[8:])
	return hex.EncodeToString(b[:])
}

// RunIDOf names a run that is the same run each time it is started from
// the same thing — a hold that came due, started again after a kill cut
// its first run short — so that its steps' idempotency keys (the run's
// id, the step, the attempt) are the same too, and a receiver can drop
// the repeat: NewRunID's form, at's milliseconds first, the rest a hash
// of parts.
func RunIDOf(at time.Time, parts ...string) string {
	var b [16]byte
	ms := uint64(at.UnixMilli()) << 16
	for i := 7; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	copy(b[6:], h.Sum(nil)) // the count's two bytes too: hashed, not counted
	return hex.EncodeToString(b[:])
}

// lastRunID is the millisecond and count of the last NewRunID, ms<<16 |
// count (a count past 65,535 carries into the millisecond: still in order).
var lastRunID atomic.Uint64

// logbook is what the execution log hears of runs (the Tracer), and the
// bound on what one of its nodes keeps. The runner's is nil when the log
// is off, and a nil logbook's methods that write do nothing. Its methods
// run under the runner's lock, but for those a worker calls for a step
// it runs (bounded, stepDetail, triggerDetail, conditionDetail,
// newCondTrace, traceRefused), which touch no run's state.
type logbook struct {
	tracer Tracer
	clock  interface{ Now() time.Time } // the scheduler's
	limit  int                          // RunnerConfig.LogValue
	// warm gives a cold run its trigger back (Runner.warmLocked): its
	// run entry names its topic and event.
	warm func(*run)
	// notes are the operators' triggers' notes and who sent them, by the
	// run id they name (Trigger.Note), until the run's trigger node takes
	// them (or the trigger is turned away: at most a few, a rerun each).
	notes map[string][2]string
}

// note keeps an operator's trigger's note for its run's trigger node.
func (b *logbook) note(run, note, by string) {
	if b == nil {
		return
	}
	if b.notes == nil {
		b.notes = map[string][2]string{}
	}
	b.notes[run] = [2]string{note, by}
}

// maxDetail bounds the trigger's payload shown in its node.
const maxDetail = 256

// node opens or writes a node of r, numbering it when it has no number
// yet, and returns the node as written.
func (b *logbook) node(r *run, n runlog.Node) runlog.Node {
	if n.Seq == 0 {
		n.Seq = int(r.nodes.Add(1))
	}
	n.Run, n.Trace = r.id, r.traceParent()
	b.tracer.Node(n)
	return n
}

// traceStart writes a new run's run entry and its first nodes: the
// trigger, and the rule's condition when it has one (cond is when it ran).
func (b *logbook) traceStart(r *run, cond *condTrace, detail string) {
	if b == nil {
		return
	}
	b.tracer.Run(b.execOf(r, runlog.Running, ""))
	trig := runlog.Node{Kind: runlog.KindTrigger, Name: r.event.Topic, Started: r.startedAt(), Ended: r.startedAt(),
		Outcome: runlog.OK, Detail: detail}
	if n, ok := b.notes[r.id]; ok { // the lock is held
		delete(b.notes, r.id)
		trig.Detail, trig.By = joinDetail(n[0], trig.Detail), n[1]
	}
	b.triggerDetail(&trig, r.event.Raw)
	b.node(r, trig)
	if cond != nil {
		n := cond.node(r.seq)
		n.Started, n.Ended, n.Outcome = cond.start, cond.end, runlog.OK
		b.node(r, n)
	}
}

// condTrace is the rule's condition as it ran for a trigger: what its
// node says beyond its sequence, kept until the run starts — the few
// fields, not a whole runlog.Node, for a condition asked of every event.
type condTrace struct {
	values, input json.RawMessage
	detail        string
	start, end    time.Time
}

// newCondTrace is s's condition as asked at start, with the values it saw
// in c (conditionDetail).
func (b *logbook) newCondTrace(s *Sequence, c *Call, start time.Time) *condTrace {
	var n runlog.Node
	b.conditionDetail(&n, s, c)
	return &condTrace{values: n.Values, input: n.Input, detail: n.Detail, start: start}
}

// node is the condition node of sequence s for ct.
func (ct *condTrace) node(s *Sequence) runlog.Node {
	return runlog.Node{Kind: runlog.KindCondition, Do: s.WhenDo, Digest: s.WhenDigest, Values: ct.values, Input: ct.input, Detail: ct.detail}
}

// traceRefused logs a trigger whose condition failed: a run of one
// failed node, so the error is there to read.
func (b *logbook) traceRefused(s *Sequence, id, key string, ev *eventRef, cond condTrace, err error) {
	if b == nil {
		return
	}
	ex := runlog.Run{ID: id, Rule: s.Rule.ID, Topic: ev.topic, EventID: ev.id, Key: key, Parent: ev.parent,
		Started: cond.start, Ended: cond.end, Outcome: runlog.Failed, Error: err.Error(), Trace: ev.trace}
	b.tracer.Run(ex)
	trig := runlog.Node{Run: id, Seq: 1, Kind: runlog.KindTrigger, Name: ev.topic, Started: cond.start,
		Ended: cond.start, Outcome: runlog.OK, Trace: ev.trace}
	b.triggerDetail(&trig, ev.raw)
	b.tracer.Node(trig)
	n := cond.node(s)
	n.Run, n.Seq, n.Started, n.Ended, n.Outcome, n.Error, n.Trace = id, 2, cond.start, cond.end, runlog.Failed, err.Error(), ev.trace
	b.tracer.Node(n)
}

type eventRef struct {
	topic, id, parent, trace string
	raw                      []byte
}

// execOf is r's run entry with outcome.
func (b *logbook) execOf(r *run, outcome, errText string) runlog.Run {
	b.warm(r)
	ex := runlog.Run{ID: r.id, Rule: r.seq.Rule.ID, Topic: r.event.Topic, EventID: r.event.ID, Key: r.key,
		Parent: r.few().parent, Started: r.startedAt(), Outcome: outcome, Error: errText, Trace: r.traceParent()}
	if outcome != runlog.Running {
		ex.Ended = b.clock.Now()
	}
	return ex
}

// openDelay opens the node r waits in: a step's after, or the gap between
// two repeat passes.
func (b *logbook) openDelay(r *run, name string, d time.Duration, durable bool, retry string) {
	if b == nil {
		return
	}
	detail := "after " + d.String()
	if retry != "" {
		detail = "retry: " + retry + " in " + d.Round(time.Millisecond).String()
	}
	if durable {
		detail += " (durable)"
	}
	r.delay = delayOf(b.node(r, runlog.Node{Kind: runlog.KindDelay, Name: name, Started: b.clock.Now(),
		Outcome: runlog.Open, Detail: detail}))
}

// openWait opens r's wait node: what its wait-for step st waits for.
func (b *logbook) openWait(r *run, st *CompiledStep, durable bool) {
	if b == nil {
		return
	}
	r.delay = delayOf(b.node(r, runlog.Node{Kind: runlog.KindWait, Name: st.Name, Started: b.clock.Now(),
		Outcome: runlog.Open, Detail: waitDetail(st.Wait, durable)}))
}

// waitDetail is what a wait node says it waits for.
func waitDetail(w *Wait, durable bool) string {
	detail := "for " + string(w.Pattern)
	if len(w.Match) > 0 {
		detail += " (match " + strings.Join(w.Match, ", ") + ")"
	}
	detail += ", up to " + w.Timeout.String()
	if durable {
		detail += " (durable)"
	}
	return detail
}

// closeDelay closes r's open delay node with outcome (Held leaves it
// open, marked).
func (b *logbook) closeDelay(r *run, outcome, detail string) {
	if b == nil || r.delay.Seq == 0 {
		return
	}
	n := r.delay.node(r.id, r.byOf())
	n.Outcome = outcome
	if detail != "" {
		n.Detail += "; " + detail
	}
	n.Trace = r.traceParent()
	if outcome == runlog.Held {
		r.delay = delayOf(n)
		b.tracer.Node(n)
		return
	}
	n.Ended = b.clock.Now()
	r.delay = delayNode{}
	r.setBy("") // who acted on it acted on this delay
	b.tracer.Node(n)
}

// delayNode is the open node a parked run waits in (a delay or a wait):
// the few fields of a runlog.Node such a node has, kept in every run, so
// that the log's richer nodes (inputs, outputs, effects) do not make each
// parked run 200 bytes larger (TestParkedRunsMemory); its kind and outcome,
// one of two each, are a bool each.
type delayNode struct {
	Name, Detail string
	Started      int64 // unix nanoseconds
	Seq          int32
	Wait         bool // a wait-for's node (runlog.KindWait), else a delay's (KindDelay)
	Held         bool // its outcome is runlog.Held, else runlog.Open
}

// delayOf keeps n's fields a delay node has.
func delayOf(n runlog.Node) delayNode {
	return delayNode{Seq: int32(n.Seq), Wait: n.Kind == runlog.KindWait, Held: n.Outcome == runlog.Held,
		Name: n.Name, Detail: n.Detail, Started: n.Started.UnixNano()}
}

// node is d as run id's log node.
func (d delayNode) node(id, by string) runlog.Node {
	kind, outcome := runlog.KindDelay, runlog.Open
	if d.Wait {
		kind = runlog.KindWait
	}
	if d.Held {
		outcome = runlog.Held
	}
	return runlog.Node{Run: id, Seq: int(d.Seq), Kind: kind, Name: d.Name, Outcome: outcome, Detail: d.Detail, By: by,
		Started: time.Unix(0, d.Started)}
}

// traceEnd writes how r ended: the open delay closed, a node saying what
// cancelled or dropped it, and its run entry. A run ended because this
// process stops is not ended in the log: it goes on after the restart.
func (b *logbook) traceEnd(r *run, why core.Outcome) {
	if b == nil || why == core.Stop {
		return
	}
	if !r.Final {
		b.traceClose(r, why)
	}
	out := runlog.OK
	switch why {
	case core.Failed:
		out = runlog.Failed
	case core.Cancelled, core.Restarted:
		out = runlog.Cancelled
	case core.Dropped:
		out = runlog.Dropped
	}
	b.tracer.Run(b.execOf(r, out, r.few().errText))
}

// traceClose writes what ended r's own steps: its open delay closed, and
// a node saying what cancelled or dropped it. A run with finally steps
// says it when it ends, and its run entry when they are done (traceEnd).
func (b *logbook) traceClose(r *run, why core.Outcome) {
	if b == nil {
		return
	}
	by := r.byOf() // before its delay node closes
	switch why {
	case core.Cancelled, core.Restarted:
		b.closeDelay(r, runlog.Cancelled, "")
		reason := r.few().reason
		if reason == "" && why == core.Restarted {
			reason = "restarted by a new trigger (mode restart)"
		}
		now := b.clock.Now()
		b.node(r, runlog.Node{Kind: runlog.KindCancel, Started: now, Ended: now, Outcome: runlog.Cancelled, Detail: reason, By: by})
	case core.Dropped:
		b.closeDelay(r, runlog.Dropped, "")
		now := b.clock.Now()
		b.node(r, runlog.Node{Kind: runlog.KindDrop, Name: r.waitingFor().name, Started: now, Ended: now,
			Outcome: runlog.Dropped, Detail: r.few().reason, By: by})
	}
}

// traceDroppedRecord ends in the log a run whose pending record Replay
// dropped before the run was resumed.
func (b *logbook) traceDroppedRecord(p Pending, reason string) {
	if b == nil {
		return
	}
	seq, _ := b.tracer.LastSeq(p.ID)
	seq = max(seq, p.Node)
	now := b.clock.Now()
	if p.DelayNode > 0 {
		b.tracer.Node(runlog.Node{Run: p.ID, Seq: p.DelayNode, Kind: runlog.KindDelay, Name: stepLabel(p),
			Started: time.UnixMilli(p.WrittenAt), Ended: now, Outcome: runlog.Dropped, Trace: p.Trace})
	}
	b.tracer.Node(runlog.Node{Run: p.ID, Seq: seq + 1, Kind: runlog.KindDrop, Name: stepLabel(p), Started: now,
		Ended: now, Outcome: runlog.Dropped, Detail: "at replay: " + reason, Trace: p.Trace})
	b.tracer.Run(runlog.Run{ID: p.ID, Rule: p.Rule, Topic: p.Source, EventID: p.EventID, Key: p.Key,
		Parent: p.Parent, Started: startedOf(p), Ended: now, Outcome: runlog.Dropped, Error: reason, Trace: p.Trace})
}

// startedOf is when a record's run started, for records written before
// they said.
func startedOf(p Pending) time.Time {
	if p.Started > 0 {
		return time.UnixMilli(p.Started)
	}
	return time.UnixMilli(p.WrittenAt)
}

// Live reports whether run id is in flight here (running a step, waiting
// out a delay, or held).
func (rn *Runner) Live(id string) (ok bool) {
	rn.view(func() { _, ok = rn.m.runs[id] })
	return ok
}

// NoteChild records that the step run parent is running fired run child
// (a plugin's fire host call): the step's node will name it.
func (rn *Runner) NoteChild(parent, child string) {
	rn.apply(func(*effects) {
		if r := rn.m.runs[parent]; r != nil {
			rr := r.more()
			rr.children = append(rr.children, child)
		}
	})
}
