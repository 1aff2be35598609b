package daemon

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/console"
	"github.com/ruled-dev/ruled/host/fleet"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/task"
)

// SocketName is the API's unix socket in the data dir. The CLI's status,
// pending and rule commands talk to a running daemon through it; its file
// permissions (0600) are its access control.
const SocketName = "ruled.sock"

// api is the daemon's HTTP API: on the socket always, on TCP when asked.
type api struct {
	socket  string
	servers []*http.Server
	limit   *bus.Limiter // the TCP API's, nil without one
	tcp     net.Addr     // where the TCP API listens
}

func (d *Daemon) serveAPI() (*api, error) {
	mux := http.NewServeMux()
	// HTTP has a client to answer "busy": a full queue is a 503, not a wait.
	sink := func(e *bus.Event) error { return d.ingest(e, fromClient) }
	mux.Handle("POST "+bus.IngestPath, &bus.Ingest{Sink: sink, Decoder: d.dec, Counters: &d.counts})
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, d.Status()) })
	mux.HandleFunc("GET /v1/plugins", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, d.Plugins()) })
	mux.HandleFunc("GET /v1/pending", func(w http.ResponseWriter, r *http.Request) {
		p, err := d.Pending()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, p)
	})
	mux.HandleFunc("GET /v1/rules", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, d.Rules()) })
	mux.HandleFunc("POST /v1/rules/{id}/{command}", d.serveCommand)
	mux.HandleFunc("GET /v1/runs", d.serveRuns)
	mux.HandleFunc("GET /v1/runs/{id}/tree", d.serveRunTree)
	mux.HandleFunc("GET /v1/events/watch", d.serveWatch)
	mux.Handle("GET /metrics", d.met.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", d.serveReady)
	mux.Handle("GET /", console.Handler())
	a := &api{socket: filepath.Join(d.cfg.DataDir, SocketName)}
	os.Remove(a.socket) // a stale socket from a process that died
	ln, err := net.Listen("unix", a.socket)
	if err != nil {
		return nil, errors.New("daemon: api socket: " + err.Error())
	}
	os.Chmod(a.socket, 0o600)
	// No page of another origin may change anything (bus.SameOrigin),
	// on the socket as on TCP.
	h := bus.SameOrigin(mux)
	a.start(ln, h)
	if d.cfg.HTTPAddr != "" {
		g, err := bus.NewGuard(d.cfg.HTTPAddr, d.cfg.Token)
		if err != nil {
			a.close()
			return nil, err
		}
		tl, err := net.Listen("tcp", d.cfg.HTTPAddr)
		if err != nil {
			a.close()
			return nil, errors.New("daemon: http: " + err.Error())
		}
		if d.cfg.TLSCert != "" {
			cert, err := tls.LoadX509KeyPair(d.cfg.TLSCert, d.cfg.TLSKey)
			if err != nil {
				tl.Close()
				a.close()
				return nil, errors.New("daemon: tls: " + err.Error())
			}
			tl = tls.NewListener(tl, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		} else if d.cfg.Token != "" && !bus.OnLoopback(d.cfg.HTTPAddr) {
			d.log.Warn("the API's token travels in clear: serve it over TLS (--tls-cert, --tls-key) or behind a TLS proxy",
				"http", d.cfg.HTTPAddr)
		}
		// The limit comes before the token check: a flood of bad tokens is
		// a flood like any other.
		a.limit = &bus.Limiter{Rate: d.cfg.HTTPRate, Burst: d.cfg.HTTPBurst}
		a.tcp = tl.Addr()
		a.start(tl, a.limit.Wrap(g.WithPublic(console.Public...).Wrap(h)))
	}
	return a, nil
}

// maxConns bounds the connections one listener of the API holds at once
// (bus.ConnLimit: an idle one is closed to make room), readTimeout the
// time a request may take to arrive, body included, and idleTimeout how
// long a keep-alive connection stays open unused: 800 clients trickling
// their bodies held 817 goroutines. A stream (GET /v1/events/watch) is
// unaffected: it is the response that lasts.
const (
	maxConns    = 256
	readTimeout = 30 * time.Second
	idleTimeout = 60 * time.Second
)

func (a *api) start(ln net.Listener, h http.Handler) {
	lim := bus.NewConnLimit(maxConns)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout,
		IdleTimeout: idleTimeout, ConnState: lim.ConnState}
	a.servers = append(a.servers, srv)
	go srv.Serve(lim.Wrap(ln)) // ended by close
}

// Addr is where the TCP API listens, "" when it does not.
func (d *Daemon) Addr() string {
	if d.api == nil || d.api.tcp == nil {
		return ""
	}
	return d.api.tcp.String()
}

func (a *api) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, s := range a.servers {
		errs = append(errs, s.Shutdown(ctx))
	}
	os.Remove(a.socket)
	return errors.Join(errs...)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// Status is what `ruled status` shows.
type Status struct {
	Started time.Time      `json:"started"`
	Store   string         `json:"store"`
	Rules   []RuleStatus   `json:"rules"`
	Invalid []RuleProblem  `json:"invalid_rules"`
	Plugins []PluginStatus `json:"plugins"`
	Failed  []Problem      `json:"failed_plugins"`
	Active  int            `json:"active_runs"`
	Parked  int            `json:"parked_runs"` // of the active, those waiting on a timer
	// Undropped counts records of steps that ran while the store was away
	// and that it has not removed yet (see seq.Runner.Undropped).
	Undropped int                  `json:"undropped_records,omitempty"`
	Refused   uint64               `json:"refused_by_queue_bound"`
	Replayed  int                  `json:"replayed"`
	Dropped   map[string]uint64    `json:"dropped_waiting_steps"`
	Events    bus.CountersSnapshot `json:"events"`
	// Bus counts what the Redis bus delivered to this process (every
	// process's events, ingested here or elsewhere, and what rules
	// published) and refused; nil on the in-process bus.
	Bus    *bus.CountersSnapshot `json:"bus,omitempty"`
	Pool   PoolStatus            `json:"pool"`
	Denied uint64                `json:"denied_host_calls"`
	// Pinned lists the old module digests kept for steps scheduled on them.
	Pinned map[string]*PinnedBy `json:"pinned_modules,omitempty"`
	// ExecLog is the execution log writer's counters: entries written,
	// waiting, and dropped by reason.
	ExecLog runlog.Stats `json:"exec_log"`
	// HTTPRefused counts the TCP API's requests refused by the rate limit.
	HTTPRefused uint64 `json:"http_refused_by_rate"`
	// Journal is the accepted-event journal's counters.
	Journal *JournalStatus `json:"journal,omitempty"`
	// Fleet is this member's part of a fleet (Config.Shards).
	Fleet *FleetStatus `json:"fleet,omitempty"`
	// Deployment is the deployment loaded (Config.Deployed): its version,
	// when and by whom, and its files' digests.
	Deployment *store.Deployment `json:"deployment,omitempty"`
}

// FleetStatus is a fleet member's view: its name in leases, the fleet's
// shard count, the shards it holds now, and the accepted events not
// admitted yet.
type FleetStatus struct {
	Member string `json:"member"`
	Shards int    `json:"shards"`
	Held   []int  `json:"held"`
	Stream int64  `json:"stream_waiting"`
}

// RuleStatus is one loaded rule: its lifecycle state (host/task) and its
// runs.
type RuleStatus struct {
	ID    string     `json:"id"`
	File  string     `json:"file"`
	State string     `json:"state"`
	Since time.Time  `json:"since"`
	Until *time.Time `json:"until,omitempty"`
	// Reason says why a rule failed: "exceeded error rate" when its errors
	// spent its budget, or what made its stored state unusable.
	Reason string        `json:"reason,omitempty"`
	Stats  seq.RuleStats `json:"stats"`
	// Held counts the steps that came due while the rule was paused or
	// asleep, waiting for it to run again.
	Held int `json:"held_steps"`
	// Workers is what the rule's jobs had of the worker pool (its share is
	// by time: package pool). A rule starved by a slow neighbour shows a
	// long LongestWait and jobs Queued.
	Workers WorkerShare `json:"workers"`
	// Counted is how many errors count against the rule's budget now.
	Counted int `json:"errors_counted"`
	// Errors are the rule's last errors, oldest first.
	Errors []task.Err `json:"recent_errors,omitempty"`
	// History is the rule's last transitions since the daemon started,
	// oldest first.
	History []task.Hop `json:"history,omitempty"`
}

// WorkerShare is a rule's use of the worker pool since the daemon
// started: jobs run (conditions and steps), worker time, the longest a job
// of it waited for a worker, and jobs waiting now.
type WorkerShare struct {
	Ran         uint64  `json:"ran"`
	Seconds     float64 `json:"seconds"`
	LongestWait string  `json:"longest_wait"`
	Queued      int     `json:"queued"`
}

// RuleProblem is a rule (or file) that did not load.
type RuleProblem struct {
	At    string `json:"at"`
	Rule  string `json:"rule,omitempty"`
	Error string `json:"error"`
	Hint  string `json:"hint,omitempty"`
}

// PluginStatus is one plugin: what serves now, how its reloads went, and
// which older modules are kept for the steps scheduled on them.
type PluginStatus struct {
	Name      string   `json:"name"`
	File      string   `json:"file"`
	Loaded    bool     `json:"loaded"`
	Digest    string   `json:"digest,omitempty"`
	ABI       string   `json:"abi,omitempty"`
	Functions []string `json:"functions,omitempty"`
	Granted   []string `json:"granted"`
	Live      int      `json:"instances"`
	Denied    uint64   `json:"denied"`
	// LogDropped counts the plugin's log lines dropped past its bounds
	// (per call, per second).
	LogDropped uint64 `json:"log_dropped"`
	// Failures are the serving module's failed calls by cause since it was
	// loaded: deadline exceeded, fuel exhausted, memory limit, abi
	// violation (a result over the size limit among them), trap, plugin
	// error.
	Failures  map[string]uint64    `json:"failures,omitempty"`
	History   []ReloadEvent        `json:"reloads"`
	LastError string               `json:"last_error,omitempty"`
	Pinned    map[string]*PinnedBy `json:"pinned,omitempty"`
}

// PoolStatus is the worker pool's state.
type PoolStatus struct {
	Queued  int         `json:"queued"`
	ByBand  map[int]int `json:"queued_by_band"`
	Busy    int         `json:"busy"`
	Refused uint64      `json:"refused_full"`
}

// Status reports the daemon's state.
func (d *Daemon) Status() Status {
	st := Status{Started: d.started, Store: d.storeName(), Active: d.runner.Active(), Parked: d.runner.Parked(), Undropped: d.runner.Undropped(), Refused: d.runner.Refused(),
		Replayed: d.replayed, Dropped: d.runner.Dropped(), Events: d.counts.Snapshot(), Denied: d.rt.Denied(),
		ExecLog: d.ExecLogStats(), Journal: d.journalStatus(), Fleet: d.fleetStatus(), Deployment: d.deployment.Load()}
	if d.api != nil && d.api.limit != nil {
		st.HTTPRefused = d.api.limit.Refused()
	}
	if d.redis != nil {
		b := d.busIn.Snapshot()
		st.Bus = &b
	}
	ps := d.pool.Stats()
	st.Pool = PoolStatus{Queued: ps.Queued, ByBand: ps.ByBand, Busy: ps.Busy, Refused: ps.Refused}
	set := d.ruleSnap()
	groups := d.pool.Groups()
	for _, s := range set.seqs {
		st.Rules = append(st.Rules, d.ruleStatus(s, groups))
	}
	for _, e := range set.errs {
		st.Invalid = append(st.Invalid, RuleProblem{At: e.Pos.String(), Rule: e.Rule, Error: e.Msg, Hint: e.Hint})
	}
	st.Plugins = d.Plugins()
	current, pinned := d.references()
	for dg, by := range pinned {
		if _, ok := current[dg]; !ok {
			if st.Pinned == nil {
				st.Pinned = map[string]*PinnedBy{}
			}
			st.Pinned[dg] = by
		}
	}
	for _, p := range st.Plugins {
		if !p.Loaded {
			st.Failed = append(st.Failed, Problem{File: p.File, Error: p.LastError})
		}
	}
	sort.Slice(st.Rules, func(i, j int) bool { return st.Rules[i].ID < st.Rules[j].ID })
	return st
}

// Plugins reports every plugin: loaded ones with their digest and reload
// history, files that never loaded with their error, and which old digests
// are kept for what.
func (d *Daemon) Plugins() []PluginStatus {
	current, pinned := d.references()
	var out []PluginStatus
	status := func(p *plugin) PluginStatus {
		ps := PluginStatus{Name: p.name, File: p.file, Granted: []string{}}
		ps.History, ps.LastError = p.snapshot()
		return ps
	}
	for _, name := range d.cat.Plugins() {
		p := d.cat.plugin(name)
		ps := status(p)
		m := p.slot.Module()
		ps.Loaded, ps.Digest, ps.ABI = true, m.Digest(), "v"+abi.VersionString(m.ABIVersion())
		for _, f := range m.Descriptor().Functions {
			ps.Functions = append(ps.Functions, f.Kind+" "+f.Name)
		}
		for _, c := range m.Granted() {
			ps.Granted = append(ps.Granted, string(c))
		}
		ps.Live, ps.Denied, ps.Failures, ps.LogDropped = m.Live(), m.Denied(), m.Failures(), m.LogDropped()
		for _, ev := range ps.History {
			if by := pinned[ev.Digest]; by != nil && ev.OK && current[ev.Digest] == "" {
				if ps.Pinned == nil {
					ps.Pinned = map[string]*PinnedBy{}
				}
				ps.Pinned[ev.Digest] = by
			}
		}
		out = append(out, ps)
	}
	d.failed.Lock()
	for _, p := range d.failed.m {
		out = append(out, status(p))
	}
	d.failed.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PendingRecord is a waiting step as `ruled pending ls` shows it.
type PendingRecord struct {
	Run         string    `json:"run"`
	Rule        string    `json:"rule"`
	Step        string    `json:"step"`
	Pass        int       `json:"pass"`
	Due         time.Time `json:"due"`
	Fingerprint string    `json:"fingerprint"`
	Digest      string    `json:"digest"`
	Event       string    `json:"event_id,omitempty"` // the id of the event that started the run
}

// Pending lists the waiting durable steps, soonest first.
func (d *Daemon) Pending() ([]PendingRecord, error) {
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
func ListPending(ps *seq.PendingStore, hashes ...string) ([]PendingRecord, error) {
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
	out := make([]PendingRecord, 0, len(recs))
	for _, p := range recs {
		step := p.Step
		if step == "" {
			step = "#" + strconv.Itoa(p.StepIndex)
		}
		out = append(out, PendingRecord{Run: p.ID, Rule: p.Rule, Step: step, Pass: p.Iter, Due: p.Due(),
			Fingerprint: p.Fingerprint, Digest: p.Digest, Event: p.EventID})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Due.Before(out[j].Due) })
	return out, nil
}

// Rules reports every loaded rule, sorted by id.
func (d *Daemon) Rules() []RuleStatus {
	set := d.ruleSnap()
	out := make([]RuleStatus, 0, len(set.seqs))
	groups := d.pool.Groups()
	for _, s := range set.seqs {
		out = append(out, d.ruleStatus(s, groups))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// maxCommandBody bounds a command's JSON body.
const maxCommandBody = 4 << 10

// serveCommand is POST /v1/rules/{id}/{command}, with an optional JSON body
// {"until": RFC 3339} or {"for": "90m"} for sleep. It answers the rule's
// status, or an error: 404 for an unknown rule, 409 for a transition the
// table refuses, 400 for a malformed command, 503 when the state cannot be
// stored.
func (d *Daemon) serveCommand(w http.ResponseWriter, r *http.Request) {
	// JSON only: a type no form or simple cross-origin fetch may send, so
	// a web page cannot pause or kill a rule (bus.SameOrigin is the other
	// half).
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, `a command's body is JSON: send Content-Type: application/json (and "{}" when it has no options)`,
			http.StatusUnsupportedMediaType)
		return
	}
	c := Command{Command: r.PathValue("command")}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCommandBody+1))
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case len(body) > maxCommandBody:
		http.Error(w, "command body too large", http.StatusRequestEntityTooLarge)
		return
	case len(bytes.TrimSpace(body)) > 0:
		var opts struct {
			Until *time.Time `json:"until"`
			For   string     `json:"for"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			http.Error(w, fmt.Sprintf("%v: body: %v", ErrBadCommand, err), http.StatusBadRequest)
			return
		}
		c.Until, c.For = opts.Until, opts.For
	}
	st, err := d.Command(r.PathValue("id"), c)
	if err != nil {
		http.Error(w, err.Error(), commandStatus(err))
		return
	}
	writeJSON(w, st)
}

// commandStatus is the HTTP status for a command's error.
func commandStatus(err error) int {
	var ill *task.IllegalError
	switch {
	case errors.Is(err, ErrUnknownRule):
		return http.StatusNotFound
	case errors.As(err, &ill):
		return http.StatusConflict
	case errors.Is(err, ErrBadCommand), errors.Is(err, task.MissingUntilError):
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}
