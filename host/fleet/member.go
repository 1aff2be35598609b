package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ruled-dev/ruled/host/keyspace"
	"hash/fnv"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ruled-dev/ruled/host/candidates"
	"github.com/ruled-dev/ruled/host/pipeline"
	"github.com/ruled-dev/ruled/host/planner"
	"github.com/ruled-dev/ruled/host/store"
)

// Backlog is the shards' backlogs and leases (store.RedisBacklog).
type Backlog interface {
	pipeline.Source
	Add(ctx context.Context, shard int, it store.BacklogItem) (bool, error)
	Take(ctx context.Context, shard, band int, key, id string, token int64) ([]byte, error)
	Done(ctx context.Context, shard int, id string, token int64) error
	Requeue(ctx context.Context, shard int, token int64) (int, error)
	Acquire(ctx context.Context, shard int, holder string, ttl time.Duration) (int64, bool, error)
	Renew(ctx context.Context, shard int, holder string, token int64, ttl time.Duration) error
	Release(ctx context.Context, shard int, holder string, token int64) error
}

// Stream is the ingest stream's consumer side (store.RedisStream).
type Stream interface {
	Read(ctx context.Context, consumer string, n int, block time.Duration) ([]store.StreamEntry, error)
	Claim(ctx context.Context, consumer string, minIdle time.Duration, n int) ([]store.StreamEntry, error)
	Ack(ctx context.Context, ids ...string) error
}

// Members is the fleet's roll call: who is alive, so each takes a fair
// share of the shards.
type Members interface {
	// Beat records holder alive now and returns how many members beat
	// within ttl (holder included).
	Beat(ctx context.Context, holder string, ttl time.Duration) (int, error)
}

// Admission is one rule an event triggers, as the router sees it.
type Admission struct {
	Rule string
	Band int    // the rule's priority
	Key  string // the fairness key: the rule and its key's value
}

// Router says which rules an accepted event triggers (the trigger index).
type Router interface {
	Route(e store.StreamEntry) []Admission
}

// Item is one admission as a worker receives it.
type Item struct {
	Shard int
	Token int64  // the shard's fencing token the item was taken under
	ID    string // the stream entry's id and the rule: an idempotency key
	Rule  string
	Event store.StreamEntry
}

// Executor runs an item: the rule's condition and steps. It returns once
// the item's fate no longer depends on this process's memory (its run
// recorded or ended, or turned away); then the item is done. An error
// wrapping ErrRetry leaves the item in flight instead (the executor could
// not take it: it is stopping, or ctx — the shard's — is done because the
// shard was let go), and the shard's next holder queues it again; any
// other error is logged and the item is done.
type Executor interface {
	Execute(ctx context.Context, it Item) error
}

// ErrRetry is an Executor's answer for an item it could not take.
var ErrRetry = errors.New("fleet: item not taken; it stays in flight")

// ErrFinished is an Executor's answer for an item it marked done itself,
// with what it recorded (store.RedisBacklog.RecordDone): the worker does
// not mark it again.
var ErrFinished = errors.New("fleet: item marked done by its executor")

// Logger is where a member says what went wrong.
type Logger interface {
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
}

// Config configures a Member.
type Config struct {
	Holder   string        // this member's name in leases and the stream group; required
	Shards   int           // the fleet's shard count, the same on every member; required
	Workers  int           // goroutines running items; default 1
	LeaseTTL time.Duration // default 5s
	// Guard is how long before its lease could lapse in Redis a member
	// stops counting a shard as its own (Holds): a lease renewal sent at t
	// lets the shard be used until t + LeaseTTL - Guard, and a renewal due
	// past that is not sent — the shard is let go and acquired anew. So a
	// step that starts after its owner check and ends within Guard ends
	// before any other member can take the shard, whatever the network
	// and Redis did meanwhile (clocks running at the same rate assumed,
	// not synchronized). default: LeaseTTL/5.
	Guard time.Duration
	// Capacity is how many items a cycle plans per shard; default
	// 2×Workers.
	Capacity int
	// Acquired, when set, is called with a shard taken over, after its
	// unfinished items are queued again and before its pipeline starts:
	// the place to replay the shard's pending records. Released is called
	// with a shard let go (lost, stalled, or given back), after its
	// pipeline stopped: the place to let go of its runs.
	Acquired, Released func(shard int)
	// Cycled, when set, sees every cycle's Result of every shard held:
	// for metrics (it must not block).
	Cycled func(shard int, r pipeline.Result)
}

// Member is one process of the fleet.
type Member struct {
	cfg     Config
	backlog Backlog
	stream  Stream
	members Members
	router  Router
	exec    Executor
	log     Logger

	plan  *planner.Planner
	board *planner.MemBoard
	cache *candidates.Cache

	mu   sync.Mutex
	held map[int]*shard

	// abandon makes Run's end a crash (tests): leases and items in flight
	// are left as they are.
	abandon atomic.Bool
	// itemTime is how long an item keeps a worker, a moving average in
	// nanoseconds (pace).
	itemTime atomic.Int64
}

// minInterval is the shortest cycle interval pace derives: below it the
// scans cost Redis more than the supply they keep up.
const minInterval = 2 * time.Millisecond

// shard is one held shard.
type shard struct {
	ctx   context.Context // done when the shard is dropped
	token int64
	pipe  *pipeline.Pipeline
	stop  context.CancelFunc
	done  chan struct{}
	busy  sync.WaitGroup // items of the shard on workers
	// until is when this member stops counting the shard as its own
	// (unix ns): the last successful Acquire or Renew's send time plus
	// LeaseTTL less Guard.
	until atomic.Int64
}

// New checks the wiring and returns a Member ready to Run.
func New(cfg Config, backlog Backlog, stream Stream, members Members, router Router, exec Executor, log Logger) (*Member, error) {
	switch {
	case cfg.Holder == "":
		return nil, errors.New("fleet: no holder name")
	case cfg.Shards <= 0:
		return nil, fmt.Errorf("fleet: %d shards", cfg.Shards)
	case backlog == nil || stream == nil || members == nil || router == nil || exec == nil || log == nil:
		return nil, errors.New("fleet: a backlog, stream, roll call, router, executor and logger are all required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 5 * time.Second
	}
	if cfg.Capacity <= 0 {
		cfg.Capacity = 2 * cfg.Workers
	}
	if cfg.Guard <= 0 {
		cfg.Guard = cfg.LeaseTTL / 5
	}
	if cfg.Guard >= cfg.LeaseTTL*2/3 {
		return nil, fmt.Errorf("fleet: a guard of %v leaves no use of a %v lease renewed every third of it", cfg.Guard, cfg.LeaseTTL)
	}
	m := &Member{cfg: cfg, backlog: backlog, stream: stream, members: members, router: router, exec: exec, log: log,
		board: planner.NewBoard(), cache: candidates.New(), held: map[int]*shard{}}
	m.plan = planner.New(m.board, func() int { return cfg.Capacity })
	return m, nil
}

// ShardOf is the shard an admission's item goes to: its rule and fairness
// key hashed, so one key's runs are decided on one shard.
func ShardOf(shards int, rule, key string) int {
	h := fnv.New32a()
	h.Write([]byte(rule))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(shards))
}

// Held lists the shards this member holds now.
func (m *Member) Held() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.held))
}

// Holds reports whether this member holds shard s now and may act on it:
// its lease is surely still its own for at least Config.Guard (a renewal
// late past that makes it false, before the next lease round lets the
// shard go).
func (m *Member) Holds(s int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	sh := m.held[s]
	return sh != nil && time.Now().UnixNano() < sh.until.Load()
}

// Run runs the member until ctx is done: the lease keeper, the admission
// reader and the workers, and a pipeline per held shard. It returns when
// they have all ended.
func (m *Member) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2 + m.cfg.Workers)
	go func() { defer wg.Done(); m.keepLeases(ctx) }()
	go func() { defer wg.Done(); m.admit(ctx) }()
	for range m.cfg.Workers {
		go func() { defer wg.Done(); m.work(ctx) }()
	}
	wg.Wait()
	for _, s := range m.Held() {
		m.drop(s, !m.abandon.Load())
	}
}

// keepLeases beats, renews what shows progress, lets go of what stalled
// or is more than a fair share, and acquires up to a fair share, every
// third of a TTL.
func (m *Member) keepLeases(ctx context.Context) {
	tick := time.NewTicker(m.cfg.LeaseTTL / 3)
	defer tick.Stop()
	for {
		m.leaseRound(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (m *Member) leaseRound(ctx context.Context) {
	ttl := m.cfg.LeaseTTL
	alive, err := m.members.Beat(ctx, m.cfg.Holder, ttl)
	if err != nil {
		m.log.Warn("fleet: roll call failed", "error", err)
		alive = 1
	}
	target := (m.cfg.Shards + max(alive, 1) - 1) / max(alive, 1)
	held := m.Held()
	for _, s := range held {
		m.mu.Lock()
		sh := m.held[s]
		m.mu.Unlock()
		if w := sh.pipe.WorkingFor(); w > ttl/2 {
			m.log.Warn("fleet: shard stalled; letting its lease lapse", "shard", s, "working_for", w)
			m.drop(s, false)
			continue
		}
		sent := time.Now()
		if sent.UnixNano() >= sh.until.Load() {
			// Too late to be sure no one else holds it by the time a
			// renewal lands: let it go; the round below may take it anew.
			m.log.Warn("fleet: lost a shard: its renewal came too late", "shard", s, "late", time.Duration(sent.UnixNano()-sh.until.Load()))
			m.drop(s, false)
			continue
		}
		if err := m.backlog.Renew(ctx, s, m.cfg.Holder, sh.token, ttl); err != nil {
			m.log.Warn("fleet: lost a shard", "shard", s, "error", err)
			m.drop(s, false)
			continue
		}
		sh.until.Store(sent.Add(ttl - m.cfg.Guard).UnixNano())
	}
	held = m.Held()
	for len(held) > target { // more than a fair share: the newcomers take the rest
		s := held[len(held)-1]
		m.drop(s, true)
		held = held[:len(held)-1]
	}
	for s := 0; s < m.cfg.Shards && len(held) < target; s++ {
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		_, mine := m.held[s]
		m.mu.Unlock()
		if mine {
			continue
		}
		sent := time.Now()
		token, ok, err := m.backlog.Acquire(ctx, s, m.cfg.Holder, ttl)
		if err != nil || !ok {
			continue
		}
		if n, err := m.backlog.Requeue(ctx, s, token); err != nil {
			m.log.Warn("fleet: cannot queue a shard's unfinished items again; leaving it", "shard", s, "error", err)
			m.backlog.Release(ctx, s, m.cfg.Holder, token)
			continue
		} else if n > 0 {
			m.log.Info("fleet: took over a shard with unfinished items", "shard", s, "requeued", n)
		}
		m.start(ctx, s, token, sent.Add(ttl-m.cfg.Guard))
		held = append(held, s)
	}
}

// start runs shard s's pipeline under token until dropped; the shard is
// this member's to act on until until.
func (m *Member) start(ctx context.Context, s int, token int64, until time.Time) {
	p, err := pipeline.New(s, m.backlog, m.plan, m.cache)
	if err != nil {
		m.log.Warn("fleet: shard pipeline", "shard", s, "error", err)
		return
	}
	sctx, stop := context.WithCancel(ctx)
	sh := &shard{ctx: sctx, token: token, pipe: p, stop: stop, done: make(chan struct{})}
	sh.until.Store(until.UnixNano())
	m.mu.Lock()
	m.held[s] = sh
	m.mu.Unlock()
	// Held from here on (Holds says so: a replayed step that comes due at
	// once is this member's), and replayed before the pipeline supplies
	// anything.
	if m.cfg.Acquired != nil {
		m.cfg.Acquired(s)
	}
	go func() {
		defer close(sh.done)
		for sctx.Err() == nil {
			r := p.Cycle(sctx)
			if sctx.Err() != nil {
				return // cut short by the drop: not a cycle to report
			}
			if r.Err != nil {
				m.log.Warn("fleet: cycle failed", "shard", s, "error", r.Err)
			}
			m.pace(p, r)
			if m.cfg.Cycled != nil {
				m.cfg.Cycled(s, r)
			}
		}
	}()
}

// pace derives a shard's cycle interval from how fast the workers run
// what cycles supply. A cycle plans up to Capacity items of its shard;
// the workers run every held shard's supply in
// Capacity × held × itemTime / Workers, and the next cycle should come
// about when they are through: sooner leaves workers idle behind a
// sleeping pipeline (the fixed 50 ms default held 2 workers on 2 ms items
// to a few percent of their capacity), later only rescans what is still
// queued. The derived interval lies between minInterval and
// pipeline.DefaultInterval, and MinGap is kept at most half of it. A shard
// with nothing due goes back to the defaults: an idle fleet scans at the
// pipeline's default pace, not flat out. An outranked shard keeps the
// derived pace, so band-5 work resumes promptly after a band-0 burst.
func (m *Member) pace(p *pipeline.Pipeline, r pipeline.Result) {
	mean := time.Duration(m.itemTime.Load())
	if r.Band == pipeline.NoBand || mean == 0 {
		p.SetInterval(pipeline.DefaultInterval)
		p.SetMinGap(pipeline.DefaultMinGap)
		return
	}
	m.mu.Lock()
	held := max(len(m.held), 1)
	m.mu.Unlock()
	d := mean * time.Duration(m.cfg.Capacity*held) / time.Duration(m.cfg.Workers)
	d = min(max(d, minInterval), pipeline.DefaultInterval)
	p.SetInterval(d)
	p.SetMinGap(min(pipeline.DefaultMinGap, d/2))
}

// noteItemTime folds one item's run time into itemTime (weight 1/8).
func (m *Member) noteItemTime(d time.Duration) {
	for {
		old := m.itemTime.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/8
		}
		if m.itemTime.CompareAndSwap(old, next) {
			return
		}
	}
}

// drop stops serving shard s; release gives its lease back at once.
func (m *Member) drop(s int, release bool) {
	m.mu.Lock()
	sh := m.held[s]
	delete(m.held, s)
	m.mu.Unlock()
	if sh == nil {
		return
	}
	sh.stop()
	<-sh.done
	// Items on workers end first (the executor sees the shard's context
	// done), and are marked done under this lease: released before, the
	// next holder would requeue an item finishing here and run it again.
	// A worker stuck longer than a quarter of a TTL is not waited for: the
	// other shards' renewals wait behind this.
	idle := make(chan struct{})
	go func() { sh.busy.Wait(); close(idle) }() // ends with the shard's last item
	select {
	case <-idle:
	case <-time.After(m.cfg.LeaseTTL / 4):
		m.log.Warn("fleet: letting a shard go with an item still running", "shard", s)
	}
	m.cache.Drop(s)
	m.board.Forget(s)
	if m.cfg.Released != nil {
		m.cfg.Released(s)
	}
	if release {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m.backlog.Release(ctx, s, m.cfg.Holder, sh.token)
		cancel()
	}
}

// payload is an item's payload: the admission's rule and event.
type payload struct {
	Rule  string            `json:"rule"`
	Event store.StreamEntry `json:"event"`
}

// admit moves accepted events from the stream into the backlogs, and
// claims what a dead member read and never admitted.
func (m *Member) admit(ctx context.Context) {
	lastClaim := time.Now()
	for ctx.Err() == nil {
		es, err := m.stream.Read(ctx, m.cfg.Holder, 100, 100*time.Millisecond)
		if err != nil && ctx.Err() == nil {
			m.log.Warn("fleet: reading the ingest stream", "error", err)
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		if time.Since(lastClaim) > m.cfg.LeaseTTL/3 {
			lastClaim = time.Now()
			if claimed, err := m.stream.Claim(ctx, m.cfg.Holder, m.cfg.LeaseTTL, 100); err == nil && len(claimed) > 0 {
				m.log.Info("fleet: claimed accepted events another member read and did not acknowledge", "events", len(claimed))
				es = append(es, claimed...)
			}
		}
		var ids []string
		for _, e := range es {
			if m.admitOne(ctx, e) {
				ids = append(ids, e.ID)
			}
		}
		if err := m.stream.Ack(ctx, ids...); err != nil && ctx.Err() == nil {
			m.log.Warn("fleet: acknowledging admitted events (they will be admitted again, idempotently)", "error", err)
		}
	}
}

// admitOne adds an item per rule the entry triggers; false if one failed
// (the entry stays pending and is admitted again later).
func (m *Member) admitOne(ctx context.Context, e store.StreamEntry) bool {
	for _, a := range m.router.Route(e) {
		b, err := json.Marshal(payload{Rule: a.Rule, Event: e})
		if err != nil {
			continue
		}
		it := store.BacklogItem{ID: e.ID + "/" + a.Rule, Band: a.Band, Key: a.Key, Payload: b}
		if _, err := m.backlog.Add(ctx, ShardOf(m.cfg.Shards, a.Rule, a.Key), it); err != nil {
			m.log.Warn("fleet: admitting an event", "event", e.EventID, "rule", a.Rule, "error", err)
			return false
		}
	}
	return true
}

// work takes candidates and runs them.
func (m *Member) work(ctx context.Context) {
	idle := time.NewTicker(50 * time.Millisecond) // a candidate popped elsewhere may leave a signal unused
	defer idle.Stop()
	for {
		c, ok := m.cache.Pop()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-m.cache.Ready():
			case <-idle.C:
			}
			continue
		}
		m.mu.Lock()
		sh := m.held[c.Shard]
		if sh != nil {
			sh.busy.Add(1) // drop waits for it before the lease goes
		}
		m.mu.Unlock()
		if sh == nil {
			continue // dropped meanwhile
		}
		crashed, fenced := m.runItem(ctx, c, sh)
		sh.busy.Done()
		if fenced {
			m.drop(c.Shard, false) // after Done: drop waits for the shard's items
		}
		if crashed {
			return
		}
	}
}

// runItem takes, runs and finishes one candidate of a shard held under
// sh. It reports a crash (tests: Run ended with abandon set), after which
// the item stays in flight, and a take refused because the shard was
// taken over (fenced), which the caller answers by dropping the shard.
func (m *Member) runItem(ctx context.Context, c candidates.Candidate, sh *shard) (crashed, fenced bool) {
	raw, err := m.backlog.Take(ctx, c.Shard, c.Band, c.Key, c.ID, sh.token)
	switch {
	case errors.Is(err, store.ErrTaken):
		return false, false
	case errors.Is(err, store.ErrFenced):
		m.log.Warn("fleet: shard taken over", "shard", c.Shard)
		return false, true
	case err != nil:
		if ctx.Err() == nil {
			m.log.Warn("fleet: taking an item", "shard", c.Shard, "item", c.ID, "error", err)
		}
		return false, false
	}
	var p payload
	if err := json.Unmarshal(raw, &p); err != nil {
		m.log.Warn("fleet: an item that will not decode is dropped", "item", c.ID, "error", err)
	} else {
		began := time.Now()
		err := m.exec.Execute(sh.ctx, Item{Shard: c.Shard, Token: sh.token, ID: c.ID, Rule: p.Rule, Event: p.Event})
		m.noteItemTime(time.Since(began))
		switch {
		case errors.Is(err, ErrRetry):
			return false, false // in flight until the shard's next holder requeues it
		case errors.Is(err, ErrFinished):
			return false, false
		case err != nil:
			m.log.Warn("fleet: item failed", "item", c.ID, "error", err)
		}
	}
	if m.abandon.Load() && ctx.Err() != nil {
		return true, false // a crash: the item stays in flight
	}
	dctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := m.backlog.Done(dctx, c.Shard, c.ID, sh.token); err != nil {
		m.log.Warn("fleet: finishing an item (it will run again)", "item", c.ID, "error", err)
	}
	return false, false
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// PendingHash is the hash shard's pending records are filed under
// (seq.Placement.HashOf, by host/placement): its hash tag keeps them in
// the shard's slot.
func PendingHash(shard int) string { return keyspace.ShardPending(shard) }
