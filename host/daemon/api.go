package daemon

import (
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/fleet"
	"github.com/ruled-dev/ruled/host/ingest"
	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/host/seq"
)

// serveAPI serves the API over the daemon (api.Engine), with the routes
// other parts own: ingest — HTTP has a client to answer "busy", so a full
// queue is a 503, not a wait —, the event stream and the metrics.
func (d *Daemon) serveAPI() (*api.Server, error) {
	sink := func(e *bus.Event) error { return d.in.Take(e, ingest.FromClient) }
	h := api.Handler(d, api.Routes{
		Ingest:  &bus.Ingest{Sink: sink, Decoder: d.dec, Counters: d.in.Counters()},
		Watch:   observe.Stream(&d.taps, d.quit),
		Metrics: d.met.Handler(),
	})
	return api.Serve(api.ServerConfig{Socket: filepath.Join(d.cfg.DataDir, api.SocketName),
		HTTPAddr: d.cfg.HTTPAddr, Token: d.cfg.Token, TLSCert: d.cfg.TLSCert, TLSKey: d.cfg.TLSKey,
		Rate: d.cfg.HTTPRate, Burst: d.cfg.HTTPBurst, Warn: d.log.Warn}, h)
}

// Addr is where the TCP API listens, "" when it does not.
func (d *Daemon) Addr() string { return d.api.Addr() }

// Now is the daemon's clock (api.Engine).
func (d *Daemon) Now() time.Time { return d.sch.Now() }

var _ api.Engine = (*Daemon)(nil)

// Status reports the daemon's state.
func (d *Daemon) Status() api.Status {
	st := api.Status{Started: d.started, Store: d.storeName(), Active: d.runner.Active(), Parked: d.runner.Parked(), Undropped: d.runner.Undropped(), Refused: d.runner.Refused(),
		Replayed: d.replayed, Dropped: d.runner.Dropped(), Events: d.in.Counters().Snapshot(), Denied: d.rt.Denied(),
		ExecLog: d.ExecLogStats(), Journal: d.in.Status(), Fleet: d.fleetStatus(), Deployment: d.deployment.Load()}
	st.HTTPRefused = d.api.Refused()
	if d.redis != nil {
		b := d.busIn.Snapshot()
		st.Bus = &b
	}
	ps := d.pool.Stats()
	st.Pool = api.PoolStatus{Queued: ps.Queued, ByBand: ps.ByBand, Busy: ps.Busy, Refused: ps.Refused}
	set := d.ruleSnap()
	groups := d.pool.Groups()
	for _, s := range set.Sequences() {
		st.Rules = append(st.Rules, d.ruleStatus(s, groups))
	}
	for _, e := range set.Problems() {
		st.Invalid = append(st.Invalid, api.RuleProblem{At: e.Pos.String(), Rule: e.Rule, Error: e.Msg, Hint: e.Hint})
	}
	st.Plugins = d.Plugins()
	current, pinned := d.references()
	for dg, by := range pinned {
		if _, ok := current[dg]; !ok {
			if st.Pinned == nil {
				st.Pinned = map[string]*api.PinnedBy{}
			}
			st.Pinned[dg] = by
		}
	}
	for _, p := range st.Plugins {
		if !p.Loaded {
			st.Failed = append(st.Failed, api.Problem{File: p.File, Error: p.LastError})
		}
	}
	sort.Slice(st.Rules, func(i, j int) bool { return st.Rules[i].ID < st.Rules[j].ID })
	return st
}

// Plugins reports every plugin: loaded ones with their digest and reload
// history, files that never loaded with their error, and which old digests
// are kept for what.
func (d *Daemon) Plugins() []api.PluginStatus {
	_, pinned := d.references()
	return d.cat.Status(pinned)
}

// Pending lists the waiting durable steps, soonest first.
func (d *Daemon) Pending() ([]api.PendingRecord, error) {
	if d.cfg.Shards == 0 {
		return ListPending(d.pending)
	}
	var hashes []string // fleet mode: every shard's, held here or not
	for s := range d.cfg.Shards {
		hashes = append(hashes, fleet.PendingHash(s))
	}
	return ListPending(d.pending, hashes...)
}

// ListPending reads the waiting steps from a store, soonest first, without
// changing it (a running daemon reads through its API; `ruled pending ls`
// opens the store itself when no daemon runs): from the standard hash, or
// from the hashes named (fleet mode's shards).
func ListPending(ps *seq.PendingStore, hashes ...string) ([]api.PendingRecord, error) {
	if len(hashes) == 0 {
		hashes = []string{seq.PendingHash}
	}
	var recs []seq.Pending
	for _, h := range hashes {
		rs, err := ps.ListHash(h)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rs...)
	}
	out := make([]api.PendingRecord, 0, len(recs))
	for _, p := range recs {
		step := p.Step
		if step == "" {
			step = "#" + strconv.Itoa(p.StepIndex)
		}
		out = append(out, api.PendingRecord{Run: p.ID, Rule: p.Rule, Step: step, Pass: p.Iter, Due: p.Due(),
			Fingerprint: p.Fingerprint, Digest: p.Digest, Event: p.EventID})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Due.Before(out[j].Due) })
	return out, nil
}

// Rules reports every loaded rule, sorted by id.
func (d *Daemon) Rules() []api.RuleStatus {
	set := d.ruleSnap()
	out := make([]api.RuleStatus, 0, len(set.Sequences()))
	groups := d.pool.Groups()
	for _, s := range set.Sequences() {
		out = append(out, d.ruleStatus(s, groups))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
