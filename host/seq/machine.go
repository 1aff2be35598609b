package seq

import (
	"time"

	"sync"
	"sync/atomic"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/pool"
)

// machine is the sequencer's state and its moves: the rules' keys, the
// runs, what waits (wait-for, held steps, untrusted records), and every
// method that changes them. Its methods run under the Runner's lock,
// inside apply, and never wait: a move changes plain data (core's
// decisions on it), and leaves what the world must do — a record to
// write or drop, a step to judge, a cooldown to keep — in the effects it
// is given. What it may do at once, because none of it waits: hand a job
// to the pool, arm or stop a timer, settle a ticket, write a node of the
// execution log, log, and read a cold run's trigger back from its record
// (warmLocked, by design: see freezeLocked).
//
// It reaches its driver only through driver: the pool's jobs and the
// timers' callbacks come back into the Runner, which takes the lock and
// calls the machine again. It never calls a plugin, a resolver, or the
// store's writes.
type machine struct {
	*world
	drv driver

	rules     map[string]*ruleState
	runs      map[string]*run
	stopped   bool
	untrusted []untrusted       // replayed records waiting for a trusted clock
	absent    []Pending         // records of rules refused at a replay, waiting for them (ReplayAbsent)
	gated     map[string][]*run // due steps waiting for their rule to run again (Gate)
	dropped   map[string]uint64
	// undropped are records whose step ran but that the store would not
	// remove (it was away): tried again with every later drop, since left
	// in the store they would run their step again after a restart.
	undropped []string
	// waiting lists the runs parked on a wait-for step, by rule (Deliver);
	// recent are the last events delivered to each rule with a wait-for,
	// numbered by recentSeq, for a wait that starts after its event came.
	waiting   map[string]*waitList
	recent    map[string][]recentEvent
	recentSeq uint64
	refused   atomic.Uint64
	// parking holds a slot for each record written aside (parkAside), and
	// parks counts them: Stop waits for them.
	parking chan struct{}
	parks   sync.WaitGroup
	aside   atomic.Int64
	// quiet counts the jobs and writes aside in flight (Quiet).
	quiet quiet
}

// world is what the Runner and its machine read of the world, as
// configured, once for both.
type world struct {
	sch       Scheduler
	store     *PendingStore // nil: memory only
	log       Logger
	warn      *warnings                   // folds the warnings its inputs trigger
	book      *logbook                    // the execution log's (RunnerConfig.Tracer); nil: off
	owns      func(rule, key string) bool // nil: every key is this runner's
	gate      Gate
	onEnd     func(rule string)
	maxOutput int                    // bounds a step's output (RunnerConfig.MaxOutput)
	states    StateReader            // RunnerConfig.States; nil: none
	windows   WindowReader           // RunnerConfig.Windows; nil: none
	sun       func(time.Time) []byte // RunnerConfig.Sun; nil: none
}

// driver is what the machine hands on to its Runner: jobs for the pool,
// and the entries a timer or a job comes back through (each takes the
// lock itself: apply).
type driver interface {
	submit(pool.Job)
	due(r *run)
	nextPass(r *run)
	undebounce(rule string, d *debounced, gen uint64)
	releaseThrottled(rule, key string)
	runStep(r *run, fin bool)
	catchUp(r *run, st *CompiledStep, offer []*bus.Event)
	fireDebounced(rule string, d *debounced)
}
