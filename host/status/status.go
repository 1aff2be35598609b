package status

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/journal"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/task"
	"github.com/ruled-dev/ruled/host/trust"
	"github.com/ruled-dev/ruled/internal/release"
)

// Status is what `ruled status` shows.
type Status struct {
	// Build is what the daemon's binary is: version, commit, plugin ABI.
	Build   release.Info   `json:"build"`
	Started time.Time      `json:"started"`
	Store   string         `json:"store"`
	Rules   []RuleStatus   `json:"rules"`
	Invalid []RuleProblem  `json:"invalid_rules"`
	Plugins []PluginStatus `json:"plugins"`
	Failed  []Problem      `json:"failed_plugins"`
	Active  int            `json:"active_runs"`
	Parked  int            `json:"parked_runs"` // of the active, those waiting on a timer
	// Undropped counts records of steps that ran while the store was away
	// and that it has not removed yet (see seq.Counts.Undropped).
	Undropped int `json:"undropped_records,omitempty"`
	// Refused counts the triggers rules' max turned away (parallel and
	// queue modes); its JSON name was refused_by_queue_bound.
	Refused  uint64               `json:"refused_by_max"`
	Replayed int                  `json:"replayed"`
	Dropped  map[string]uint64    `json:"dropped_waiting_steps"`
	Events   bus.CountersSnapshot `json:"events"`
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
	// HTTPConnsRefused counts the TCP API's connections closed because
	// their address held its share of the connections.
	HTTPConnsRefused uint64 `json:"http_connections_refused_by_share"`
	// HopsRefused counts steps' publishes and fires refused at the hop
	// limit (bus.MaxHops): loops of rules.
	HopsRefused uint64 `json:"publishes_refused_by_hops"`
	// AuditDropped counts audit entries the trail's queue had no room for
	// (each gap said by an entry of its own); AuditFailed the appends the
	// store refused.
	AuditDropped uint64 `json:"audit_dropped,omitempty"`
	AuditFailed  uint64 `json:"audit_failed,omitempty"`
	// Journal is the accepted-event journal's counters.
	Journal *JournalStatus `json:"journal,omitempty"`
	// Signatures are where signatures are required, the keys trusted, the
	// files refused now and the refusals counted; nil when none are
	// required.
	Signatures *trust.Report `json:"signatures,omitempty"`
	// Traces is what was sent to the OpenTelemetry collector; nil when
	// no collector is named.
	Traces *TraceStatus `json:"traces,omitempty"`
	// State is the entities' state table's counts; nil when it keeps none.
	State *StateStatus `json:"state,omitempty"`
	// Holds is the holds' counts (change triggers with for:); nil when
	// none can run (no state table, or a fleet).
	Holds *HoldStatus `json:"holds,omitempty"`
	// Windows are the rule files' windows' counts, by name; nil when
	// none is kept (none defined, or a fleet).
	Windows []WindowStatus `json:"windows,omitempty"`
	// MQTT is the broker's counters, source and sink (Config.MQTT); nil
	// without one.
	MQTT *MQTTStatus `json:"mqtt,omitempty"`
	// OutboundHTTP is plugins' outbound HTTP: requests answered, failed,
	// and refused by reason.
	OutboundHTTP *HTTPStatus `json:"outbound_http,omitempty"`
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
	// Holds is how many holds the fleet keeps waiting (its append
	// script's, in Redis: every member counts the same).
	Holds int64 `json:"holds_running"`
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
	// Schedules are the rule's schedules and when each comes due next.
	Schedules []ScheduleStatus `json:"schedules,omitempty"`
}

// RuleDetail is one rule for its page (GET /v1/rules/{id}): its status,
// and its definition as its file has it now — where, what it says of
// itself, the topics that trigger it, its text.
type RuleDetail struct {
	RuleStatus
	At          string   `json:"at"` // file:line
	Description string   `json:"description,omitempty"`
	On          []string `json:"on,omitempty"`
	Source      string   `json:"source"`
	// States are the entities' states the rule reads (states:), with
	// what each holds now.
	States []RuleState `json:"states,omitempty"`
}

// RuleState is one state a rule reads: its name in the rule, the entity
// as written, and the state now — absent when the id is filled from each
// trigger (its {{path}} placeholders), or the daemon has none. Stale says
// it was last reported longer ago than the read's max-age: the rule sees
// it as missing.
type RuleState struct {
	Name   string          `json:"name"`
	Entity string          `json:"entity"`
	MaxAge string          `json:"max_age,omitempty"`
	State  json.RawMessage `json:"state,omitempty"`
	Seen   *time.Time      `json:"last_seen,omitempty"`
	Stale  bool            `json:"stale,omitempty"`
}

// ScheduleStatus is one schedule of a rule: as written, and when it next
// comes due (absent until the scheduler has read its record).
type ScheduleStatus struct {
	Schedule string     `json:"schedule"`
	Missed   string     `json:"missed"`
	Next     *time.Time `json:"next,omitempty"`
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
	// SignedBy is the key that signed the serving module, where the
	// operator requires signatures.
	SignedBy string `json:"signed_by,omitempty"`
	Live     int    `json:"instances"`
	Denied   uint64 `json:"denied"`
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

// JournalStatus is the accepted-event journal's counters (package journal):
// events journaled before their 202, deleted once every durable rule took
// them, still open, store writes refused; events re-admitted at start; and
// events refused with 503 because the worker queue was full.
type JournalStatus struct {
	journal.Stats
	Readmitted int    `json:"readmitted"`
	Busy       uint64 `json:"ingest_refused_busy"`
	// Repeats are triggers turned away because a step, run again after a
	// kill, published an event its rule already held a record of.
	Repeats uint64 `json:"repeats_turned_away"`
}

// StateStatus is the entity state table's counts (state.Stats, field for
// field: the daemon converts one to the other).
type StateStatus struct {
	Entities int               `json:"entities"`
	Bytes    int               `json:"bytes"`
	Max      int               `json:"max_entities"`
	MaxBytes int               `json:"max_bytes"`
	Changes  uint64            `json:"changes"`
	Reports  uint64            `json:"reports"`
	Refused  map[string]uint64 `json:"refused,omitempty"`
	// Writes are the store writes, Unwritten the entities whose change
	// waits for one, WriteFailed the writes the store refused.
	Writes      uint64 `json:"writes"`
	Unwritten   int    `json:"unwritten"`
	WriteFailed uint64 `json:"write_failed"`
	Forgot      uint64 `json:"forgot"`
}

// HoldStatus is the holds' counts (hold.Stats, field for field).
type HoldStatus struct {
	Running   int    `json:"running"`
	Began     uint64 `json:"began"`
	Fired     uint64 `json:"fired"`
	Cancelled uint64 `json:"cancelled"`
	Dropped   uint64 `json:"dropped"`
	Refused   uint64 `json:"refused"`
}

// WindowStatus is one window's counts since the start: its keys, and
// the events it counted and did not — late (older than the window, or of
// a period closed), from the future (over a minute ahead), a new key
// past max-keys, invalid (no key, no number, a time it cannot read, a
// number past ±1e100) — and the periods it closed.
type WindowStatus struct {
	Name    string `json:"name"`
	Keys    int    `json:"keys"`
	MaxKeys int    `json:"max_keys"`
	Counted uint64 `json:"counted"`
	Late    uint64 `json:"late"`
	Future  uint64 `json:"future"`
	Full    uint64 `json:"refused_full"`
	Invalid uint64 `json:"invalid"`
	Closed  uint64 `json:"closed"`
}

// Entity is one entity's state, as the API answers it.
type Entity struct {
	ID      string          `json:"id"`
	Topic   string          `json:"topic"`
	EventID string          `json:"event_id,omitempty"`
	State   json.RawMessage `json:"state"`
	Changed time.Time       `json:"last_changed"`
	Seen    time.Time       `json:"last_seen"`
}

// PinnedBy says what keeps an old module: runs waiting for a step on it,
// and pending records naming it.
type PinnedBy struct {
	Waiting int `json:"waiting_runs"`
	Records int `json:"pending_records"`
}

// Problem is a file that did not load, for Status.
type Problem struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// ReloadEvent is one attempt to load a plugin file.
type ReloadEvent struct {
	At     time.Time `json:"at"`
	Digest string    `json:"digest"`
	OK     bool      `json:"ok"`
	Error  string    `json:"error,omitempty"`
	Took   string    `json:"took"`
	// Untrusted: refused for its signature (trust.Gate), before compiling.
	Untrusted bool `json:"untrusted,omitempty"`
}

// Command is an operator's word on a rule's lifecycle, from the CLI, the
// HTTP API or the control topic ruled.cmd.<rule>.
type Command struct {
	// Command is pause, resume, sleep, kill or reset.
	Command string `json:"command"`
	// Until is when a sleep ends; For is the same as a duration from now
	// ("90m"). A sleep needs one of them.
	Until *time.Time `json:"until,omitempty"`
	For   string     `json:"for,omitempty"`
	// By is who sent it (By of the request: "uid 1000", "token ops"),
	// for the rule's history and the log; not read from the body.
	By string `json:"-"`
}

// Commands lists the commands a rule takes.
var Commands = []string{"pause", "resume", "sleep", "kill", "reset"}

// RunCommands are what an operator may do to one run (POST
// /v1/runs/{id}/{command}): cancel a live run (its tail, as cancel-on
// does), rerun a finished one with its trigger, run its waiting step now,
// or drop that step.
var RunCommands = []string{"cancel", "rerun", "now", "drop"}

// RunControl is what a run command did: the run it acted on, and the run
// a rerun started.
type RunControl struct {
	Run    string `json:"run"`
	NewRun string `json:"new_run,omitempty"`
	By     string `json:"by"`
}

// ErrNotRerunnable is a rerun of a run whose trigger the log did not
// keep whole (larger than its value bound), or whose rule is gone.
var ErrNotRerunnable = errors.New("cannot rerun")

// ErrUnknownRule is a command for a rule that is not loaded.
var ErrUnknownRule = errors.New("no such rule")

// ErrBadCommand is a command that is not one of Commands, or malformed.
var ErrBadCommand = errors.New("bad command")

// ErrNoExecLog is a run asked for while the execution log is off.
var ErrNoExecLog = errors.New("the execution log is off (--exec-log=false)")

// HTTPStatus is the counters of plugins' outbound HTTP (host/outbound):
// requests answered (with any status), failed (not answered: network,
// deadline), and refused by reason (host, private, redirect, scheme,
// request-too-large, response-too-large, no-policy, bad-request).
type HTTPStatus struct {
	Requests uint64            `json:"requests"`
	Failed   uint64            `json:"failed"`
	Refused  map[string]uint64 `json:"refused"`
}

// MQTTStatus is the MQTT client's counters: messages received, accepted
// as events (and acknowledged), refused by reason (topic, not-json,
// too-large, invalid, own; acknowledged), whether it is connected now;
// and of what steps published to the broker, how many it took
// (published), refused for good (rejected), were refused because the
// outbox was full, and how many the outbox holds now.
type MQTTStatus struct {
	Received   uint64            `json:"received"`
	Accepted   uint64            `json:"accepted"`
	Refused    map[string]uint64 `json:"refused"`
	Up         bool              `json:"up"`
	Published  uint64            `json:"published"`
	Written    uint64            `json:"written"`
	Rejected   uint64            `json:"rejected"`
	OutboxFull uint64            `json:"outbox_full"`
	Outbox     int               `json:"outbox"`
}

// TraceStatus counts the spans sent to the OpenTelemetry collector
// (host/traces).
type TraceStatus struct {
	Endpoint string  `json:"endpoint"`
	Ratio    float64 `json:"sample_ratio"`
	Exported uint64  `json:"exported"` // the collector took them
	Dropped  uint64  `json:"dropped"`  // the queue was full: the collector is slow or down
	Failed   uint64  `json:"failed"`   // a request failed for good, or the collector rejected them
	Queued   int     `json:"queued"`   // waiting now
	// LastError is the last failure's words; "" once a request went
	// through since.
	LastError string `json:"last_error,omitempty"`
}
