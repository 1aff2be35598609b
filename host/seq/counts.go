package seq

// Counts is the runner's counters, read together under one lock: what the
// engine's status, its idle check and a watcher's change number ask for.
// One query for them, where there were eight methods (issue 40: a
// driver's surface small enough to read).
type Counts struct {
	// Active is how many runs are part-way through their steps, including
	// a run parked on a timer waiting out an after or the gap between two
	// repeat passes. A trigger in a queue-policy rule's backlog is not
	// active: it has not started.
	Active int
	// Waiting is how many runs wait for an event now (wait-for).
	Waiting int
	// Undropped is how many records of steps that ran are still in the
	// store because it was away when they were to go; they go with the
	// next drop.
	Undropped int
	// Refused counts the triggers turned away by a rule's max (parallel
	// or queue mode) since start. It only grows: a number that climbs is
	// the visible end of a rule whose sequence cannot keep up with what
	// triggers it.
	Refused uint64
	// Changes is a number that grows whenever a rule's counters do — a
	// run started or ended, a trigger turned away, an error — so that a
	// watcher (the console's live view) knows when to look again without
	// reading every rule: the sum of the counters that only grow.
	Changes uint64
	// Aside is how many records of parking runs are being written aside
	// (park), or of completed runs removed, or steps waiting for what
	// their action owed (runStep), now: a run among them has not armed
	// its timer, or moved past its step, yet. A harness that settles on
	// an idle pool (sdk/ruletest, through Engine.Idle) waits for none.
	Aside int
	// InFlight is how many of the runner's jobs are queued for a worker
	// or running, and how many of its writes are made aside (Aside).
	InFlight int
	// Dropped counts the waiting steps dropped instead of resumed, by
	// reason (a copy).
	Dropped map[string]uint64
}

// Counts reads the runner's counters (Counts).
func (rn *Runner) Counts() (c Counts) {
	rn.view(func() { c = rn.m.countsLocked() })
	return c
}

// countsLocked is Counts under the lock.
func (sm *machine) countsLocked() Counts {
	c := Counts{
		Active:    len(sm.runs),
		Undropped: len(sm.undropped),
		Refused:   sm.refused.Load(),
		Aside:     int(sm.aside.Load()),
		InFlight:  int(sm.quiet.n.Load()),
		Dropped:   make(map[string]uint64, len(sm.dropped)),
	}
	for _, wl := range sm.waiting {
		c.Waiting += wl.n
	}
	for _, rs := range sm.rules {
		s := &rs.stats
		c.Changes += s.Started + s.Completed + s.Failed + s.Cancelled + s.Errors + s.Suppressed + s.Refused + s.Dropped + s.Debounced
	}
	for k, v := range sm.dropped {
		c.Dropped[k] = v
	}
	return c
}
