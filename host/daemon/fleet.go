package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/fleet"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/store"
)

// Fleet mode (Config.Shards): events are accepted into Redis's ingest
// stream rather than dispatched here; a fleet.Member admits them into the
// shards' backlogs, holds this process's share of the shards, and hands
// each item it takes to the sequencer (Execute). Pending records are filed
// per shard and replayed by whoever takes the shard; the Redis pub/sub bus
// still carries every event, for cancel-on (every process ends its own
// matching runs) and for watchers, but triggers nothing.

// fleetLeaseTTL is how long a dead member's shards wait to be taken over.
const fleetLeaseTTL = 5 * time.Second

// startFleet wires and starts this process's member. It runs after the
// rules are loaded; its stopper runs before the sequencer's.
func (d *Daemon) startFleet(ctx context.Context) error {
	in := d.redis.Stream()
	if err := in.Ensure(ctx); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.stream = in
	d.in.Connect(d.bus, nil, in)
	m, err := fleet.New(fleet.Config{Holder: d.procID, Shards: d.cfg.Shards, Workers: d.cfg.Workers, LeaseTTL: fleetLeaseTTL,
		Acquired: d.shardAcquired, Released: d.shardReleased, Cycled: d.met.Cycle},
		d.redis.Backlog(), in, d.redis.Backlog(), fleetRouter{d}, fleetExecutor{d}, d.log.Named("fleet"))
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.member = m
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(mctx) }()
	d.closers = append(d.closers, func() error { cancel(); <-done; return nil })
	return nil
}

// shardOf is the shard of a rule's run for key.
func (d *Daemon) shardOf(rule, key string) int {
	return fleet.ShardOf(d.cfg.Shards, rule, rule+"\x00"+key)
}

// shardAcquired replays the pending records of a shard this process took.
func (d *Daemon) shardAcquired(shard int) {
	n := d.eng.ReplayShard(fleet.PendingHash(shard))
	d.log.Info("fleet: serving a shard", "shard", shard, "replayed", n)
}

// shardReleased lets go of the runs of a shard this process no longer
// holds; their records stay for the next holder.
func (d *Daemon) shardReleased(shard int) {
	// A step on a worker finishes first (and removes its record) before
	// the lease goes: the next holder must not replay it meanwhile.
	n := d.eng.Runner().ReleaseWhere(func(rule, key string) bool { return d.shardOf(rule, key) == shard }, fleetLeaseTTL/2)
	d.log.Info("fleet: let a shard go", "shard", shard, "runs", n)
}

// fleetStatus is Status's fleet part; nil outside a fleet.
func (d *Daemon) fleetStatus() *api.FleetStatus {
	if d.member == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, _ := d.stream.Len(ctx)
	return &api.FleetStatus{Member: d.procID, Shards: d.cfg.Shards, Held: d.member.Held(), Stream: n}
}

// eventOfEntry rebuilds a stream entry's event.
func eventOfEntry(en store.StreamEntry) (*bus.Event, error) {
	return bus.Rebuild(en.EventID, en.Topic, en.Time, en.Raw)
}

// fleetRouter routes an accepted event to the rules it triggers now.
type fleetRouter struct{ d *Daemon }

func (r fleetRouter) Route(en store.StreamEntry) []fleet.Admission {
	e, err := eventOfEntry(en)
	if err != nil {
		r.d.log.Warn("fleet: an accepted event does not decode; it triggers nothing", "event", en.EventID, "error", err)
		return nil
	}
	var out []fleet.Admission
	seen := map[*seq.Sequence]bool{}
	for _, s := range r.d.eng.RuleSet().Current().Index().Triggered(e.Topic) {
		if seen[s] {
			continue
		}
		seen[s] = true
		key := seq.KeyOf(s.Rule, e)
		out = append(out, fleet.Admission{Rule: s.Rule.ID, Band: s.Rule.Priority, Key: s.Rule.ID + "\x00" + key})
	}
	return out
}

// fleetExecutor hands an item to the sequencer and waits until the rule
// has taken it (seq.Trigger.Done): its run recorded or ended, or turned away.
type fleetExecutor struct{ d *Daemon }

func (x fleetExecutor) Execute(ctx context.Context, it fleet.Item) error {
	s := x.d.eng.Current(it.Rule)
	if s == nil {
		x.d.log.Warn("fleet: an admitted rule is gone; its item is dropped", "rule", it.Rule, "item", it.ID)
		return nil
	}
	e, err := eventOfEntry(it.Event)
	if err != nil {
		return fmt.Errorf("item %s: %w", it.ID, err)
	}
	// The run's first pending record is written in the script that marks
	// the item done (under the shard's token), so no crash leaves a
	// recorded run whose item is admitted again.
	recorded := false
	put := func(hash, field string, value []byte) error {
		err := x.d.redis.Backlog().RecordDone(context.Background(), it.Shard, it.ID, it.Token, hash, field, value)
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
	x.d.eng.Runner().Fire(seq.Trigger{Seq: s, Event: e, Live: ctx, Put: put, Done: func() { close(done) }, Lost: func() { close(lost) }})
	select {
	case <-done:
		if recorded { // set before done was called, on the same goroutine
			return fleet.ErrFinished
		}
		return nil
	case <-lost:
		return fmt.Errorf("shard %d let go: %w", it.Shard, fleet.ErrRetry)
	case <-x.d.quit:
		return fmt.Errorf("stopping: %w", fleet.ErrRetry)
	}
}

// owns is fleet mode's placement, handed to the runner at its construction
// (seq.RunnerConfig.Owns): a trigger whose key's shard moved away while it
// waited for a worker is left to the shard's new holder. d.member is set
// by startFleet before the pool is released, so before any admission asks.
func (d *Daemon) owns(rule, key string) bool {
	return d.member == nil || d.member.Holds(d.shardOf(rule, key))
}
