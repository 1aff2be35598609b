package metrics

import (
	"context"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ruled-dev/ruled/host/pipeline"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/task"
	"github.com/ruled-dev/ruled/internal/release"
)

// Metrics is what /metrics serves: a collector that reads the counters the
// engine keeps anyway (its Source's Status) when scraped, so a scrape costs
// the engine nothing between scrapes, and histograms observed as calls
// happen. Each has its own registry: tests run several in one process.
type Metrics struct {
	described []prometheus.Collector // every collector registered but statusCollector (Families)
	reg       *prometheus.Registry
	calls     *prometheus.HistogramVec // plugin call latency by plugin, function, kind
	steps     *prometheus.HistogramVec // step latency by rule
	// Fleet mode's supply cycles (pipeline.Result): phase times, cycles by
	// outcome, candidates selected and discarded.
	phases   *prometheus.HistogramVec
	cycles   *prometheus.CounterVec
	selected prometheus.Counter
	discard  prometheus.Counter

	latency bool // the histograms are observed (not Config.NoLatencyMetrics)

	pluginReloads, pluginReloadsFailed atomic.Uint64
	ruleReloads, ruleReloadsFailed     atomic.Uint64
}

// latencyBuckets span a fast condition (µs) to a slow action near its
// deadline (seconds).
var latencyBuckets = []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 5}

// Source is what the collector reads at scrape time.
type Source interface {
	Status() status.Status
}

// New returns the metrics of src. latency observes the call and step
// histograms (two clock reads and an atomic add a call); without it they
// stay empty.
func New(src Source, latency bool) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), latency: latency,
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ruled_plugin_call_seconds",
			Help: "Time of each call into a plugin (condition or action), the sandbox included.", Buckets: latencyBuckets},
			[]string{"plugin", "function", "kind"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ruled_step_seconds",
			Help: "Time of each step on its worker: its condition, if any, and its action.", Buckets: latencyBuckets},
			[]string{"rule"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ruled_pipeline_phase_seconds",
			Help: "Time of each phase of a shard's supply cycle (fleet mode): slept, tallying, planning, fetching, pushing.", Buckets: latencyBuckets},
			[]string{"phase"}),
		cycles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ruled_pipeline_cycles_total",
			Help: "Supply cycles run (fleet mode), by outcome: served, idle (nothing due), outranked (a better band elsewhere), failed."},
			[]string{"outcome"}),
		selected: prometheus.NewCounter(prometheus.CounterOpts{Name: "ruled_pipeline_selected_total",
			Help: "Candidates supply cycles pushed to the workers (fleet mode)."}),
		discard: prometheus.NewCounter(prometheus.CounterOpts{Name: "ruled_pipeline_discarded_total",
			Help: "Candidates a later cycle replaced before any worker took them: rising toward selected, the cycles turn faster than the workers drain."}),
	}
	in := release.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "ruled_build_info",
		Help:        "1, labelled with what the binary is: its version, commit, Go version, platform and the plugin ABI it speaks.",
		ConstLabels: prometheus.Labels{"version": in.Version, "commit": in.Short(), "goversion": in.Go, "platform": in.Platform, "abi": in.ABI}})
	build.Set(1)
	m.described = []prometheus.Collector{build, m.calls, m.steps, m.phases, m.cycles, m.selected, m.discard,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
	m.reg.MustRegister(append(m.described, statusCollector{src, m})...)
	return m
}

// statusFamilies are the families statusCollector makes from the status
// at each scrape (newDesc): it describes none, so that a family it has
// no value for is left out, not an error.
var statusFamilies []string

// newDesc is prometheus.NewDesc, its name kept for Families.
func newDesc(name, help string, labels []string, constLabels prometheus.Labels) *prometheus.Desc {
	statusFamilies = append(statusFamilies, name)
	return prometheus.NewDesc(name, help, labels, constLabels)
}

// Families names every metric family /metrics can carry, sorted — those
// that appear only once they have a value (a labelled counter, a
// histogram, the MQTT and fleet families) too: what a dashboard may
// query (dist/grafana's test).
func Families() []string {
	m := New(nil, false)
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range m.described {
			c.Describe(ch)
		}
		close(ch)
	}()
	seen := map[string]bool{}
	for d := range ch {
		if sub := fqName.FindStringSubmatch(d.String()); sub != nil {
			seen[sub[1]] = true
		}
	}
	for _, n := range statusFamilies {
		seen[n] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// fqName reads a family's name from a Desc's String (the client has no
// accessor for it).
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Latency reports whether the histograms are observed.
func (m *Metrics) Latency() bool { return m.latency }

// PluginReloaded and RulesReloaded count a reload of a plugin file or of
// the rules, by result.
func (m *Metrics) PluginReloaded(ok bool) {
	if ok {
		m.pluginReloads.Add(1)
	} else {
		m.pluginReloadsFailed.Add(1)
	}
}

// RulesReloaded: see PluginReloaded.
func (m *Metrics) RulesReloaded(ok bool) {
	if ok {
		m.ruleReloads.Add(1)
	} else {
		m.ruleReloadsFailed.Add(1)
	}
}

// Gatherer is the registry, for a caller that reads the metrics in
// process rather than over HTTP.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Handler serves the registry in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Cycle records one supply cycle's Result (fleet.Config.Cycled).
func (m *Metrics) Cycle(_ int, r pipeline.Result) {
	for _, ph := range []struct {
		name string
		d    time.Duration
	}{{"slept", r.Slept}, {"tallying", r.Tallying}, {"planning", r.Planning}, {"fetching", r.Fetching}, {"pushing", r.Pushing}} {
		m.phases.WithLabelValues(ph.name).Observe(ph.d.Seconds())
	}
	outcome := "served"
	switch {
	case r.Err != nil:
		outcome = "failed"
	case r.Band == pipeline.NoBand:
		outcome = "idle"
	case r.Band > r.GlobalBand:
		outcome = "outranked"
	}
	m.cycles.WithLabelValues(outcome).Inc()
	m.selected.Add(float64(r.Selected))
	m.discard.Add(float64(r.Discarded))
}

// Step implements seq.Observer.
func (m *Metrics) Step(rule, _ string, took time.Duration, _ bool) {
	m.steps.WithLabelValues(rule).Observe(took.Seconds())
}

// timedCondition and timedAction time a configured plugin function into
// the calls histogram; the observer is looked up once, when the rule is
// compiled, so a call pays two clock reads and an atomic add.
type timedCondition struct {
	seq.Condition
	obs prometheus.Observer
}

func (t timedCondition) When(ctx context.Context, c *seq.Call) (bool, error) {
	t0 := time.Now()
	ok, err := t.Condition.When(ctx, c)
	t.obs.Observe(time.Since(t0).Seconds())
	return ok, err
}

type timedAction struct {
	seq.Action
	obs prometheus.Observer
}

func (t timedAction) Act(ctx context.Context, c *seq.Call) ([]byte, error) {
	t0 := time.Now()
	out, err := t.Action.Act(ctx, c)
	t.obs.Observe(time.Since(t0).Seconds())
	return out, err
}

// Condition times c into the calls histogram, when Latency.
func (m *Metrics) Condition(c seq.Condition, plugin, function string) seq.Condition {
	if m == nil || c == nil || !m.latency {
		return c
	}
	return timedCondition{c, m.calls.WithLabelValues(plugin, function, "condition")}
}

// Action times a into the calls histogram, when Latency.
func (m *Metrics) Action(a seq.Action, plugin, function string) seq.Action {
	if m == nil || !m.latency {
		return a
	}
	return timedAction{a, m.calls.WithLabelValues(plugin, function, "action")}
}

// statusCollector turns Status into metrics at scrape time.
type statusCollector struct {
	src Source
	m   *Metrics
}

// Describe sends nothing: the rules, reasons and bands are known only at
// scrape time, so this is an unchecked collector.
func (statusCollector) Describe(chan<- *prometheus.Desc) {}

var (
	descAccepted = newDesc("ruled_events_accepted_total", "Events accepted at ingest (HTTP, the events file).", nil, nil)
	descRejected = newDesc("ruled_events_rejected_total", "Events refused at ingest, by reason.", []string{"reason"}, nil)
	descBusIn    = newDesc("ruled_bus_events_received_total", "Events the Redis bus delivered to this process.", nil, nil)
	descBusOut   = newDesc("ruled_bus_events_refused_total", "Messages on the Redis bus that were not events, by reason.", []string{"reason"}, nil)
	descRuns     = newDesc("ruled_runs_total", "Runs of a rule since the daemon started, by what became of them "+
		"(started, completed, failed, cancelled, dropped) and triggers it did not start a run for (suppressed, refused).",
		[]string{"rule", "outcome"}, nil)
	descErrors     = newDesc("ruled_rule_errors_total", "Errors of a rule's conditions and actions.", []string{"rule"}, nil)
	descActive     = newDesc("ruled_runs_active", "Runs in flight (running or waiting out a delay), by rule.", []string{"rule"}, nil)
	descState      = newDesc("ruled_rule_state", "1 for the lifecycle state a rule is in, 0 for the others.", []string{"rule", "state"}, nil)
	descParked     = newDesc("ruled_runs_parked", "Runs waiting on a timer (an after, or between repeat passes).", nil, nil)
	descUndropped  = newDesc("ruled_records_undropped", "Records of steps that ran while the store was away, not removed yet.", nil, nil)
	descHeld       = newDesc("ruled_steps_held", "Steps that came due while their rule was paused or asleep.", []string{"rule"}, nil)
	descWorkerSec  = newDesc("ruled_rule_worker_seconds_total", "Worker time a rule's jobs (conditions, steps) used.", []string{"rule"}, nil)
	descJobsQ      = newDesc("ruled_rule_jobs_queued", "A rule's jobs waiting for a worker.", []string{"rule"}, nil)
	descWaitMax    = newDesc("ruled_rule_queue_wait_longest_seconds", "The longest a rule's job waited for a worker since start: a rule starved by another shows here.", []string{"rule"}, nil)
	descHeldTrig   = newDesc("ruled_triggers_held", "Triggers that arrived while their rule was paused or asleep, held for when it runs again (on-pause: hold).", []string{"rule"}, nil)
	descDropped    = newDesc("ruled_waiting_steps_dropped_total", "Waiting steps dropped when they came due, by reason.", []string{"reason"}, nil)
	descQueued     = newDesc("ruled_pool_queued", "Steps queued for a worker, by priority band.", []string{"band"}, nil)
	descBusy       = newDesc("ruled_pool_busy", "Workers running a step.", nil, nil)
	descFull       = newDesc("ruled_pool_refused_total", "Triggers refused because the queue was full.", nil, nil)
	descLogW       = newDesc("ruled_exec_log_entries_written_total", "Execution log entries committed.", nil, nil)
	descLogQ       = newDesc("ruled_exec_log_entries_queued", "Execution log entries waiting for the writer.", nil, nil)
	descLogD       = newDesc("ruled_exec_log_entries_dropped_total", "Execution log entries dropped, by reason.", []string{"reason"}, nil)
	descReloads    = newDesc("ruled_reloads_total", "Reloads of plugins and of the rules, by result.", []string{"what", "result"}, nil)
	descDenied     = newDesc("ruled_host_calls_denied_total", "Host calls refused to plugins (capability not granted, reserved topic, …).", nil, nil)
	descHTTP       = newDesc("ruled_http_refused_total", "TCP API requests refused by the rate limit.", nil, nil)
	descHops       = newDesc("ruled_publishes_refused_by_hops_total", "Steps' publishes and fires refused at the hop limit: loops of rules.", nil, nil)
	descHTTPConns  = newDesc("ruled_http_connections_refused_total", "TCP API connections closed because their address held its share of the connections.", nil, nil)
	descReplayed   = newDesc("ruled_replayed_steps", "Waiting steps resumed from their records at the last start.", nil, nil)
	descLogDrop    = newDesc("ruled_plugin_log_lines_dropped_total", "A plugin's log lines dropped past its bounds (per call, per second).", []string{"plugin"}, nil)
	descAudit      = newDesc("ruled_audit_entries_lost_total", "Audit entries not stored: dropped (the queue was full; the gap is an entry of its own) or failed (the store refused the append).", []string{"why"}, nil)
	descSigRefused = newDesc("ruled_signature_refusals_total", "Files refused because no trusted key signed them (where signatures are required), by place (plugins, rules, deploy) and reason (unsigned, tampered, revoked key, …).", []string{"place", "reason"}, nil)
	descSigFiles   = newDesc("ruled_signature_refused_files", "Files refused for their signature now, by place: the last good version of each serves meanwhile.", []string{"place"}, nil)
	descSpans      = newDesc("ruled_trace_spans_total", "Spans of runs for the OpenTelemetry collector (otlp.endpoint), by result: exported (taken), dropped (the queue was full: the collector is slow or down), failed (a request failed for good, or the collector rejected them).", []string{"result"}, nil)
	descSpansQ     = newDesc("ruled_trace_spans_queued", "Spans waiting to be sent to the OpenTelemetry collector (bounded by otlp.max-queue).", nil, nil)
	descFailures   = newDesc("ruled_plugin_call_failures_total", "Failed calls of a plugin's serving module, by cause (a limit that refused, a trap, the plugin's own error).", []string{"plugin", "cause"}, nil)
	descJournalW   = newDesc("ruled_journal_written_total", "Accepted events journaled before their 202 (they trigger a rule with a durable step).", nil, nil)
	descJournalO   = newDesc("ruled_journal_open", "Journaled events some durable rule has not taken yet.", nil, nil)
	descJournalF   = newDesc("ruled_journal_store_failures_total", "Journal writes and deletes the store refused (a refused write refuses its event).", nil, nil)
	descIngBusy    = newDesc("ruled_events_refused_busy_total", "Events refused with 503 because the worker queue was full.", nil, nil)
	descStateN     = newDesc("ruled_state_entities", "Entities whose state is kept.", nil, nil)
	descStateB     = newDesc("ruled_state_bytes", "Bytes the entities' states take, as the table counts them.", nil, nil)
	descStateC     = newDesc("ruled_state_changes_total", "Events that changed their entity's state.", nil, nil)
	descStateR     = newDesc("ruled_state_refused_total", "Events whose state was not kept, by reason: full (a new entity past state.max-entities), bytes (past state.max-kb), id (a key value too long).", []string{"reason"}, nil)
	descStateF     = newDesc("ruled_state_write_failed_total", "Writes of entities' states the store refused (they are tried again).", nil, nil)
	descHoldsN     = newDesc("ruled_holds_running", "Holds running (change triggers with for:), waiting out their time.", nil, nil)
	descWinKeys    = newDesc("ruled_window_keys", "Keys a window holds (its max-keys bounds them).", []string{"window"}, nil)
	descWindow     = newDesc("ruled_window_events_total", "Events a window heard, by what became of them: counted, late (older than the window, or of a period closed), future (over a minute ahead), full (a new key past max-keys), invalid (no key, no number, a time it cannot read).", []string{"window", "outcome"}, nil)
	descWinClosed  = newDesc("ruled_window_closes_total", "Periods a tumbling window closed, one a key.", []string{"window"}, nil)
	descHolds      = newDesc("ruled_holds_total", "Holds by what became of them: began, fired, cancelled (the value changed first), dropped (at a start), refused (past the bound).", []string{"outcome"}, nil)
	descRepeats    = newDesc("ruled_step_event_repeats_total", "Triggers turned away: a step run again after a kill published an event its rule already held a record of.", nil, nil)
	descMQTTUp     = newDesc("ruled_mqtt_connected", "1 while the MQTT broker connection is up.", nil, nil)
	descMQTTIn     = newDesc("ruled_mqtt_messages_total", "MQTT messages received, by what became of them (accepted as events, or refused: topic, not-json, too-large, invalid, own).", []string{"result"}, nil)
	descMQTTOut    = newDesc("ruled_mqtt_published_total", "Messages steps published that the broker took from the outbox (ok), refused for good (rejected), or that a full outbox refused (outbox-full).", []string{"result"}, nil)
	descMQTTWrote  = newDesc("ruled_mqtt_outbox_written_total", "Messages steps published that the outbox wrote to the store: the broker had not taken them within 10 ms.", nil, nil)
	descMQTTBox    = newDesc("ruled_mqtt_outbox", "Messages in the MQTT outbox, waiting for the broker.", nil, nil)
	descOutReq     = newDesc("ruled_outbound_http_requests_total", "Plugins' outbound HTTP requests: answered (with any status), failed (not answered), or refused by reason.", []string{"result"}, nil)
	descPlugins    = newDesc("ruled_plugin_loaded", "1 for a plugin serving, 0 for one whose file did not load.", []string{"plugin", "digest"}, nil)
)

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Status()
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(descAccepted, float64(st.Events.Accepted))
	for reason, n := range st.Events.Rejected {
		counter(descRejected, float64(n), string(reason))
	}
	if st.Bus != nil {
		counter(descBusIn, float64(st.Bus.Accepted))
		for reason, n := range st.Bus.Rejected {
			counter(descBusOut, float64(n), string(reason))
		}
	}
	for _, r := range st.Rules {
		s := r.Stats
		for outcome, n := range map[string]uint64{"started": s.Started, "completed": s.Completed, "failed": s.Failed,
			"cancelled": s.Cancelled, "dropped": s.Dropped, "suppressed": s.Suppressed, "refused": s.Refused,
			"refused_by_max_keys": s.RefusedKeys} {
			counter(descRuns, float64(n), r.ID, outcome)
		}
		counter(descErrors, float64(s.Errors), r.ID)
		gauge(descActive, float64(s.Active), r.ID)
		gauge(descHeld, float64(r.Held), r.ID)
		gauge(descHeldTrig, float64(s.HeldTriggers), r.ID)
		counter(descWorkerSec, r.Workers.Seconds, r.ID)
		gauge(descJobsQ, float64(r.Workers.Queued), r.ID)
		if w, err := time.ParseDuration(r.Workers.LongestWait); err == nil {
			gauge(descWaitMax, w.Seconds(), r.ID)
		}
		for _, state := range task.States {
			v := 0.0
			if string(state) == r.State {
				v = 1
			}
			gauge(descState, v, r.ID, string(state))
		}
	}
	gauge(descParked, float64(st.Parked))
	gauge(descUndropped, float64(st.Undropped))
	for reason, n := range st.Dropped {
		counter(descDropped, float64(n), reason)
	}
	for band, n := range st.Pool.ByBand {
		gauge(descQueued, float64(n), strconv.Itoa(band))
	}
	gauge(descBusy, float64(st.Pool.Busy))
	counter(descFull, float64(st.Pool.Refused))
	counter(descLogW, float64(st.ExecLog.Written))
	gauge(descLogQ, float64(st.ExecLog.Queued))
	for reason, n := range st.ExecLog.Dropped {
		counter(descLogD, float64(n), reason)
	}
	counter(descReloads, float64(c.m.pluginReloads.Load()), "plugin", "ok")
	counter(descReloads, float64(c.m.pluginReloadsFailed.Load()), "plugin", "failed")
	counter(descReloads, float64(c.m.ruleReloads.Load()), "rules", "ok")
	counter(descReloads, float64(c.m.ruleReloadsFailed.Load()), "rules", "failed")
	counter(descDenied, float64(st.Denied))
	counter(descHTTP, float64(st.HTTPRefused))
	counter(descHTTPConns, float64(st.HTTPConnsRefused))
	counter(descHops, float64(st.HopsRefused))
	gauge(descReplayed, float64(st.Replayed))
	if j := st.Journal; j != nil {
		counter(descJournalW, float64(j.Written))
		gauge(descJournalO, float64(j.Open))
		counter(descJournalF, float64(j.Failed))
		counter(descIngBusy, float64(j.Busy))
		counter(descRepeats, float64(j.Repeats))
	}
	if s := st.State; s != nil {
		gauge(descStateN, float64(s.Entities))
		gauge(descStateB, float64(s.Bytes))
		counter(descStateC, float64(s.Changes))
		for reason, n := range s.Refused {
			counter(descStateR, float64(n), reason)
		}
		counter(descStateF, float64(s.WriteFailed))
	}
	if h := st.Holds; h != nil {
		gauge(descHoldsN, float64(h.Running))
		counter(descHolds, float64(h.Began), "began")
		counter(descHolds, float64(h.Fired), "fired")
		counter(descHolds, float64(h.Cancelled), "cancelled")
		counter(descHolds, float64(h.Dropped), "dropped")
		counter(descHolds, float64(h.Refused), "refused")
	}
	for _, w := range st.Windows {
		gauge(descWinKeys, float64(w.Keys), w.Name)
		counter(descWindow, float64(w.Counted), w.Name, "counted")
		counter(descWindow, float64(w.Late), w.Name, "late")
		counter(descWindow, float64(w.Future), w.Name, "future")
		counter(descWindow, float64(w.Full), w.Name, "full")
		counter(descWindow, float64(w.Invalid), w.Name, "invalid")
		counter(descWinClosed, float64(w.Closed), w.Name)
	}
	if q := st.MQTT; q != nil {
		up := 0.0
		if q.Up {
			up = 1
		}
		gauge(descMQTTUp, up)
		counter(descMQTTIn, float64(q.Accepted), "accepted")
		for reason, n := range q.Refused {
			counter(descMQTTIn, float64(n), reason)
		}
		counter(descMQTTOut, float64(q.Published), "ok")
		counter(descMQTTOut, float64(q.Rejected), "rejected")
		counter(descMQTTOut, float64(q.OutboxFull), "outbox-full")
		gauge(descMQTTBox, float64(q.Outbox))
		counter(descMQTTWrote, float64(q.Written))
	}
	if h := st.OutboundHTTP; h != nil {
		counter(descOutReq, float64(h.Requests), "answered")
		counter(descOutReq, float64(h.Failed), "failed")
		for reason, n := range h.Refused {
			counter(descOutReq, float64(n), "refused-"+reason)
		}
	}
	for _, p := range st.Plugins {
		v := 0.0
		if p.Loaded {
			v = 1
		}
		gauge(descPlugins, v, p.Name, p.Digest)
		for cause, n := range p.Failures {
			counter(descFailures, float64(n), p.Name, cause)
		}
		counter(descLogDrop, float64(p.LogDropped), p.Name)
	}
	counter(descAudit, float64(st.AuditDropped), "dropped")
	counter(descAudit, float64(st.AuditFailed), "failed")
	if sg := st.Signatures; sg != nil {
		for k, n := range sg.Counts {
			place, reason, _ := strings.Cut(k, ": ")
			counter(descSigRefused, float64(n), place, reason)
		}
		now := map[string]int{}
		for _, p := range sg.Required {
			now[p] = 0
		}
		for _, f := range sg.Refused {
			now[f.Place]++
		}
		for place, n := range now {
			gauge(descSigFiles, float64(n), place)
		}
	}
	if tr := st.Traces; tr != nil {
		counter(descSpans, float64(tr.Exported), "exported")
		counter(descSpans, float64(tr.Dropped), "dropped")
		counter(descSpans, float64(tr.Failed), "failed")
		gauge(descSpansQ, float64(tr.Queued))
	}
}
