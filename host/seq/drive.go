package seq

import "sync"

// The driver's one entry. Everything that changes the runner's state — a
// trigger admitted, a step's answer, a timer fired, a record written, an
// operator's hand — goes through apply: f runs under the runner's lock and
// changes plain data only (the runs, keys and rules, core's moves on
// them), leaving what the world must do in fx; apply then releases the
// lock and carries fx out. An answer the world gives back — a record
// written or not, a step judged — comes in through apply again. It is
// etcd/raft's Ready protocol with the driver as its own caller: f is the
// step, fx the Ready, carry the caller's handling of it.
//
// Why one entry: a section that dropped the lock for a write and took it
// again had to check again what a cancel had changed meanwhile, and each
// did so its own way (issue 40). Now a locked section never waits on the
// world, and a write's answer is a new input, checked like any other.
//
// What a locked section may do besides plain data: hand a step to the
// pool (Pool.Submit queues, it does not wait), arm or stop a timer (the
// scheduler's heap), settle or abandon a ticket (the journal's callbacks
// must not block), write a node of the execution log (the tracer queues
// it), and log. What it must not: write or read the store (but for a cold
// run's trigger, read back under the lock by design: warmLocked), call a
// plugin, judge a step (the resolver may load a module), or call a
// callback that may call back into the runner.

// effects are a locked section's obligations to the world. carry meets
// them in this order:
//
//  0. aside: start the goroutines of what goes aside — the drops of runs
//     that write no record again (aside), the writes marked aside — whose
//     slots were taken under the lock (parkAsideLocked): first, so that a
//     slot is not held while the worker does the rest;
//  1. keep: write the keys' times (a cooldown begun, a throttle at its
//     limit), so a restart does not forget them;
//  2. drops: remove the records of runs that ended, and those a store
//     outage left before (the failed ones are kept for the next drop; the
//     aside drops take them when there are no others);
//  3. complete: tell OnComplete of each rule whose run completed, its
//     records gone;
//  4. writes: write records, in order, each answer fed back through apply;
//  5. judge: judge the runs whose step came due, each verdict fed back.
type effects struct {
	keep     []kept
	complete []string
	drops    []string
	dropping bool // a drop was asked for: the records an outage left are tried again
	aside    []string
	writes   []write
	judge    []judging
}

// write is a record to put, and what its answer does.
type write struct {
	rec Pending
	// put, when not nil, writes it instead of the store (Trigger.Put).
	put func(hash, field string, value []byte) error
	// aside: on a goroutine of its own, with a parking slot taken.
	aside bool
	// then, when not nil, is fed the write's answer under the lock.
	then func(err error, fx *effects)
}

// drop asks for the records of ids to be removed.
func (fx *effects) drop(ids ...string) {
	fx.dropping = true
	fx.drops = append(fx.drops, ids...)
}

// apply runs f under the runner's lock, then carries out what it left
// (effects). It is the only place the runner's lock is taken for a
// change; call it without the lock.
func (rn *Runner) apply(f func(fx *effects)) {
	fx := spare.Get().(*effects)
	rn.mu.Lock()
	f(fx)
	var retry []string
	if (fx.dropping || fx.aside != nil) && len(rn.m.undropped) > 0 {
		retry, rn.m.undropped = rn.m.undropped, nil
	}
	rn.mu.Unlock()
	rn.carry(fx, retry)
	fx.reset()
	spare.Put(fx)
}

// spare keeps effects for apply: f is a closure the compiler cannot see
// into, so an effects it is given is on the heap, and a step's four
// applies would allocate four.
var spare = sync.Pool{New: func() any { return new(effects) }}

// reset empties fx for its next apply, keeping its lists' room — but
// aside's, which a goroutine may still be reading.
func (fx *effects) reset() {
	clear(fx.writes) // what they point at (a run, a closure) may go
	clear(fx.judge)
	*fx = effects{keep: fx.keep[:0], complete: fx.complete[:0], drops: fx.drops[:0], writes: fx.writes[:0],
		judge: fx.judge[:0]}
}

// view runs f under the runner's lock, for a read: f changes nothing.
func (rn *Runner) view(f func()) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	f()
}

// carry meets fx's obligations, in effects' order.
func (rn *Runner) carry(fx *effects, retry []string) {
	if aside := fx.aside; aside != nil {
		var again []string
		if !fx.dropping {
			again, retry = retry, nil
		}
		go func() {
			defer rn.parkedAside()
			rn.dropRecords(aside, again)
		}()
	}
	for _, w := range fx.writes {
		if w.aside {
			go func() {
				defer rn.parkedAside()
				rn.written(w)
			}()
		}
	}
	for _, k := range fx.keep {
		if rn.store == nil {
			break
		}
		if err := rn.store.keepTime(k.hash, k.rule, k.key, k.until); err != nil {
			rn.log.Warn(k.lost, "rule", k.rule, "key", k.key, "error", err)
		}
	}
	if fx.dropping {
		rn.dropRecords(fx.drops, retry)
	}
	if rn.onComplete != nil {
		for _, rule := range fx.complete {
			rn.onComplete(rule)
		}
	}
	for _, w := range fx.writes {
		if !w.aside {
			rn.written(w)
		}
	}
	for _, j := range fx.judge {
		rn.judgeDue(j)
	}
}

// written writes w's record and feeds its answer back.
func (rn *Runner) written(w write) {
	err := rn.store.PutWith(w.rec, w.put)
	if w.then != nil {
		rn.apply(func(fx *effects) { w.then(err, fx) })
	}
}

// dropRecords removes pending records, and those a store outage left
// (retry, taken under the lock), logging what it cannot remove: the
// failed ones are kept for the next drop.
func (rn *Runner) dropRecords(ids, retry []string) {
	if rn.store == nil {
		return
	}
	var failed []string
	for _, id := range ids {
		if err := rn.store.Drop(id); err != nil {
			rn.log.Error("cannot drop a pending record; tried again with the next one", "run", id, "error", err)
			failed = append(failed, id)
		}
	}
	for i, id := range retry {
		if len(failed) > 0 && len(ids) > 0 {
			failed = append(failed, retry[i:]...) // the store is still away: no use asking now
			break
		}
		if err := rn.store.Drop(id); err != nil {
			failed = append(failed, retry[i:]...)
			break
		}
	}
	if len(failed) > 0 {
		rn.apply(func(*effects) { rn.m.undropped = append(rn.m.undropped, failed...) })
	} else if len(retry) > 0 {
		rn.log.Info("dropped the pending records a store outage had left", "records", len(retry))
	}
}
