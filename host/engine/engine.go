package engine

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/catalog"
	"github.com/ruled-dev/ruled/host/metrics"
	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/ruleset"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/schedule"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/sun"
	"github.com/ruled-dev/ruled/host/task"
	"github.com/ruled-dev/ruled/host/trust"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/host/window"
)

// Clock is the time the engine's timers run on: waiting steps, sleeping
// rules' wake-ups. The wall clock (sched.New) in a daemon; tests give a
// sched.Virtual to live hours in milliseconds.
type Clock = sched.Clock

// Config is what an Engine is built from. Required: RulesDir, PluginsDir,
// Runtime, Hasher, Pending, Clock, Metrics.
type Config struct {
	// RulesDir holds the rule files; PluginsDir the plugins (*.wasm).
	RulesDir, PluginsDir string
	// ModuleDir keeps modules by digest for steps pinned to them.
	ModuleDir string
	// Runtime runs the plugins, its services already in place.
	Runtime *wasm.Runtime
	// PluginOptions are the grant and limits a plugin loads with.
	PluginOptions func(name string) wasm.Options
	// ReloadBackoff is the first wait before a plugin file that failed to
	// load is tried again (catalog.Config.Backoff).
	ReloadBackoff time.Duration
	// Blobs holds deployed modules the module store may lack; nil: none.
	Blobs catalog.BlobSource
	// Trust checks plugin and rule files against their signatures where
	// the operator requires them; nil: none.
	Trust *trust.Gate
	// Hasher keeps the rules' states; Pending the waiting steps.
	Hasher  seq.Hasher
	Pending *seq.PendingStore
	// PendingHashes are the hashes Pending lists from (fleet mode's
	// shards); nil: the standard one.
	PendingHashes []string
	// Log is the execution log; nil: off.
	Log *runlog.Log
	// Spans sends runs as traces (host/traces.Exporter); nil: none.
	Spans Spans
	Clock Clock
	// Workers and QueueCapacity size the pool.
	Workers, QueueCapacity int
	// ReplayWindow drops waiting steps more than this past due at start,
	// and held steps held longer when their rule runs again.
	ReplayWindow time.Duration
	// MaxStepOutput bounds what a step may return for its run's later
	// steps (seq.RunnerConfig.MaxOutput; 0: seq.DefaultMaxOutput).
	MaxStepOutput int
	// LogValue bounds each value a node of the execution log keeps
	// (seq.RunnerConfig.LogValue; 0: runlog.MaxOutput).
	LogValue int
	// States are the entities' states the rules' states: read
	// (seq.RunnerConfig.States); nil: they read none.
	States seq.StateReader
	// Windows are the rule files' windows (windows:), which the engine
	// defines at each reload, counts events into (ObserveWindows) and
	// fires closes of; nil: none is kept.
	Windows *window.Table
	// SharedWindows are a fleet's windows instead (window.Shared): the
	// engine defines them and reads them; ingest counts events into them
	// (PlanWindows) as it appends them, and the members' poll closes
	// them.
	SharedWindows *window.Shared
	// Sun is where the daemon is, for the rules' sun schedules and sun.
	// (seq.RunnerConfig.Sun); nil: nowhere, and they never come due.
	Sun *sun.Location
	// ClockAfterNewest waits, before judging waiting steps, until the
	// clock reads at least the newest record's write time (no RTC).
	ClockAfterNewest bool
	// Placement says which runs are this process's to decide
	// (seq.RunnerConfig.Placement; the same value the Pending store was
	// made with); the zero value: every run.
	Placement seq.Placement
	// Metrics wraps plugin calls (latency) and counts reloads.
	Metrics *metrics.Metrics
	// ObserveAction, when set, sees every action call (sdk/ruletest).
	ObserveAction func(observe.ActionCall)
	// Announce is told of each reload that changed rules (the control
	// channel's announcement); nil: no one.
	Announce func(added, changed, removed []string)
	// Retry calls f until it succeeds or gives up (the store's wait at
	// start); nil: f is called once.
	Retry  func(ctx context.Context, what string, f func() error) error
	Logger hclog.Logger
}

// Engine is the catalog, the rule set, the rules' states, the pool and
// the runner of one process. Its parts are built by New and not replaced.
type Engine struct {
	cfg     Config
	log     hclog.Logger
	ctx     context.Context // for plugin calls made outside any request
	rt      *wasm.Runtime
	met     *metrics.Metrics
	clock   Clock
	pending *seq.PendingStore
	xlog    *runlog.Log

	cat    *catalog.Catalog
	rules  *ruleset.Loader
	tasks  *task.Tasks
	pool   *pool.Pool
	runner *seq.Runner
	sch    *schedule.Scheduler
	// windows are the windows as loaded now (syncWindows); nil before.
	windows atomic.Pointer[windowSet]

	reloadMu sync.Mutex // one reload of the rules at a time
	// changed counts what Changes cannot read off a counter: rule state
	// transitions, commands, reloads.
	changed  atomic.Uint64
	probing  atomic.Bool // an Alive probe is out
	replayed int
	closers  []func()
}

// New builds the engine: the plugins load, the rules load and compile on
// them, the rules' states are read (through Config.Retry: rules must not
// start on a guess of their state), and the pool and the runner start —
// the pool held (pool.Config.Held) until Release, so that what Replay
// queues waits for the services a step may call. Bad plugins and rules
// are reported (the log, Status), not fatal; a store that cannot give the
// states is.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Retry == nil {
		cfg.Retry = func(_ context.Context, _ string, f func() error) error { return f() }
	}
	if cfg.ModuleDir == "" {
		cfg.ModuleDir = filepath.Join(filepath.Dir(cfg.PluginsDir), "modules", "sha256")
	}
	e := &Engine{cfg: cfg, log: cfg.Logger, ctx: context.Background(), rt: cfg.Runtime, met: cfg.Metrics,
		clock: cfg.Clock, pending: cfg.Pending, xlog: cfg.Log}
	e.cat = catalog.New(e.ctx, catalog.Config{Runtime: e.rt, Dir: cfg.PluginsDir, ModuleDir: cfg.ModuleDir,
		Options: cfg.PluginOptions, Backoff: cfg.ReloadBackoff, Check: e.checkRulesOn,
		Reloaded: e.met.PluginReloaded, Blobs: cfg.Blobs, Trust: cfg.Trust, Log: e.log})
	e.closers = append(e.closers, func() { e.cat.Close() })
	// Before the plugins load: a plugin's check asks which loaded rules
	// call it (none yet).
	e.rules = ruleset.New(ruleset.Config{Dir: cfg.RulesDir, Catalog: e.cat, Compile: e.compile, Def: e.ruleDef,
		Trust: cfg.Trust, Log: e.log})
	e.sch = e.newScheduler()
	e.closers = append(e.closers, e.sch.Stop)
	e.cat.LoadDir()
	e.LoadRules()
	if err := e.startTasks(ctx); err != nil {
		e.Close()
		return nil, err
	}
	e.pool = pool.New(pool.Config{Workers: cfg.Workers, Capacity: cfg.QueueCapacity, Held: true})
	e.closers = append(e.closers, func() {
		if n := e.pool.StopWithin(StopDrain); e.pool.Stats().Busy > 0 {
			e.log.Warn("stopping: steps still on a worker after the drain; left to end on their own (their records stay)",
				"drain", StopDrain, "busy", e.pool.Stats().Busy, "dropped", n)
		}
	})
	rc := seq.RunnerConfig{Pool: e.pool, Scheduler: e.clock, Store: e.pending, Log: e.log.Named("seq"),
		Resolver: e, Gate: gate{e.tasks}, OnError: e.tasks.Errored, OnComplete: e.completed, OnEnd: e.sch.RuleEnded,
		Placement: cfg.Placement, MaxOutput: cfg.MaxStepOutput, LogValue: cfg.LogValue,
		States: cfg.States, Sun: sunAt(cfg.Sun)}
	if cfg.Windows != nil || cfg.SharedWindows != nil {
		rc.Windows = e
	}
	if e.met.Latency() {
		rc.Observer = e.met
	}
	switch {
	case e.xlog != nil && cfg.Spans != nil:
		rc.Tracer, rc.StepTrace = both{e.xlog, cfg.Spans}, cfg.Spans.StepParent
	case e.xlog != nil: // a nil *runlog.Log in the interface would not be nil
		rc.Tracer = e.xlog
	case cfg.Spans != nil:
		rc.Tracer, rc.StepTrace = spansOnly{cfg.Spans}, cfg.Spans.StepParent
	}
	if cfg.Spans == nil {
		// No span of ours to put the world's under: a step passes its
		// trigger's trace context on unchanged, as W3C asks of a hop
		// that does not trace, so the sender's trace goes on past us.
		rc.StepTrace = passOn
	}
	if cfg.ClockAfterNewest {
		rc.ClockCheck, rc.ClockPoll = seq.ClockAfterNewest, time.Second
	}
	e.runner = seq.NewRunner(rc)
	e.closers = append(e.closers, e.runner.Stop)
	// Before the runner stops: a call cut short by shutdown must not move
	// a rule's state (task.Tasks.Release).
	e.closers = append(e.closers, e.tasks.Release)
	return e, nil
}

// Close stops the engine in reverse: the rules' states are released (a
// run cut short is no rule's error), the runner stops (runs abandoned,
// durable records kept), the pool (queued work dropped; running steps
// finish), and the modules loaded for pinned steps close. The runtime
// and the stores are the caller's.
func (e *Engine) Close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}

// StopDrain bounds how long Close waits for the steps on a worker to end.
// A plugin call ends within its deadline (host calls included: host/wasm),
// so this is a backstop for what a deadline does not cover.
const StopDrain = 10 * time.Second

// Quiesce is the first move of a stop: the rules' states are released (a
// run cut short is no rule's error) and the runner lets every run go
// (seq.Runner.Stop: records kept, queued steps not run). A step still on
// a worker finishes, and its services — the bus, the store, the outbox —
// are still up while it does; one that fails meanwhile is cut, not
// counted (issue 37). Close does the rest; calling both is safe.
func (e *Engine) Quiesce() {
	e.tasks.Release()
	e.runner.Stop()
}

// Replay ends, in the execution log, the runs a stopped process left
// running that nothing will resume (markInterrupted), then re-arms every
// waiting step (seq.Runner.Replay). It returns the records it found, read
// before any replayed step could remove its own (ingest.Held).
func (e *Engine) Replay() []seq.Pending { return e.ReplayLoaded(e.pending.Load()) }

// ReplayLoaded is Replay of the records the caller read with the engine's
// pending store (seq.PendingStore.Load) and the error of that read: a
// daemon reads them while the rest of it starts.
func (e *Engine) ReplayLoaded(recs []seq.Pending, err error) []seq.Pending {
	// One read of the waiting steps serves all three: which runs were
	// left running, the replay, and which journaled events their rules
	// already hold.
	e.markInterrupted(recs, err)
	if err != nil {
		e.log.Error("cannot load pending records; none replayed", "error", err)
	} else {
		e.replayed = e.runner.ReplayLoaded(e.rules.Current().Sequences(), e.cfg.ReplayWindow, recs)
	}
	e.log.Info("replayed waiting steps", "resumed", e.replayed, "dropped", e.runner.Counts().Dropped)
	return recs
}

// ReplayHash re-arms the waiting steps of one pending hash (a fleet
// shard this process took) and returns how many it resumed.
func (e *Engine) ReplayHash(hash string) int {
	return e.runner.ReplayHash(e.rules.Current().Sequences(), e.cfg.ReplayWindow, hash)
}

// Release lets the pool's workers run and the schedules fire: every
// service a step may call is up.
func (e *Engine) Release() {
	e.pool.Release()
	e.sch.Start()
	if k := e.windowKeeper(); k != nil {
		k.Start()
	}
}

// Catalog is the loaded plugins.
func (e *Engine) Catalog() *catalog.Catalog { return e.cat }

// RuleSet is the rule set as loaded now, for ingest and fleet routing
// (ingest.Rules, placement.Rules).
func (e *Engine) RuleSet() *ruleset.Loader { return e.rules }

// Runner is the sequencer.
func (e *Engine) Runner() *seq.Runner { return e.runner }

// Pool is the worker pool.
func (e *Engine) Pool() *pool.Pool { return e.pool }

// Tasks is the rules' lifecycle states.
func (e *Engine) Tasks() *task.Tasks { return e.tasks }

// Alive reports whether the engine's parts answer: the runner, the
// worker pool and the rules' states each take and give back their lock
// before ctx ends. A watchdog (systemd's) asks it: a process whose engine
// is stuck — a deadlock, a lock held across a call that never returns —
// should be restarted; one whose store is away should not (Ready says
// that). The probe runs on a goroutine of its own, which ends once the
// locks are had; while one is out, the next call says so instead of
// starting another, so a stuck engine costs one goroutine, not one a
// probe.
func (e *Engine) Alive(ctx context.Context) error {
	if !e.probing.CompareAndSwap(false, true) {
		return errors.New("engine: the last liveness probe has not come back")
	}
	done := make(chan struct{})
	go func() {
		defer e.probing.Store(false)
		e.runner.Counts()
		e.pool.Stats()
		e.tasks.Rules()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.New("engine: its runner, pool or rule states did not answer in time")
	}
}

// Changes is a number that grows whenever what the engine reports does:
// a run's log entries written, a rule's counters, a state, a reload. A
// watcher (observe.Changes, the console's live view) compares it, not
// the reports, to know when to look again.
func (e *Engine) Changes() uint64 {
	n := e.changed.Load() + e.runner.Counts().Changes
	if e.xlog != nil {
		n += e.xlog.Stats().Written
	}
	return n
}

// Now is the engine's clock (api.Engine).
func (e *Engine) Now() time.Time { return e.clock.Now() }

// Idle reports whether no step is queued or running on the workers and
// no parking run's record is being written (seq.Counts.Aside): what has
// been set off has run or is waiting on its timer (sdk/ruletest settles
// on it).
func (e *Engine) Idle() bool {
	ps := e.pool.Stats()
	return ps.Queued == 0 && ps.Busy == 0 && e.runner.Counts().Aside == 0
}
