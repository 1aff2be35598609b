package placement

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ruled-dev/ruled/internal/lograte"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/fleet"
	"github.com/ruled-dev/ruled/host/pipeline"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/ruleset"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/state"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/window"
)

// LeaseTTL is how long a dead member's shards wait to be taken over.
const LeaseTTL = 5 * time.Second

// Placement is a fleet's placement of runs by shard. A nil *Placement is
// the single process's: it owns every run.
type Placement struct {
	shards int
	holder string // this process, as the fleet knows it
	member atomic.Pointer[fleet.Member]
	stream *store.RedisStream
	log    hclog.Logger
	stop   func()
	warns  lograte.Limiter // a fleet's change triggers, once a second a rule
}

// New returns the placement of a fleet of shards shards in which this
// process is holder; it serves Owns and PendingHash at once, and joins
// the fleet on Join. shards ≤ 0: nil, the single process's.
func New(shards int, holder string, log hclog.Logger) *Placement {
	if shards <= 0 {
		return nil
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Placement{shards: shards, holder: holder, log: log}
}

// shardOf is the shard of a rule's run for key.
func (p *Placement) shardOf(rule, key string) int {
	return fleet.ShardOf(p.shards, rule, rule+"\x00"+key)
}

// Owns reports whether this process decides a rule's runs for key
// (seq.Placement.Owns, in RunnerConfig.Placement): a trigger whose key's
// shard moved away while it waited for a worker is left to the shard's
// new holder. Before Join nothing runs, so nothing asks; it answers true.
func (p *Placement) Owns(rule, key string) bool {
	if p == nil {
		return true
	}
	m := p.member.Load()
	return m == nil || m.Holds(p.shardOf(rule, key))
}

// PendingHash is the hash a rule's pending record for key goes in (its
// shard's).
func (p *Placement) PendingHash(rule, key string) string {
	return fleet.PendingHash(p.shardOf(rule, key))
}

// Seq is the placement as the sequencer takes it (seq.Placement): the
// records' hash and Owns. The single process's is the zero value.
func (p *Placement) Seq() seq.Placement {
	if p == nil {
		return seq.Placement{}
	}
	return seq.Placement{HashOf: p.PendingHash, Owns: p.Owns}
}

// PendingHashes lists every shard's pending hash, held here or not; nil
// for the single process (the standard hash).
func (p *Placement) PendingHashes() []string {
	if p == nil {
		return nil
	}
	var out []string
	for s := range p.shards {
		out = append(out, fleet.PendingHash(s))
	}
	return out
}

// Rules is the rule set as loaded now (ruleset.Loader).
type Rules interface {
	Current() *ruleset.Set
}

// Runner is what a member's work needs of the sequencer (seq.Runner).
type Runner interface {
	Fire(seq.Trigger)
	ReleaseWhere(match func(rule, key string) bool, wait time.Duration) int
}

// JoinConfig is what joining the fleet needs of the engine and the store.
type JoinConfig struct {
	Rules  Rules
	Runner Runner
	// Replay re-arms the waiting steps of one pending hash, a shard taken.
	Replay func(hash string) int
	Redis  *store.Redis
	// Workers is how many items this member runs at once.
	Workers int
	// Cycled is told of each supply cycle (metrics); nil: no one.
	Cycled func(shard int, r pipeline.Result)
	// Stop, closed, ends an Execute waiting for its trigger's fate.
	Stop <-chan struct{}
	// Now is the engine's clock (a hold's due time); Window the replay
	// window, past which a hold that came due while every member was
	// away is dropped.
	Now    func() time.Time
	Window time.Duration
	// Windows are the fleet's windows: the poll closes their tumbling
	// keys' periods (store.RedisStream.CloseWindows); nil: none.
	Windows *window.Shared
}

// Join makes this process a member: the ingest stream is made sure of,
// the member starts (its goroutine, and the one appending the holds that
// come due; Close stops both). It returns the
// ingest stream, where events are now accepted (ingest.Ingest.Connect).
func (p *Placement) Join(ctx context.Context, cfg JoinConfig) (*store.RedisStream, error) {
	in := cfg.Redis.Stream()
	if err := in.Ensure(ctx); err != nil {
		return nil, err
	}
	p.stream = in
	w := &work{p: p, cfg: cfg}
	m, err := fleet.New(fleet.Config{Holder: p.holder, Shards: p.shards, Workers: cfg.Workers, LeaseTTL: LeaseTTL,
		Acquired: w.acquired, Released: w.released, Cycled: cfg.Cycled},
		cfg.Redis.Backlog(), in, cfg.Redis.Backlog(), w, w, p.log.Named("fleet"))
	if err != nil {
		return nil, err
	}
	p.member.Store(m)
	if w.cfg.Now == nil {
		w.cfg.Now = time.Now
	}
	mctx, cancel := context.WithCancel(context.Background())
	done, dueDone, stopDue := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { defer close(done); m.Run(mctx) }()
	go func() { defer close(dueDone); w.fireDue(stopDue) }()
	p.stop = func() { close(stopDue); <-dueDone; cancel(); <-done }
	return in, nil
}

// Close stops the member, if it joined.
func (p *Placement) Close() error {
	if p != nil && p.stop != nil {
		p.stop()
		p.stop = nil
	}
	return nil
}

// Status is the fleet's part of a daemon's status; nil outside a fleet or
// before Join.
func (p *Placement) Status() *status.FleetStatus {
	if p == nil || p.member.Load() == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, _ := p.stream.Len(ctx)
	holds, _ := p.stream.HoldsRunning(ctx)
	return &status.FleetStatus{Member: p.holder, Shards: p.shards, Held: p.member.Load().Held(), Stream: n, Holds: holds}
}

// work is a member's work on the engine: its Router and its Executor, and
// what it does when a shard comes or goes.
type work struct {
	p   *Placement
	cfg JoinConfig
	// dropped counts the holds fireDue dropped since it last said so
	// (its goroutine's alone).
	dropped int
}

// acquired replays the pending records of a shard this process took.
func (w *work) acquired(shard int) {
	n := w.cfg.Replay(fleet.PendingHash(shard))
	w.p.log.Info("fleet: serving a shard", "shard", shard, "replayed", n)
}

// released lets go of the runs of a shard this process no longer holds;
// their records stay for the next holder.
func (w *work) released(shard int) {
	// A step on a worker finishes first (and removes its record) before
	// the lease goes: the next holder must not replay it meanwhile.
	n := w.cfg.Runner.ReleaseWhere(func(rule, key string) bool { return w.p.shardOf(rule, key) == shard }, LeaseTTL/2)
	w.p.log.Info("fleet: let a shard go", "shard", shard, "runs", n)
}

// eventOfEntry rebuilds a stream entry's event.
func eventOfEntry(en store.StreamEntry) (*bus.Event, error) {
	e, err := bus.Rebuild(en.EventID, en.Topic, en.Time, en.Raw)
	if err != nil {
		return nil, err
	}
	e.Hops = min(max(en.Hops, 0), bus.MaxHops+1)
	return e, nil
}

// Route routes an accepted event to the rules it triggers now
// (fleet.Router).
func (w *work) Route(en store.StreamEntry) []fleet.Admission {
	e, err := eventOfEntry(en)
	if err != nil {
		w.p.log.Warn("fleet: an accepted event does not decode; it triggers nothing", "event", en.EventID, "error", err)
		return nil
	}
	if en.Hold != "" {
		return w.routeHold(en, e)
	}
	if en.Close != "" {
		return w.routeClose(en, e)
	}
	var out []fleet.Admission
	seen := map[*seq.Sequence]bool{}
	var ch state.Change // what e changed, as the stream ordered its entity's reports
	if en.Entity != "" {
		ch = state.ChangeOf(en.Entity, en.Prior, en.Refused, e.View)
	}
	for _, s := range w.cfg.Rules.Current().Index().Triggered(e.Topic) {
		if seen[s] {
			continue
		}
		seen[s] = true
		if len(s.Rule.Changes) > 0 && !w.fires(s.Rule, e, ch, en.Crossed) {
			continue
		}
		key := seq.KeyOf(s.Rule, e)
		out = append(out, fleet.Admission{Rule: s.Rule.ID, Band: s.Rule.Priority, Key: s.Rule.ID + "\x00" + key})
	}
	return out
}

// fires reports whether e triggers r, a rule with change triggers: by one
// of its topics, or by a change trigger that ch, e's change of its
// entity's state in the stream's order, fires (state.Fires). A threshold
// with hysteresis fires when the append script says it crossed (crossed
// names it); a hold (for:) fires nothing here: the append script began
// or kept it, and FireDue appends it when due (routeHold).
func (w *work) fires(r *rules.Rule, e *bus.Event, ch state.Change, crossed []string) bool {
	fires := r.OnTopic(e.Topic)
	for _, c := range r.Changes {
		switch {
		case !c.Topic.Match(e.Topic) || c.For > 0:
		case ch.Entity == "":
			if folded, ok := w.p.warns.Allow("unwatched " + r.ID); ok {
				w.p.log.Warn("fleet: an event came without its entity's state (accepted by a member whose rules do not watch it, or with no state kept); its change triggers fire nothing",
					"rule", r.ID, "event", e.ID, "folded", folded, "next-log-within", lograte.Every.String())
			}
		case c.Hysteresis > 0:
			fires = fires || slices.Contains(crossed, state.TriggerKey(r.ID, c))
		case !fires:
			fires = state.Fires(c, ch, e.View)
		}
	}
	return fires
}

// routeHold routes a hold that came due (store.StreamEntry.Hold) to its
// rule alone, with the event that began it. A rule removed, or edited so
// that the trigger says something else, runs nothing (logged once a
// second a rule), as on one daemon.
func (w *work) routeHold(en store.StreamEntry, e *bus.Event) []fleet.Admission {
	rule, rest, _ := strings.Cut(en.Hold, "\x00")
	trigger, _, _ := strings.Cut(rest, "\x00")
	s := w.cfg.Rules.Current().Rule(rule)
	ok := false
	if s != nil {
		for _, c := range s.Rule.Changes {
			if c.For > 0 && state.TriggerKey(rule, c) == rule+"\x00"+trigger && c.String() == en.Def {
				ok = true
				break
			}
		}
	}
	if !ok {
		if folded, ok := w.p.warns.Allow("hold " + rule); ok {
			w.p.log.Info("fleet: a hold came due for a trigger edited or removed since it began; dropped", "rule", rule,
				"was", en.Def, "folded", folded, "next-log-within", lograte.Every.String())
		}
		return nil
	}
	key := seq.KeyOf(s.Rule, e)
	return []fleet.Admission{{Rule: s.Rule.ID, Band: s.Rule.Priority, Key: s.Rule.ID + "\x00" + key}}
}

// routeClose routes a tumbling window's close (store.StreamEntry.Close)
// to the rules of its closes (on: {window, closed: true}) alone.
func (w *work) routeClose(en store.StreamEntry, e *bus.Event) []fleet.Admission {
	var out []fleet.Admission
	for _, s := range w.cfg.Rules.Current().Sequences() {
		for _, c := range s.Rule.Closes {
			if c.Window == en.Close {
				key := seq.KeyOf(s.Rule, e)
				out = append(out, fleet.Admission{Rule: s.Rule.ID, Band: s.Rule.Priority, Key: s.Rule.ID + "\x00" + key})
				break
			}
		}
	}
	return out
}

// DuePoll is how often a member appends the holds that came due
// (store.RedisStream.FireDue): a hold runs at most this late. A poll
// takes up to duePages pages of duePage holds (40,000 a second a
// member), each page one script.
const (
	DuePoll  = 250 * time.Millisecond
	duePage  = 100
	duePages = 100
)

// fireDue appends the holds that came due, every DuePoll until stop is
// closed (Join's goroutine; Close stops it). Any member may: the script
// takes each once. window is the replay window: a hold that came due
// longer ago (every member away) is dropped, logged.
func (w *work) fireDue(stop <-chan struct{}) {
	t := time.NewTicker(DuePoll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var fired, dropped []string
		var err error
		for page := 0; page < duePages; page++ { // a full page: more may be due
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			f, d, e := w.p.stream.FireDue(ctx, w.cfg.Now(), w.cfg.Window, duePage)
			cancel()
			fired, dropped, err = append(fired, f...), append(dropped, d...), e
			if e != nil || len(f)+len(d) < duePage {
				break
			}
		}
		if err == nil {
			err = w.closeWindows()
		}
		if err != nil {
			if folded, ok := w.p.warns.Allow("due"); ok {
				w.p.log.Warn("fleet: cannot append the holds that came due; tried again", "error", err,
					"folded", folded, "next-log-within", lograte.Every.String())
			}
			continue
		}
		if len(fired) > 0 {
			w.p.log.Debug("fleet: holds came due", "holds", len(fired))
		}
		if len(dropped) > 0 {
			w.dropped += len(dropped)
			if folded, ok := w.p.warns.Allow("dropped holds"); ok {
				w.p.log.Info("fleet: holds came due longer ago than the replay window; dropped", "holds", w.dropped,
					"window", w.cfg.Window.String(), "folded", folded, "next-log-within", lograte.Every.String())
				w.dropped = 0
			}
		}
	}
}

// closeWindows appends the closes of the tumbling windows' periods that
// ended (store.RedisStream.CloseWindows), a page at a time.
func (w *work) closeWindows() error {
	if w.cfg.Windows == nil {
		return nil
	}
	ps := w.cfg.Windows.Periods()
	periods := make([]store.WindowPeriod, len(ps))
	for i, p := range ps {
		periods[i] = store.WindowPeriod(p)
	}
	for page := 0; page < duePages; page++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		taken, closed, err := w.p.stream.CloseWindows(ctx, w.cfg.Now(), periods, duePage)
		cancel()
		if err != nil {
			return err
		}
		w.cfg.Windows.Closed(closed)
		if taken < duePage {
			return nil
		}
	}
	return nil
}

// Execute hands an item to the sequencer and waits until the rule has
// taken it (seq.Trigger.Done): its run recorded or ended, or turned away
// (fleet.Executor).
func (w *work) Execute(ctx context.Context, it fleet.Item) error {
	s := w.cfg.Rules.Current().Rule(it.Rule)
	if s == nil {
		w.p.log.Warn("fleet: an admitted rule is gone; its item is dropped", "rule", it.Rule, "item", it.ID)
		return nil
	}
	e, err := eventOfEntry(it.Event)
	if err != nil {
		return fmt.Errorf("item %s: %w", it.ID, err)
	}
	if s.Previous && len(it.Event.Prior) > 0 {
		e.Prior = it.Event.Prior // the state before it, in the stream's order
	}
	// The run's first pending record is written in the script that marks
	// the item done (under the shard's token), so no crash leaves a
	// recorded run whose item is admitted again.
	recorded := false
	put := func(hash, field string, value []byte) error {
		err := w.cfg.Redis.Backlog().RecordDone(context.Background(), it.Shard, it.ID, it.Token, hash, field, value)
		if errors.Is(err, store.ErrFenced) {
			return fmt.Errorf("%w: %v", seq.ErrNotHeld, err)
		}
		recorded = err == nil
		return err
	}
	// Exactly one of done and lost: lost when the shard was let go (ctx)
	// before the trigger's fate was settled here — its next holder admits
	// the item again — never after, so an event is not run twice.
	done, lost := make(chan struct{}), make(chan struct{})
	w.cfg.Runner.Fire(seq.Trigger{Seq: s, Event: e, Live: ctx, Put: put, Done: func() { close(done) }, Lost: func() { close(lost) }})
	select {
	case <-done:
		if recorded { // set before done was called, on the same goroutine
			return fleet.ErrFinished
		}
		return nil
	case <-lost:
		return fmt.Errorf("shard %d let go: %w", it.Shard, fleet.ErrRetry)
	case <-w.cfg.Stop:
		return fmt.Errorf("stopping: %w", fleet.ErrRetry)
	}
}
