package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/sun"
)

// Hash is where the schedules' records are: field "<rule>/<index>".
const Hash = keyspace.Schedules

// Topic is the topic of the events schedules fire. It is reserved: no
// topic pattern matches it, so only the rule whose schedule it is runs.
const Topic = "ruled.schedule"

// Store is what the scheduler keeps its records in (host/store's bbolt and
// Redis hashes; seq.Hasher's shape).
type Store interface {
	HSet(key, field string, value any) error
	HGetAll(key string) (map[string]string, error)
	HDel(key string, fields ...string) error
}

// Clock is the wall clock and its timers (sched.Scheduler, sched.Virtual).
type Clock = sched.Clock

// Logger is go-hclog's methods.
type Logger interface {
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

// Occurrence is one schedule coming due: the run it starts.
type Occurrence struct {
	Rule  string
	Index int // which of the rule's schedules
	Due   time.Time
	// RunID is the same for the same occurrence whenever it is fired.
	RunID string
	Event *bus.Event
}

// Config is what a Scheduler is built from. Store, Clock, Fire, Submit
// and Log are required.
type Config struct {
	Store Store
	Clock Clock
	// Fire starts the occurrence's run; done is called, once, when its
	// fate no longer depends on this process's memory (seq.Trigger.Done:
	// its first pending record written, or its run over). done may be
	// called before Fire returns, and under the caller's locks: it takes
	// only the scheduler's own, and never calls back into Fire.
	Fire func(o Occurrence, done func())
	// Live reports whether a run of that id is live here (replayed from
	// its pending record at start): the occurrence was taken before the
	// restart, and is not fired again. nil: none is.
	Live func(runID string) bool
	// Idle reports whether the rule has no run live: an occurrence caught
	// up after an outage waits for it, so that the catch-up of missed:
	// all runs one after another whatever the rule's mode. nil: always.
	Idle func(rule string) bool
	// Owns reports whether this process runs the rule's schedules (a
	// fleet member holding the rule's shard); nil: every rule's.
	Owns func(rule string) bool
	// Submit runs f on a worker: a check reads and writes the store, which
	// a timer's callback must not.
	Submit func(rule string, f func())
	// MaxWait, when above 0, is the longest a timer waits: the wall clock
	// is read at least that often, so that a clock set forward is noticed
	// within it (a device's, where nothing else would wake the schedule
	// before its next occurrence by the old clock). A check that finds
	// nothing due reads and writes nothing.
	MaxWait time.Duration
	// Window is how late a missed occurrence may still run, for a
	// schedule without within: (the replay window).
	Window time.Duration
	Log    Logger
}

// Entry is one schedule of a rule, as loaded now.
type Entry struct {
	Rule     string
	Index    int
	Schedule *rules.Schedule
	// Sun is where the daemon is, for a sun schedule (rules.Schedule.Sun);
	// nil: nowhere, and a sun schedule never comes due.
	Sun *sun.Location
}

// next is the entry's first occurrence after after (rules.Schedule.Next).
func (e Entry) next(after time.Time) time.Time { return e.Schedule.Next(after, e.Sun) }

func (e Entry) field() string { return field(e.Rule, e.Index) }

// field names schedule i of rule, in the store and in the slots: the
// rule's schedules are found by index, 0 up.
func field(rule string, i int) string { return rule + "/" + strconv.Itoa(i) }

// Scheduler runs the schedules.
type Scheduler struct {
	cfg Config

	mu      sync.Mutex
	slots   map[string]*slot // by field
	perRule map[string]int   // how many schedules each rule has (fields <rule>/0 …)
	started bool
}

// slot is one schedule's state.
type slot struct {
	e   Entry
	key string
	// last is the latest occurrence handled (fired or passed over); valid
	// once loaded. written is what the store holds.
	last, written time.Time
	loaded        bool
	timer         *sched.Timer
	busy          bool // a check is queued or running
	again         bool // kicked while busy: check once more after
	// queue are the occurrences to fire, oldest first, one at a time:
	// the next once the one before was taken (firing is it). A late one
	// (caught up after an outage) also waits for the rule to have no run
	// live, so that the rule's mode does not suppress its own catch-up.
	queue  []pending
	firing *pending
	qtimer *sched.Timer
	// caughtUp: the last occurrence fired ran late (missed, or behind a
	// catch-up); while its run is live, the next one joins the catch-up.
	// One that runs on time ends it: then a rule whose runs outlast its
	// interval is its mode's to decide.
	caughtUp bool
	behind   bool // said that the clock is behind last
	gone     bool
}

// pending is an occurrence to fire.
type pending struct {
	at time.Time
	// late: it waits for the rule to be idle — missed (due more than its
	// grace ago, graceOf), or due while the catch-up still ran.
	late bool
}

// idlePoll is how often a late occurrence looks whether its rule's last
// run has ended, besides being told (RuleEnded).
const idlePoll = time.Minute

// Poll is how often a schedule that cannot go on yet looks again: the
// clock behind its last occurrence, or its record unreadable.
const Poll = time.Minute

// NoneDue is how long a schedule with no occurrence ahead waits before
// it looks again: a sun schedule with no location, or at a pole in a
// season without its event. A day: the season moves by days, and a
// location comes with a restart.
const NoneDue = 24 * time.Hour

// graceOf is how late an occurrence due at t may come and still be on
// time (not missed): a timer's latency, a worker busy for a moment — a
// tenth of the schedule's period there, at least 100 ms and at most a
// minute. Later than that it was missed (the process was down, the clock
// jumped) and the schedule's missed: policy decides. A fixed minute made
// skip and once do nothing for a frequent schedule: an every: 2s
// schedule down for 20 s ran all 10 occurrences under skip (issue 37, 7).
func graceOf(e Entry, t time.Time) time.Duration {
	next := e.next(t)
	if next.IsZero() {
		return time.Minute
	}
	return min(max(next.Sub(t)/10, 100*time.Millisecond), time.Minute)
}

// maxCatchUp bounds the occurrences one check fires (missed: all after a
// long outage of a frequent schedule): the latest ones.
const maxCatchUp = 1000

// record is a slot's store record.
type record struct {
	Key  string `json:"key"`
	Last int64  `json:"last"` // unix milliseconds
}

// New returns a Scheduler; it fires nothing until Start.
func New(cfg Config) *Scheduler {
	return &Scheduler{cfg: cfg, slots: map[string]*slot{}, perRule: map[string]int{}}
}

// Set replaces the schedules with entries (the rules as loaded now). A
// schedule whose key is unchanged keeps its state; a new or changed one
// starts from its record (the same key) or from now; a removed one's
// record goes.
func (s *Scheduler) Set(entries []Entry) {
	s.mu.Lock()
	next := make(map[string]*slot, len(entries))
	perRule := map[string]int{}
	var kick, gone []*slot
	for _, e := range entries {
		perRule[e.Rule]++
		f, key := e.field(), e.Schedule.Key()
		if old := s.slots[f]; old != nil && old.key == key {
			old.e = e
			next[f] = old
			continue
		}
		sl := &slot{e: e, key: key}
		next[f] = sl
		kick = append(kick, sl)
	}
	for f, old := range s.slots {
		if next[f] == nil || next[f] != old {
			old.gone = true
			if old.timer != nil {
				old.timer.Stop()
				old.timer = nil
			}
			if next[f] == nil {
				gone = append(gone, old)
			}
		}
	}
	s.slots, s.perRule = next, perRule
	started := s.started
	s.mu.Unlock()
	if len(gone) > 0 {
		fields := make([]string, len(gone))
		for i, g := range gone {
			fields[i] = g.e.field()
		}
		s.cfg.Submit("", func() {
			if err := s.cfg.Store.HDel(Hash, fields...); err != nil {
				s.cfg.Log.Warn("schedule: cannot remove the records of removed schedules", "error", err)
			}
		})
	}
	if started {
		for _, sl := range kick {
			s.kick(sl)
		}
	}
}

// Start begins firing: call it once the runs an occurrence starts can run
// (after replay, with the bus up).
func (s *Scheduler) Start() {
	s.mu.Lock()
	s.started = true
	slots := make([]*slot, 0, len(s.slots))
	for _, sl := range s.slots {
		slots = append(slots, sl)
	}
	s.mu.Unlock()
	for _, sl := range slots {
		s.kick(sl)
	}
}

// Stop stops the timers; nothing fires after it returns but a check
// already on a worker.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = false
	for _, sl := range s.slots {
		if sl.timer != nil {
			sl.timer.Stop()
			sl.timer = nil
		}
		if sl.qtimer != nil {
			sl.qtimer.Stop()
			sl.qtimer = nil
		}
	}
}

// Next is when each of the rule's schedules comes due next, by index
// (zero for one not loaded yet).
func (s *Scheduler) Next(rule string) map[int]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]time.Time{}
	for i := range s.perRule[rule] {
		if sl := s.slots[field(rule, i)]; sl != nil && sl.loaded {
			out[i] = sl.e.next(sl.last)
		}
	}
	return out
}

// RuleEnded is told when a run of rule ends: a late occurrence waiting
// for the rule to be idle looks again. It only queues work, so the runner
// may call it under its lock.
func (s *Scheduler) RuleEnded(rule string) {
	s.mu.Lock()
	var waiting []*slot
	// By the rule's fields, not over every slot: this is on every run's
	// end, and a rule without schedules costs one map lookup.
	for i := range s.perRule[rule] {
		if sl := s.slots[field(rule, i)]; sl != nil && sl.firing == nil && len(sl.queue) > 0 && s.started {
			waiting = append(waiting, sl)
		}
	}
	s.mu.Unlock()
	for _, sl := range waiting {
		s.cfg.Submit(rule, func() { s.pump(sl) })
	}
}

// kick queues a check of sl on a worker, once.
func (s *Scheduler) kick(sl *slot) {
	s.mu.Lock()
	if sl.gone || !s.started {
		s.mu.Unlock()
		return
	}
	if sl.busy {
		sl.again = true
		s.mu.Unlock()
		return
	}
	sl.busy = true
	s.mu.Unlock()
	s.cfg.Submit(sl.e.Rule, func() { s.check(sl) })
}

// armLocked sets sl's timer for d from now.
func (s *Scheduler) armLocked(sl *slot, d time.Duration) {
	if sl.timer != nil {
		sl.timer.Stop()
	}
	sl.timer = nil
	if sl.gone || !s.started {
		return
	}
	if s.cfg.MaxWait > 0 {
		d = min(d, s.cfg.MaxWait)
	}
	sl.timer = s.cfg.Clock.AfterFunc(max(d, 0), func() { s.kick(sl) })
}

// check runs on a worker: it loads sl's record if need be, fires what
// came due as the schedule's missed: says, and arms the next check.
func (s *Scheduler) check(sl *slot) {
	wait := s.step(sl)
	s.mu.Lock()
	sl.busy = false
	again := sl.again
	sl.again = false
	s.armLocked(sl, wait)
	s.mu.Unlock()
	if again {
		s.kick(sl)
	}
}

// step does one check and returns how long until the next.
func (s *Scheduler) step(sl *slot) time.Duration {
	e, sc := sl.e, sl.e.Schedule
	now := s.cfg.Clock.Now()
	if s.cfg.Owns != nil && !s.cfg.Owns(e.Rule) {
		// Another member's: look again at the next occurrence, reading
		// its record afresh then.
		s.mu.Lock()
		sl.loaded = false
		s.mu.Unlock()
		if next := e.next(now); !next.IsZero() {
			return next.Sub(now)
		}
		return NoneDue
	}
	if !sl.loaded {
		if !s.load(sl, now) {
			return Poll
		}
	}
	s.mu.Lock()
	last, unwritten := sl.last, sl.written.IsZero()
	s.mu.Unlock()
	if unwritten {
		s.write(sl, last) // a new schedule starts now, even if the process stops before its first occurrence
	}
	if now.Before(last) {
		// The clock is behind what already ran here: set back, or a device
		// without a real-time clock. Nothing runs until it passes last.
		if !sl.behind {
			sl.behind = true
			s.cfg.Log.Warn("schedule: the clock reads before the last occurrence run; waiting for it to pass",
				"rule", e.Rule, "schedule", sc.String(), "last", last, "now", now)
		}
		return Poll
	}
	sl.behind = false
	due := e.next(last)
	if due.IsZero() {
		return NoneDue
	}
	if due.After(now) {
		return due.Sub(now)
	}
	var occ []time.Time
	dropped := 0
	for t := due; !t.IsZero() && !t.After(now); t = e.next(t) {
		if len(occ) == maxCatchUp {
			occ, dropped = occ[1:], dropped+1
		}
		occ = append(occ, t)
	}
	within := sc.Within
	if within <= 0 {
		within = s.cfg.Window
	}
	var fire []time.Time
	for i, t := range occ {
		late := now.Sub(t)
		switch {
		case late <= graceOf(e, t):
			fire = append(fire, t) // on time, whatever the policy
		case sc.Missed == rules.MissedAll && late <= within:
			fire = append(fire, t)
		case sc.Missed == rules.MissedOnce && i == len(occ)-1 && late <= within:
			fire = append(fire, t)
		}
	}
	if passed := len(occ) + dropped - len(fire); passed > 0 {
		s.cfg.Log.Info("schedule: occurrences missed while down passed over", "rule", e.Rule, "schedule", sc.String(),
			"missed", sc.Missed.String(), "passed", passed, "fired", len(fire), "from", occ[0], "to", occ[len(occ)-1])
	}
	newLast := occ[len(occ)-1]
	busy := s.cfg.Idle != nil && !s.cfg.Idle(e.Rule) // before the lock: the runner's
	s.mu.Lock()
	sl.last = newLast
	for _, t := range fire {
		// One due while a catch-up still runs joins it, and waits its turn.
		behind := len(sl.queue) > 0 || sl.firing != nil && sl.firing.late || sl.caughtUp && busy
		sl.queue = append(sl.queue, pending{at: t, late: now.Sub(t) > graceOf(e, t) || behind})
	}
	idle := sl.firing == nil && len(sl.queue) == 0
	s.mu.Unlock()
	if idle {
		s.write(sl, newLast) // nothing to wait for: passed over, or nothing
	} else {
		s.pump(sl)
	}
	next := e.next(newLast)
	if next.IsZero() {
		return NoneDue
	}
	return next.Sub(now)
}

// pump fires sl's oldest queued occurrence, unless one is in flight; a
// late one waits, looking every idlePoll, until its rule has no run live.
// It calls Idle and Fire without the scheduler's lock: the runner calls
// back into it (taken) under its own.
func (s *Scheduler) pump(sl *slot) {
	s.mu.Lock()
	if sl.firing != nil || len(sl.queue) == 0 || sl.gone || !s.started {
		s.mu.Unlock()
		return
	}
	head := sl.queue[0]
	s.mu.Unlock()
	if head.late && s.cfg.Idle != nil && !s.cfg.Idle(sl.e.Rule) {
		s.mu.Lock()
		if sl.qtimer == nil && !sl.gone && s.started {
			sl.qtimer = s.cfg.Clock.AfterFunc(idlePoll, func() {
				s.mu.Lock()
				sl.qtimer = nil
				s.mu.Unlock()
				s.cfg.Submit(sl.e.Rule, func() { s.pump(sl) })
			})
		}
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	if sl.firing != nil || len(sl.queue) == 0 || sl.queue[0] != head {
		s.mu.Unlock()
		return
	}
	sl.queue = sl.queue[1:]
	sl.firing = &head
	sl.caughtUp = s.cfg.Clock.Now().Sub(head.at) > graceOf(sl.e, head.at) // it ran late: the catch-up goes on
	s.mu.Unlock()
	s.fire(sl, head.at)
}

// load reads the records of every schedule not loaded yet (sl among
// them: one read at start, not one a schedule). A missing record, or one
// of another key (the schedule changed), starts the schedule now; its
// check writes that at once, so that an occurrence due while the process
// is down before the first one ran is still known to be missed.
func (s *Scheduler) load(sl *slot, now time.Time) bool {
	all, err := s.cfg.Store.HGetAll(Hash)
	if err != nil {
		s.cfg.Log.Error("schedule: cannot read the schedules' records; trying again", "rule", sl.e.Rule, "error", err)
		return false
	}
	s.mu.Lock()
	for f, x := range s.slots {
		if x.loaded {
			continue
		}
		var rec record
		if v, ok := all[f]; ok && json.Unmarshal([]byte(v), &rec) == nil && rec.Key == x.key && rec.Last > 0 {
			x.last, x.written = time.UnixMilli(rec.Last), time.UnixMilli(rec.Last)
		} else {
			x.last, x.written = now, time.Time{} // new, or changed: from now; its check writes it
		}
		x.loaded = true
	}
	s.mu.Unlock()
	return true
}

// write stores last as sl's last occurrence handled, if it moved.
func (s *Scheduler) write(sl *slot, last time.Time) {
	s.mu.Lock()
	gone := sl.gone
	same := !last.After(sl.written) && !sl.written.IsZero()
	s.mu.Unlock()
	if same || gone {
		return
	}
	b, _ := json.Marshal(record{Key: sl.key, Last: last.UnixMilli()})
	if err := s.cfg.Store.HSet(Hash, sl.e.field(), b); err != nil {
		// Not fatal: a restart before the next write fires the occurrence
		// again (the same run id), which is at least once.
		s.cfg.Log.Error("schedule: cannot record the last occurrence", "rule", sl.e.Rule, "error", err)
		return
	}
	s.mu.Lock()
	if last.After(sl.written) {
		sl.written = last
	}
	s.mu.Unlock()
}

// fire hands occurrence at to Fire, or counts it taken when its run is
// live already (replayed from its record).
func (s *Scheduler) fire(sl *slot, at time.Time) {
	e := sl.e
	now := s.cfg.Clock.Now()
	sum := sha256.Sum256([]byte(e.field() + "\x00" + sl.key + "\x00" + strconv.FormatInt(at.UnixMilli(), 10)))
	h := hex.EncodeToString(sum[:])
	o := Occurrence{Rule: e.Rule, Index: e.Index, Due: at, RunID: fmt.Sprintf("%012x", at.UnixMilli()) + h[:20]}
	if s.cfg.Live != nil && s.cfg.Live(o.RunID) {
		s.taken(sl, at)
		return
	}
	zone := time.UTC
	if e.Schedule.Cron != nil {
		zone = e.Schedule.Zone
	}
	fields := map[string]any{"topic": Topic, "rule": e.Rule, "schedule": e.Schedule.String(),
		"due": at.In(zone).Format(time.RFC3339), "late_ms": max(now.Sub(at), 0).Milliseconds()}
	if e.Schedule.Sun != 0 {
		fields["sun"] = e.Schedule.Sun.String()
	}
	raw, _ := json.Marshal(fields)
	ev, err := bus.Rebuild("sched-"+h[:24], Topic, at, raw)
	if err != nil { // cannot happen: the JSON is ours
		s.taken(sl, at)
		return
	}
	o.Event = ev
	var once sync.Once
	s.cfg.Fire(o, func() { once.Do(func() { s.taken(sl, at) }) })
}

// taken is occurrence at's Done: the record moves to it — to the check's
// latest occurrence once none is queued — and the next queued one fires
// (on a worker: Done runs under the runner's lock).
func (s *Scheduler) taken(sl *slot, at time.Time) {
	s.mu.Lock()
	sl.firing = nil
	upTo := at
	if len(sl.queue) == 0 {
		upTo = sl.last
	}
	s.mu.Unlock()
	s.cfg.Submit(sl.e.Rule, func() {
		s.write(sl, upTo)
		s.pump(sl)
	})
}
