package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/audit"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/config"
	"github.com/ruled-dev/ruled/host/engine"
	"github.com/ruled-dev/ruled/host/history"
	"github.com/ruled-dev/ruled/host/hold"
	"github.com/ruled-dev/ruled/host/ingest"
	"github.com/ruled-dev/ruled/host/journal"
	"github.com/ruled-dev/ruled/host/metrics"
	"github.com/ruled-dev/ruled/host/mqtt"
	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/host/outbound"
	"github.com/ruled-dev/ruled/host/placement"
	"github.com/ruled-dev/ruled/host/reload"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/state"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/traces"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/host/window"
	"github.com/ruled-dev/ruled/internal/backoff"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// Daemon is one running ruled: the engine (host/engine) and the adapters
// around it.
type Daemon struct {
	// served is the engine's answers, promoted: the Daemon is the API's
	// api.Engine and sdk/ruletest's handle. Set by Start.
	served

	cfg Config
	log hclog.Logger

	closers []func() error // in reverse start order

	hasher  seq.Hasher
	pending *seq.PendingStore
	// preload is the waiting steps' records, read on a goroutine of its
	// own while the execution log opens and the plugins load (issue 38:
	// each took about a second at 100,000 parked runs); Start takes them
	// for the replay. The goroutine ends after its one read.
	preload chan loadedRecords
	// trimmed is closed once the memory a start used and let go of is
	// back with the OS (trimStart).
	trimmed   chan struct{}
	journal   *journal.Journal                 // accepted events until their durable rules take them; nil in a fleet
	states    *state.Table                     // entities' states; nil when kept off (state.max-entities -1)
	holds     *hold.Holds                      // holds of change triggers with for:; nil without states or in a fleet
	windows   *window.Table                    // the rule files' windows; nil in a fleet
	shared    *window.Shared                   // a fleet's windows; nil on one daemon
	holdWarns lograte.Limiter                  // holds dropped as they come due, once a second a rule
	warns     lograte.Limiter                  // what a Redis writer can repeat at will: refused deployments and control commands
	place     *placement.Placement             // fleet mode's placement and membership; nil outside a fleet
	execLog   *runlog.Log                      // the execution log; nil when off
	spans     *traces.Exporter                 // runs sent as traces; nil when off
	history   *history.History                 // the console's charts' points
	control   reload.ControlPublisher          // the control channel (Redis mode), for announcements
	procID    string                           // this process, in its announcements
	deployed  *reload.Deployed                 // Config.Deployed's copy of the deployment; nil when not
	refresher atomic.Pointer[reload.Refresher] // reads the rules again; nil before Start has it
	audit     *audit.Trail                     // the audit trail, in the store
	bolt      *store.Bolt                      // the embedded store, or
	redis     *store.Redis                     // Redis
	clock     Clock
	rt        *wasm.Runtime
	eng       *engine.Engine
	decoder   *bus.Decoder
	busIn     bus.Counters // what the Redis bus delivered or refused
	bus       eventBus
	local     bool              // the bus is in-process: Publish dispatches too
	busSub    *bus.Subscription // the Redis bus subscription (outside a fleet), for its Live
	in        *ingest.Ingest    // the way in: ingest, journal admissions, dispatch
	mqtt      *mqtt.Client      // Config.MQTT's broker: source and sink; nil without one
	out       *outbound.Client  // plugins' outbound HTTP
	started   time.Time

	api     *api.Server
	events  chan struct{} // closed when the events reader is done
	stopped atomic.Bool
	quit    chan struct{}    // closed by Stop: ends the API's streams
	taps    observe.Taps     // recorders (Tap)
	metrics *metrics.Metrics // what /metrics serves
	ready   atomic.Bool      // Start is done: replay, bus and API are up
}

// served is the engine's part of api.Engine (and what sdk/ruletest calls), promoted to the Daemon.
type served interface {
	Plugins() []status.PluginStatus
	Rules() []status.RuleStatus
	Rule(id string) (status.RuleDetail, error)
	Pending() ([]status.PendingRecord, error)
	Command(rule string, c status.Command) (status.RuleStatus, error)
	Runs(f runlog.Filter) ([]runlog.Run, error)
	RunTree(id string) ([]runlog.Row, error)
	WhyNot(rule string) ([]seq.WhyNot, error)
	ControlRun(id, command, by string) (status.RunControl, error)
	ExecLogStats() runlog.Stats
	Now() time.Time
	Idle() bool
	Current(rule string) *seq.Sequence
}

// Clock is the time the daemon's timers run on (config.Clock, engine.Clock's method set): the
// wall clock unless Config.Clock says otherwise.
type Clock = config.Clock

// eventBus is what the daemon needs of a bus: the in-process one or Redis.
type eventBus interface {
	Publish(ctx context.Context, e *bus.Event) error
}

// New checks cfg and returns a Daemon ready to Start.
func New(cfg Config, log hclog.Logger) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	d := &Daemon{cfg: cfg, log: log, quit: make(chan struct{})}
	d.metrics = metrics.New(d, !d.cfg.NoLatencyMetrics)
	return d, nil
}

// Start brings the daemon up, in order: store, plugins, rules, the rules'
// states, replay of waiting steps, bus subscription, workers, ingest. A
// replayed step must not race a live re-fire of its rule, so the bus comes
// after Replay; and Replay must know which rules are killed (their records
// are dropped) or paused (their steps held), so the states come before it.
// But no step runs before the bus is open — a replayed step's publish would
// meet no bus, fail, and count against its rule — so the workers wait
// (pool.Config.Held) until every service a step may call is up. Bad plugins
// and rules are reported, not fatal; a store or socket that cannot open is
// (a Redis that does not answer yet is retried for Config.StoreWait).
func (d *Daemon) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			d.closeAll()
		}
	}()
	d.started = time.Now()
	d.procID = bus.NewID()
	if d.cfg.Watch && !d.cfg.Deployed {
		// Watched directories must exist: said here, by name, rather than
		// after a start that loads nothing and a watch that fails.
		for _, dir := range []struct{ what, path string }{{"rules", d.cfg.RulesDir}, {"plugins", d.cfg.PluginsDir}} {
			if dir.path == "" {
				continue
			}
			if st, err := os.Stat(dir.path); err != nil {
				return fmt.Errorf("daemon: the %s directory: %w", dir.what, err)
			} else if !st.IsDir() {
				return fmt.Errorf("daemon: the %s directory %s is not a directory", dir.what, dir.path)
			}
		}
	}
	if err := os.MkdirAll(d.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("daemon: data dir: %w", err)
	}
	if err := d.openStore(ctx); err != nil {
		return err
	}
	d.openAudit()
	d.decoder = &bus.Decoder{MaxSize: d.cfg.MaxEventSize}
	if d.cfg.Clock != nil {
		d.clock = d.cfg.Clock
		d.decoder.Now = d.clock.Now
	} else {
		wall := sched.New()
		d.clock = wall
		d.closers = append(d.closers, func() error { wall.Stop(); return nil })
	}
	d.out = outbound.New(outbound.Config{Policy: d.cfg.HTTPPolicy, Log: d.log.Named("http")})
	d.closers = append(d.closers, d.out.Close)
	d.rt, err = wasm.NewRuntime(ctx, wasm.Config{
		CacheDir: wasm.DefaultCacheDir(d.cfg.DataDir), CacheMaxBytes: d.cfg.CompileCacheBytes(), Interpreter: d.cfg.Interpreter,
		Logger:   d.log.Named("plugin"),
		Services: wasm.Services{Publisher: publisher{d}, KV: d.kvService(), Firer: firer{d}, HTTP: cmp.Or[wasm.HTTP](d.cfg.HTTP, d.out)},
		// Plugins read the daemon's clock: on a virtual one (sdk/ruletest),
		// an action's now() is the test's time, not the machine's.
		Clock: d.clock.Now,
	})
	if err != nil {
		return err
	}
	d.closers = append(d.closers, func() error { return d.rt.Close(context.Background()) })
	if d.cfg.Deployed {
		d.deployed = reload.NewDeployed(d.redis.Deploy(), d.cfg.RulesDir, d.cfg.PluginsDir, d.cfg.Signatures.Gate, d.log)
		if err := d.deployed.Start(ctx); err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
	}
	if d.eng, err = engine.New(ctx, d.engineConfig()); err != nil {
		return err
	}
	d.served = d.eng
	d.closers = append(d.closers, func() error { d.eng.Close(); return nil })
	d.warnUnknownPlugins()
	d.openHolds()
	d.in = ingest.New(ingest.Config{Rules: d.eng.RuleSet(), Runner: d.eng.Runner(), Room: d.eng.Pool(), Journal: d.journal, States: d.statesFor(), Windows: d.windowsFor(), FleetWindows: d.fleetWindowsFor(), Holds: d.holdsFor(),
		Fleet: d.cfg.Shards > 0, Decoder: d.decoder, Taps: &d.taps, Now: d.clock.Now, Stop: d.quit, Log: d.log})
	if d.cfg.Shards == 0 {
		// Replay before the bus (a replayed step must not race a live
		// re-fire of its rule), and re-admit what the journal holds for
		// rules that hold no record of it.
		l := <-d.preload
		d.shareRunIDs(l.recs)
		// Holds before the journal: an entry re-admitted to a hold's rule
		// finds the holds of the last run in place.
		held := ingest.Held(d.eng.ReplayLoaded(l.recs, l.err))
		d.restoreHolds(held)
		d.in.Readmit(held)
		d.trimStart(len(l.recs))
	} // a fleet replays each shard's records when it takes the shard
	d.eng.Collect()

	if err := d.openBus(ctx); err != nil {
		return err
	}
	if d.place != nil { // a fleet member accepts into the ingest stream, and runs what it holds
		in, err := d.place.Join(ctx, placement.JoinConfig{Rules: d.eng.RuleSet(), Runner: d.eng.Runner(),
			Replay: d.eng.ReplayHash, Redis: d.redis, Workers: d.cfg.Workers, Cycled: d.metrics.Cycle, Stop: d.quit,
			Now: d.clock.Now, Window: d.cfg.ReplayWindow, Windows: d.shared})
		if err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
		d.closers = append(d.closers, d.place.Close) // before the engine's
		d.in.Connect(d.bus, nil, in)
	}
	if err := d.startMQTT(); err != nil {
		return err
	}
	// Store, plugins, bus (and in a fleet, the ingest stream) and the
	// MQTT outbox are up: the steps Replay queued, and what Readmit
	// fired, may run now.
	d.eng.Release()
	d.startHistory()
	if d.api, err = d.serveAPI(); err != nil {
		return err
	}
	d.closers = append(d.closers, d.api.Close)
	if d.cfg.Watch && !d.cfg.Deployed { // deployed: the directories are ours, written on refresh
		if err := d.watch(); err != nil {
			return fmt.Errorf("daemon: watching %s and %s: %w", d.cfg.RulesDir, d.cfg.PluginsDir, err)
		}
	}
	d.startRefresher()
	if d.cfg.Events != nil {
		d.events = make(chan struct{})
		go func() { defer close(d.events); d.in.ReadEvents(ctx, d.cfg.Events) }()
	}
	d.ready.Store(true)
	d.log.Info("ruled running", "rules", len(d.eng.RuleSet().Current().Sequences()), "plugins", len(d.eng.Catalog().Plugins()),
		"store", d.storeName(), "socket", d.api.Socket(), "http", cmp.Or(d.api.Addr(), d.cfg.HTTPAddr)) // the port bound, for :0
	return nil
}

// Stop brings the daemon down: ingest refuses clients and inputs (a
// plugin's publish is still taken), the engine lets every run go
// (Engine.Quiesce: records kept, nothing counted against a rule), then
// the rest in reverse of Start — bus, sequencer, the pool (queued work
// dropped; running steps finish within engine.StopDrain), the plugins
// and the store. It is safe to call more than once.
func (d *Daemon) Stop() error {
	if d.stopped.Swap(true) {
		return nil
	}
	d.log.Info("stopping")
	d.ready.Store(false)
	close(d.quit)
	if d.eng != nil {
		d.eng.Quiesce()
	}
	return d.closeAll()
}

func (d *Daemon) closeAll() error {
	var errs []error
	for i := len(d.closers) - 1; i >= 0; i-- {
		if err := d.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	d.closers = nil
	return errors.Join(errs...)
}

// EventsDone is closed when the events reader (Config.Events) reached its
// end; nil without one.
func (d *Daemon) EventsDone() <-chan struct{} { return d.events }

// startMQTT connects the broker (Config.MQTT) once ingest can take what it
// brings and before any step runs, so every publish meets the outbox.
func (d *Daemon) startMQTT() error {
	if d.cfg.MQTT == nil {
		return nil
	}
	cfg, err := d.cfg.MQTT.Client(d.decoder, d.hasher, d.log.Named("mqtt"))
	if err == nil {
		d.mqtt, err = mqtt.Start(cfg, d.in)
	}
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.closers = append(d.closers, d.mqtt.Close)
	d.in.SendOut(d.mqtt) // Offer takes nothing without routes
	return nil
}

// engineConfig is the engine's part of the config, over the stores and
// the runtime Start opened.
func (d *Daemon) engineConfig() engine.Config {
	ec := engine.Config{RulesDir: d.cfg.RulesDir, PluginsDir: d.cfg.PluginsDir,
		ModuleDir: filepath.Join(d.cfg.DataDir, "modules", "sha256"), Runtime: d.rt,
		PluginOptions: d.cfg.PluginOptions, ReloadBackoff: d.cfg.ReloadBackoff,
		Hasher: d.hasher, Pending: d.pending, Log: d.execLog, Clock: d.clock,
		Workers: d.cfg.Workers, QueueCapacity: d.cfg.QueueCapacity, ReplayWindow: d.cfg.ReplayWindow, MaxStepOutput: d.cfg.MaxStepOutput, LogValue: d.cfg.ExecLog.Value,
		ClockAfterNewest: d.cfg.ReplayClock == "after-last-write",
		Metrics:          d.metrics, ObserveAction: d.cfg.ObserveAction, Announce: d.rulesChanged, Retry: d.retry, Logger: d.log,
		Trust: d.cfg.Signatures.Gate}
	if d.spans != nil { // a nil *traces.Exporter in the interface would not be nil
		ec.Spans = d.spans
	}
	if d.states != nil {
		ec.States = runStates{d.states}
	}
	if d.windows != nil {
		ec.Windows = d.windows
	}
	if d.shared != nil {
		ec.SharedWindows = d.shared
	}
	if l, ok := d.cfg.Location.Sun(); ok {
		ec.Sun = &l
	}
	if d.redis != nil {
		// In a fleet a waiting step may have been scheduled on another
		// process: a deployed module is in Redis.
		ec.Blobs = d.redis.Deploy()
	}
	if d.place != nil {
		ec.Placement, ec.PendingHashes = d.place.Seq(), d.place.PendingHashes()
	}
	return ec
}

func (d *Daemon) openStore(ctx context.Context) error {
	if d.cfg.RedisURL != "" {
		store.LogRedisTo(d.log.Named("redis"))
		var r *store.Redis
		err := d.retry(ctx, "opening the store", func() (err error) {
			r, err = store.OpenRedis(d.cfg.RedisURL, store.RedisOptions{})
			if store.Permanent(err) {
				return backoff.Permanent(err)
			}
			return err
		})
		if err != nil {
			return err
		}
		d.hasher = r
		d.closers = append(d.closers, r.Close)
		d.redis = r
	} else {
		b, err := store.OpenBolt(filepath.Join(d.cfg.DataDir, "ruled.db"), store.BoltOptions{})
		if err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
		d.hasher = b
		d.closers = append(d.closers, b.Close)
		d.bolt = b
	}
	if err := d.openStates(); err != nil {
		return err
	}
	if err := d.openWindows(); err != nil {
		return err
	}
	// A fleet files records per shard (nil outside one: the standard
	// hash), and its ingest stream is its journal: accepted means the
	// XADD was acknowledged.
	d.place = placement.New(d.cfg.Shards, d.procID, d.log)
	d.pending = seq.NewPendingStore(d.hasher, d.place.Seq(), d.log.Named("pending"))
	if d.place != nil {
		return d.openExecLog()
	}
	// Closed after the runner stops (closers run in reverse): what runs
	// acknowledged until then is deleted before the store closes.
	d.journal = journal.New(d.hasher, d.log.Named("journal"))
	d.closers = append(d.closers, func() error { d.journal.Close(); return nil })
	// Nothing writes a record before the replay: the runner has not
	// started, the bus is not open.
	d.preload = make(chan loadedRecords, 1)
	go func() {
		recs, err := d.pending.Load()
		d.preload <- loadedRecords{recs, err}
	}()
	return d.openExecLog()
}

// TrimAfter is how many records a start replays before it hands the
// memory it used to read them back to the OS once ready (trimStart).
const TrimAfter = 10_000

// trimStart hands the memory a start used and let go of back to the OS,
// on a goroutine of its own that ends when that is done (trimmed), when
// the start replayed at least TrimAfter records. A start of 100,000
// parked runs reads and decodes 130 MB it keeps none of; Go returns such
// memory slowly, and the daemon's resident set stayed at 175 MB of
// anonymous memory for 91 MB in use. Returned, it is 110 MB (issue 38).
// The store's file pages the start read go too (Bolt.DropPages). After
// ready, so that it costs the start nothing.
func (d *Daemon) trimStart(records int) {
	d.trimmed = make(chan struct{})
	if records < TrimAfter {
		close(d.trimmed)
		return
	}
	go func() {
		defer close(d.trimmed)
		debug.FreeOSMemory()
		if d.bolt != nil {
			if err := d.bolt.DropPages(); err != nil {
				d.log.Debug("cannot hand the store's read pages back", "error", err)
			}
		}
	}()
}

// idSharer is an execution log that hands out its own copies of run ids
// (store.SegmentLog).
type idSharer interface{ ShareIDs(ids []string) }

// shareRunIDs gives recs the execution log's copies of their run ids
// before the runner keeps them: the runs and the log's index then hold
// one string between them, not two (issue 38).
func (d *Daemon) shareRunIDs(recs []seq.Pending) {
	if d.execLog == nil || len(recs) == 0 {
		return
	}
	s, ok := d.execLog.Reader().(idSharer)
	if !ok {
		return
	}
	ids := make([]string, len(recs))
	for i := range recs {
		ids[i] = recs[i].ID
	}
	s.ShareIDs(ids)
	for i := range recs {
		recs[i].ID = ids[i]
	}
}

// loadedRecords is a read of the waiting steps' records.
type loadedRecords struct {
	recs []seq.Pending
	err  error
}

// openExecLog opens the execution log beside the store: its own segment
// files (log/; a log.db left by an older version is converted), or keys on
// the same Redis. It closes after everything that writes to it has
// stopped, just before the store.
func (d *Daemon) openExecLog() error {
	if err := d.openTraces(); err != nil {
		return err
	}
	if d.cfg.NoExecLog {
		return nil
	}
	var st runlog.Store
	if d.redis != nil {
		st = d.redis.Log()
	} else {
		l, err := store.OpenSegmentLog(filepath.Join(d.cfg.DataDir, LogDir), false)
		if err != nil {
			return fmt.Errorf("daemon: execution log: %w", err)
		}
		d.closers = append(d.closers, l.Close)
		old := filepath.Join(d.cfg.DataDir, OldLogFile)
		if _, err := os.Stat(old); err == nil {
			// Best effort, as the log is: a file that will not convert
			// stays for the next start to try, and the log goes on.
			if n, err := store.ConvertBoltLog(old, l); err != nil {
				d.log.Warn("execution log: could not convert the old log; kept for the next start", "file", old, "converted", n, "error", err)
			} else {
				d.log.Info("execution log converted to segments", "from", old, "runs", n)
			}
		}
		st = l
	}
	d.execLog = runlog.New(st, d.cfg.ExecLog, d.log.Named("execlog"))
	d.closers = append(d.closers, func() error { d.execLog.Close(); return nil })
	return nil
}

// LogDir is the execution log's directory in the data directory: its
// segment files (store.SegmentLog), when the store is bbolt.
const LogDir = "log"

// OldLogFile is where the execution log was before LogDir (bbolt); a start
// converts it into segments and removes it.
const OldLogFile = "log.db"

func (d *Daemon) storeName() string {
	if d.cfg.RedisURL != "" {
		return "redis"
	}
	return "bbolt"
}

// Publish puts an event on the daemon's bus, without journaling it, and
// on the in-process bus dispatches it (ingest is not its subscriber).
func (d *Daemon) Publish(ctx context.Context, e *bus.Event) error {
	if err := d.bus.Publish(ctx, e); err != nil || !d.local {
		return err
	}
	d.in.Dispatch(e)
	return nil
}

// Decoder is the daemon's event decoder (its size limit and clock).
func (d *Daemon) Decoder() *bus.Decoder { return d.decoder }

// Watch calls h with every event on the in-process bus, plugins' included,
// until cancel: for tests and tools that want to see what rules publish. In
// Redis mode, subscribe to the Redis bus instead (bus.RedisChannel); Watch
// then returns an error.
func (d *Daemon) Watch(h func(*bus.Event)) (cancel func(), err error) {
	l, ok := d.bus.(*bus.Local)
	if !ok {
		return nil, errors.New("daemon: Watch needs the in-process bus")
	}
	return l.Subscribe(h), nil
}

// warnUnknownPlugins says, once at start, which plugins the config grants
// or limits that no file of the plugins directory is: a misspelt name
// (plugin: {publsh: …}) whose grant would otherwise go nowhere, silently.
// Deployed, the plugins are the deployment's and may come later.
func (d *Daemon) warnUnknownPlugins() {
	if d.cfg.Deployed || d.cfg.RedisURL != "" && d.cfg.PluginsDir == "" {
		return
	}
	have := map[string]bool{}
	var names []string
	for _, p := range d.eng.Plugins() {
		have[p.Name] = true
		names = append(names, p.Name)
	}
	for name := range d.cfg.Plugins {
		if !have[name] {
			args := []any{"plugin", name, "dir", d.cfg.PluginsDir, "plugins", strings.Join(names, ", ")}
			if m := rules.Suggest(name, names); m != "" {
				args = append(args, "did-you-mean", m)
			}
			d.log.Warn("a plugin is configured (granted or limited) that the plugins directory does not have: a misspelt name?", args...)
		}
	}
}
