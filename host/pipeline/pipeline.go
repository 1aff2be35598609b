package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ruled-dev/ruled/host/candidates"
	"github.com/ruled-dev/ruled/host/planner"
)

const (
	// DefaultInterval is the starting cycle period. A caller that derives
	// its own replaces it through SetInterval; this only keeps a
	// freshly-built pipeline from scanning flat out.
	DefaultInterval = 50 * time.Millisecond
	// DefaultMinGap is the starting quiet time between cycles.
	DefaultMinGap = 20 * time.Millisecond
)

// NoBand is the band reported when nothing is due — on this shard
// (Result.Band) or anywhere in the fleet (Result.GlobalBand).
const NoBand = planner.NoBand

// Source is the database side of a cycle — the only two queries a cycle
// makes, both read-only.
type Source interface {
	// ScanBand reports this shard's minimum due priority band and one
	// tally per fairness key at that band, or NoBand and no tallies when
	// nothing is due here. It returns O(distinct keys) rows, never
	// O(backlog); each tally's Count is expected to be capped at the
	// planning capacity.
	ScanBand(ctx context.Context, shard int) (band int, tallies []planner.Tally, err error)
	// FetchSteps returns up to perKey step ids for each of keys at the
	// given band, OLDEST FIRST within each key. The ordering is the
	// Source's responsibility — the cycle consumes the lists in order and
	// does not re-sort them. A key may come back short or missing.
	FetchSteps(ctx context.Context, shard, band int, keys []string, perKey int) (map[string][]string, error)
}

// Clock is the time a pipeline paces itself by: the machine's (New), or a
// test's.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done, and returns ctx's error then.
	Sleep(ctx context.Context, d time.Duration) error
}

// Result is one cycle's outcome, for logging and metrics. Nothing here is a
// control signal: a caller reads it and carries on.
type Result struct {
	// Per-phase durations. Total spans tallying through pushing and
	// EXCLUDES Slept, so it is the cycle's cost rather than its period;
	// the period is Slept+Total.
	Slept    time.Duration
	Tallying time.Duration
	Planning time.Duration
	Fetching time.Duration
	Pushing  time.Duration
	Total    time.Duration

	// Band is this shard's own minimum due band, GlobalBand the best band
	// any shard holds. Band > GlobalBand means this shard was outranked
	// and served nothing — the ordinary strict-priority case, not a fault.
	// Either is NoBand when nothing is due.
	Band       int
	GlobalBand int

	// Selected is how many candidates were pushed, Discarded how many
	// un-popped ones that replaced. Discarded rising toward Selected means
	// the cycle is turning faster than the workers drain.
	Selected  int
	Discarded int

	// Err is set when the cycle ended early, wrapped with the phase that
	// failed. The cycle has already dealt with it; this is for the log
	// line.
	Err error
}

// Pipeline runs one shard's supply cycle.
//
// Cycle is NOT safe for concurrent use — one Pipeline per shard, driven by
// one goroutine, is the whole intended shape, and the cadence timestamps are
// unsynchronized on that basis. SetInterval, SetMinGap and WorkingFor are
// the exceptions and may be called from anywhere.
type Pipeline struct {
	shard   int
	source  Source
	planner *planner.Planner
	cache   *candidates.Cache
	clock   Clock

	interval, minGap atomic.Int64 // nanoseconds
	working          atomic.Int64 // unix nanoseconds the current queries began; 0 outside them

	lastStart, lastEnd time.Time // the cadence, Cycle's own
}

// New returns a Pipeline for one shard, paced at DefaultInterval and
// DefaultMinGap until told otherwise. It is where a wiring mistake is
// caught, which is why Cycle itself has no error return to spend on one.
func New(shard int, source Source, planner *planner.Planner, cache *candidates.Cache) (*Pipeline, error) {
	switch {
	case shard < 0:
		return nil, fmt.Errorf("pipeline: shard %d: shards are numbered from 0", shard)
	case source == nil:
		return nil, errors.New("pipeline: no source")
	case planner == nil:
		return nil, errors.New("pipeline: no planner")
	case cache == nil:
		return nil, errors.New("pipeline: no candidate cache")
	}
	p := &Pipeline{shard: shard, source: source, planner: planner, cache: cache, clock: wallClock{}}
	p.interval.Store(int64(DefaultInterval))
	p.minGap.Store(int64(DefaultMinGap))
	return p, nil
}

// Shard is the shard this pipeline supplies.
func (p *Pipeline) Shard() int { return p.shard }

// Interval is the current cycle period.
func (p *Pipeline) Interval() time.Duration { return time.Duration(p.interval.Load()) }

// MinGap is the current minimum quiet time between cycles.
func (p *Pipeline) MinGap() time.Duration { return time.Duration(p.minGap.Load()) }

// SetInterval updates the cycle period — start of tallying to start of
// tallying — live. The next cycle picks it up: the value is read once per
// cycle rather than captured, so a caller that re-derives it takes effect
// without a restart. Zero paces nothing, which is what driving cycles back
// to back wants. A negative value counts as zero.
func (p *Pipeline) SetInterval(d time.Duration) { p.interval.Store(int64(max(d, 0))) }

// SetMinGap updates the minimum quiet time between the END of one cycle and
// the START of the next. It is the fuse for the case the interval alone
// cannot cover: a cycle that outruns its interval would otherwise leave no
// gap at all and scan back to back, which is the duty cycle the interval
// exists to prevent. Zero disables it.
func (p *Pipeline) SetMinGap(d time.Duration) { p.minGap.Store(int64(max(d, 0))) }

// WorkingFor is how long the current cycle has been inside its queries, or
// zero when none is — excluding the pace it sleeps first.
//
// A DURATION rather than a bool, and that is the load-bearing part. It
// exists for a caller publishing this shard's liveness on its own clock
// (fleet mode renews a shard's lease only while its pipeline shows
// progress), where a completed cycle is the ordinary evidence but one scan
// can outrun any sane publishing cadence on a deep backlog. A bool cannot
// serve that: a cycle whose scan fails at once is also briefly inside its
// queries, and a caller sampling often enough would keep catching that and
// keep a broken shard looking alive. Only a cycle that has run longer than
// the caller's own expectations is evidence, and a duration lets the caller
// decide what that means.
//
// Safe to call from any goroutine.
func (p *Pipeline) WorkingFor() time.Duration {
	began := p.working.Load()
	if began == 0 {
		return 0
	}
	return max(p.clock.Now().Sub(time.Unix(0, began)), 0)
}

// Cycle runs one full cycle — sleeping first for whatever the cadence still
// owes — and reports what happened. It never returns an error; see the
// package doc.
func (p *Pipeline) Cycle(ctx context.Context) (r Result) {
	r.Band, r.GlobalBand = NoBand, NoBand
	if wait := p.owed(p.clock.Now()); wait > 0 {
		before := p.clock.Now()
		err := p.clock.Sleep(ctx, wait)
		r.Slept = p.clock.Now().Sub(before)
		if err != nil {
			r.Err = fmt.Errorf("sleep: %w", err)
			return r
		}
	}
	start := p.clock.Now()
	p.lastStart = start
	p.working.Store(start.UnixNano())
	mark := start
	phase := func(d *time.Duration) {
		now := p.clock.Now()
		*d, mark = now.Sub(mark), now
	}
	defer func() {
		p.working.Store(0)
		p.lastEnd = p.clock.Now()
		r.Total = p.lastEnd.Sub(start)
	}()

	band, tallies, err := p.source.ScanBand(ctx, p.shard)
	phase(&r.Tallying)
	if err != nil {
		r.Err = fmt.Errorf("tallying: %w", err)
		return r
	}
	r.Band = band
	capacity := p.planner.Capacity()
	for i := range tallies {
		tallies[i].Count = min(tallies[i].Count, capacity)
	}
	plan := p.planner.Plan(p.shard, band, tallies)
	r.GlobalBand = plan.GlobalBand
	phase(&r.Planning)

	var cs []candidates.Candidate
	if plan.Total() > 0 {
		keys := make([]string, len(plan.Grants))
		perKey := 0
		for i, g := range plan.Grants {
			keys[i] = g.Key
			perKey = max(perKey, g.N)
		}
		fetched, err := p.source.FetchSteps(ctx, p.shard, band, keys, perKey)
		phase(&r.Fetching)
		if err != nil {
			r.Err = fmt.Errorf("fetching: %w", err)
			return r
		}
		cs = interleave(p.shard, band, plan.Grants, fetched)
	} else {
		phase(&r.Fetching)
	}
	// Nothing planned (nothing due, or outranked) pushes nothing: the
	// shard's earlier candidates go, so a better band elsewhere is served
	// first from the next pop on.
	r.Discarded = p.cache.Replace(p.shard, cs)
	r.Selected = len(cs)
	phase(&r.Pushing)
	return r
}

// owed is how long the cadence says to wait before a cycle starting at now:
// until the interval since the last start is over, and until MinGap since
// the last end is.
func (p *Pipeline) owed(now time.Time) time.Duration {
	if p.lastStart.IsZero() {
		return 0
	}
	var wait time.Duration
	if iv := p.Interval(); iv > 0 {
		wait = p.lastStart.Add(iv).Sub(now)
	}
	if gap := p.MinGap(); gap > 0 {
		wait = max(wait, p.lastEnd.Add(gap).Sub(now))
	}
	return wait
}

// interleave orders what was fetched for the workers: the keys take turns,
// one item each, in the plan's order, each key's items oldest first and no
// more than its grant. A key that came back short gives up what it lacks;
// a missing key is skipped.
func interleave(shard, band int, grants []planner.Grant, fetched map[string][]string) []candidates.Candidate {
	var out []candidates.Candidate
	for round := 0; ; round++ {
		added := false
		for _, g := range grants {
			ids := fetched[g.Key]
			if round < g.N && round < len(ids) {
				out = append(out, candidates.Candidate{Shard: shard, Band: band, Key: g.Key, ID: ids[round]})
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

// wallClock is the machine's clock.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
