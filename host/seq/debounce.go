package seq

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/seq/core"
)

// debounced is a key's trigger held by its rule's debounce: the last of a
// burst, waiting for the burst to end (rules.Debounce). Its pending record
// (a store's) holds the event across a restart; the record's id is the
// burst's, so that a later burst's record is not the one a run of this
// burst removes.
type debounced struct {
	id    string // the record's
	seq   *Sequence
	event *bus.Event
	key   string
	first time.Time // the burst's first trigger
	due   time.Time
	gen   uint64 // bumped by each trigger, so a stale timer or write knows it
	timer *sched.Timer
	tk    *ticket // the last trigger's, until its record is written
	wmu   sync.Mutex
}

// debounceID names the record of a burst of rule's key that began at first.
func debounceID(rule, key string, first time.Time) string {
	sum := sha256.Sum256([]byte(rule + "\x00" + key))
	return "debounce-" + hex.EncodeToString(sum[:8]) + "-" + strconv.FormatInt(first.UnixMilli(), 16)
}

// debounceLocked holds a trigger whose condition held: the key's earlier
// one, if any, is replaced (its ticket settled: a later event took its
// place) and the quiet period starts again, up to the burst's max-wait.
// The caller writes the burst's record (writeDebounce) once the lock is
// released. Under the lock that found the key room (keyRoomLocked): with
// a gap between the two, two triggers of new keys each found the last
// room, and a rule held one key past its max-keys (TestMaxKeys).
func (sm *machine) debounceLocked(s *Sequence, e *bus.Event, key string, tk *ticket) *debounced {
	db := s.Rule.Debounce
	if sm.stopped {
		tk.abandon()
		return nil
	}
	rs := sm.rule(s.Rule.ID)
	if rs.debounce == nil {
		rs.debounce = map[string]*debounced{}
	}
	now := sm.sch.Now()
	d := rs.debounce[key]
	if d == nil {
		d = &debounced{key: key, first: now}
		d.id = debounceID(s.Rule.ID, key, now)
		rs.debounce[key] = d
	} else {
		rs.stats.Debounced++
		d.tk.settle() // replaced by this trigger
		sm.notStartedLocked(d.seq, d.event, key, whyDebounced)
	}
	d.seq, d.event, d.tk = s, e, tk
	d.gen++
	d.due = core.DebounceDue(d.first, now, db)
	sm.armDebounceLocked(s.Rule.ID, d)
	return d
}

// armDebounceLocked sets d's timer for its due time.
func (sm *machine) armDebounceLocked(rule string, d *debounced) {
	if d.timer != nil {
		d.timer.Stop()
	}
	// What the job needs of d is read now, under the lock: the timer
	// fires without it, while a later trigger may be replacing d.seq.
	gen, band, key := d.gen, d.seq.Rule.Priority, fairKey(d.seq.Rule, d.key)
	d.timer = sm.sch.AfterFunc(max(d.due.Sub(sm.sch.Now()), 0), func() {
		sm.drv.submit(pool.Job{Band: band, Group: rule, Key: key, Run: func() { sm.drv.undebounce(rule, d, gen) }})
	})
}

// writeDebounce records d's latest trigger, when the runner has a store:
// the record holds the event now, so the trigger's ticket is settled
// (a journaled event leaves the journal). Writes of one key go one at a
// time and each writes the state as it is then, so the last write is the
// last trigger's.
func (rn *Runner) writeDebounce(rule string, d *debounced) {
	if rn.store == nil {
		return
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	rn.apply(func(fx *effects) {
		if rn.m.rules[rule] == nil || rn.m.rules[rule].debounce[d.key] != d {
			return // fired or dropped meanwhile
		}
		now := rn.sch.Now()
		e := d.event
		rec := Pending{ID: d.id, Rule: rule, Source: e.Topic, Key: d.key, FireAt: d.due.UnixMilli(), WrittenAt: now.UnixMilli(),
			Remaining: max(d.due.Sub(now), 0).Milliseconds(), Debounce: d.first.UnixMilli(),
			EventID: e.ID, EventTime: e.Time.UnixNano(), Event: json.RawMessage(e.Raw), Hops: e.Hops, Started: d.first.UnixMilli()}
		if d.seq.Previous {
			rec.Previous = json.RawMessage(e.Prior) // its run, after a restart, reads the state before it
		}
		gen, tk := d.gen, d.tk
		fx.writes = append(fx.writes, write{rec: rec, then: func(err error, _ *effects) {
			if err != nil {
				rn.log.Error("cannot record a debounced trigger; it will not survive a restart",
					"rule", rule, "key", d.key, "error", err)
				return
			}
			if d.gen == gen && d.tk == tk {
				d.tk = nil
				tk.settle()
			}
		}})
	})
}

// undebounce runs when d's quiet period is over: the trigger is admitted
// again — through the gate, its condition and its rule's mode — on the
// rule as loaded now, and the burst's record goes once its run has taken
// the trigger (the ticket's done).
func (rn *Runner) undebounce(rule string, d *debounced, gen uint64) {
	held := false
	rn.apply(func(*effects) {
		rs := rn.m.rules[rule]
		if rn.m.stopped || rs == nil || rs.debounce[d.key] != d || d.gen != gen {
			return // a later trigger re-armed it, or it went
		}
		delete(rs.debounce, d.key)
		d.timer = nil
		held = true
	})
	if held {
		rn.fireDebounced(rule, d)
	}
}

// fireDebounced admits d's trigger, which its key's debounce no longer
// holds.
func (rn *Runner) fireDebounced(rule string, d *debounced) {
	var prev *ticket
	var s *Sequence
	rn.view(func() { prev, s = d.tk, d.seq })
	if rn.resolver != nil {
		s = rn.resolver.Current(rule)
	}
	id := d.id
	tk := &ticket{debounced: true, done: func() {
		prev.settle()
		if rn.store != nil {
			rn.submit(pool.Job{Group: rule, Run: func() { rn.apply(func(fx *effects) { fx.drop(id) }) }})
		}
	}}
	if prev != nil {
		tk.lost, tk.put = prev.lost, prev.put
	}
	if s == nil {
		rn.apply(func(*effects) { tk.settle() }) // its rule went meanwhile
		return
	}
	rn.fire(nil, s, d.event, "", "", tk)
}

// replayDebounce takes up a debounced trigger's record after a restart:
// held again until its due time, or dropped with a reason.
func (rn *Runner) replayDebounce(byRule map[string]*Sequence, p Pending, window time.Duration) string {
	s := byRule[p.Rule]
	if rn.resolver != nil {
		s = rn.resolver.Current(p.Rule)
	}
	switch {
	case s == nil:
		return DropRuleGone
	case s.Rule.Debounce.For <= 0:
		return "its rule no longer debounces"
	}
	now := rn.sch.Now()
	if now.Sub(p.Due()) > window {
		return DropOverdue
	}
	e, err := eventOf(p)
	if err != nil {
		return DropBadEvent
	}
	rn.apply(func(*effects) { rn.m.heldAgainLocked(s, p, e) })
	return ""
}

// heldAgainLocked holds the trigger of debounce record p (event e) of s's
// rule again, after a restart.
func (sm *machine) heldAgainLocked(s *Sequence, p Pending, e *bus.Event) {
	rs := sm.rule(p.Rule)
	if rs.debounce == nil {
		rs.debounce = map[string]*debounced{}
	}
	d := &debounced{id: p.ID, seq: s, event: e, key: p.Key, first: time.UnixMilli(p.Debounce), due: p.Due(), gen: 1}
	if old := rs.debounce[p.Key]; old != nil {
		// Two bursts of one key: the earlier had ended and its run had not
		// taken its trigger yet when the process stopped, the later was
		// still being held. The earlier is admitted now, the later held.
		earlier := d
		if old.first.Before(d.first) {
			earlier = old
			old.timer.Stop()
			rs.debounce[p.Key] = d
			sm.armDebounceLocked(p.Rule, d)
		}
		sm.drv.submit(pool.Job{Band: s.Rule.Priority, Group: p.Rule, Key: fairKey(s.Rule, p.Key),
			Run: func() { sm.drv.fireDebounced(p.Rule, earlier) }})
		return
	}
	rs.debounce[p.Key] = d
	sm.armDebounceLocked(p.Rule, d)
}

// dropDebouncedLocked lets go of rule's held triggers that drop says
// (nil: all): their tickets settled and their records' ids returned, for
// the caller to drop; or, abandon (the runner stops, the place moved),
// their tickets abandoned and their records kept for whoever replays them.
func (sm *machine) dropDebouncedLocked(rs *ruleState, drop func(*debounced) bool, abandon bool) []string {
	var ids []string
	for k, d := range rs.debounce {
		if drop != nil && !drop(d) {
			continue
		}
		if d.timer != nil {
			d.timer.Stop()
		}
		delete(rs.debounce, k)
		if abandon {
			d.tk.abandon()
			continue
		}
		d.tk.settle()
		ids = append(ids, d.id)
	}
	return ids
}
