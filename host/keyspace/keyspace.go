package keyspace

import (
	"strconv"
	"strings"
)

// Prefix starts every key.
const Prefix = "ruled:"

// One process: a device or a server (KEYS.md, "One process").
const (
	// Pending is the sequencer's hash of pending records: run id → the
	// record of a durable step waiting out its delay (host/seq).
	Pending = "ruled:pending"
	// Journal is the hash of accepted events not yet taken by every
	// durable rule they trigger, and of the source keys of those taken
	// lately ("seen:<key>" fields; host/journal).
	Journal = "ruled:journal"
	// JournalTook is the hash of which rules took a journal entry that
	// waits for others still: "<entry>\x00<rule>" → "" (host/journal).
	JournalTook = "ruled:journal:took"
	// Tasks is the hash of rules' lifecycle states (host/task).
	Tasks = "ruled:tasks"
	// Schedules is the hash of rules' schedules: "<rule>/<index>" → the
	// schedule's key and the last occurrence handled (host/schedule).
	Schedules = "ruled:schedules"
	// Throttle is the hash of throttled keys' states: "<rule>\x00<key>" →
	// when the key's allowance is whole again, while it is at its limit
	// (host/seq).
	Throttle = "ruled:throttle"
	// Cooldown is the hash of keys in their rule's cooldown:
	// "<rule>\x00<key>" → when the cooldown ends (host/seq).
	Cooldown = "ruled:cooldown"
	// State is the hash of entities' states: entity id → its latest
	// event and when it was last seen and last changed (host/state).
	State = "ruled:state"
	// Holds is the hash of holds running (a change trigger's for:):
	// "<rule>\x00<trigger>\x00<entity>\x00<began>" → the hold (host/hold).
	Holds = "ruled:holds"
	// Windows is the hash of windows' aggregates: "w\x00<window>" → its
	// spec, "s\x00<window>\x00<key>" → a key's series,
	// "c\x00<window>\x00<key>\x00<start>" → a close its rules have not
	// taken yet (host/window).
	Windows = "ruled:windows"
	// KVPrefix starts a plugin's kv scope: "ruled:kv:<plugin>" (host/store).
	KVPrefix = "ruled:kv:"
	// Bus and Control are the Redis bus's pub/sub channels: events, and
	// announcements and commands (host/bus).
	Bus     = "ruled:bus"
	Control = "ruled:control"
	// MQTTOutboxPrefix starts an MQTT client's outbox:
	// "ruled:mqtt:outbox:<client id>", message id → what a step published
	// and the broker has not taken yet (host/mqtt).
	MQTTOutboxPrefix = "ruled:mqtt:outbox:"
	// LogPrefix starts the execution log's staging keys:
	// "ruled:log:<run>:exec", "ruled:log:<run>:n:<seq>" (host/runlog).
	LogPrefix = "ruled:log:"
	// RunPrefix, Runs and RunsMeta are the execution log's committed
	// runs on Redis: a run's entries, runs by start, their metadata
	// (host/store).
	RunPrefix = "ruled:run:"
	Runs      = "ruled:runs"
	RunsMeta  = "ruled:runs:meta"
	// ClusterLogTag replaces Prefix in the execution log's keys on a
	// Redis Cluster (ClusterLog), so one script's keys share a slot.
	ClusterLogTag = "{ruled:log}:"
)

// Deployments: `ruled deploy` (host/store).
const (
	Deploy        = "ruled:deploy"
	DeployHistory = "ruled:deploy:history"
	DeployVersion = "ruled:deploy:version"
	BlobPrefix    = "ruled:blob:"
)

// The audit trail (host/audit, host/store): its entries, oldest first,
// and its head — the last entry's seq and hash, and the anchor (the hash
// of the last entry retention trimmed). One hash tag: the append script
// touches both on one slot of a Redis Cluster.
const (
	Audit     = "{ruled:audit}"
	AuditHead = "{ruled:audit}:head"
)

// History starts the hashes of the console's charts' points
// (host/history), one a host (HistoryOf): each process reads and writes
// its own rings only.
const History = "ruled:history:"

// HistoryOf is host's hash of the charts' points (its field "rings").
func HistoryOf(host string) string { return History + host }

// Fleet mode, shared by every member (host/store, host/fleet).
const (
	// Ingest is the stream of accepted events.
	Ingest = "ruled:in"
	// FleetStates is the hash of the states a fleet's ingest stream
	// ordered: entity id → the state its last accepted event left (its
	// JSON), swapped in the script that appends the event, which carries
	// the one before (host/store RedisStream.AppendChange). Its hash tag is
	// the stream's name, so both are on one slot of a Redis Cluster.
	FleetStates = "{ruled:in}:states"
	// FleetTriggers is the hash of the per-entity state of the change
	// triggers a fleet runs in its append script:
	// "H<rule>\x00<trigger>\x00<entity>" → a hold running (its beginning
	// event, its due time), "M<entity>" → the entity's triggers' memory of
	// its last report (a map by "<rule>\x00<trigger>"); <trigger> is a
	// hash of the trigger as written. FleetDue orders the holds by due
	// time (unix ms).
	FleetTriggers = "{ruled:in}:triggers"
	FleetDue      = "{ruled:in}:due"
	// FleetSeen orders the entities of FleetStates by when they were last
	// reported (unix ms): a full hash forgets the idle ones.
	FleetSeen = "{ruled:in}:seen"
	// FleetWindows is the hash of a fleet's windows (host/window Shared,
	// written by the append script): "s\x00<window>\x00<key>" → a sliding
	// or count window's series, "s\x00<window>\x00<key>\x00<start>" → a
	// tumbling window's key in the period from start (Unix ns) and
	// "e\x00…" the same → its close event as of its last event; each
	// series "<version> <spec hash>\n<series>", version from the hash's
	// counter "v"; "n\x00<window>" → its keys. FleetWindowsDue orders
	// the tumbling keys' periods by end (unix ms, "<window>\x00<key>\x00<start>"),
	// FleetWindowsIdle the sliding keys by when they hold nothing (unix
	// ms, "<window>\x00<key>").
	FleetWindows     = "{ruled:in}:windows"
	FleetWindowsDue  = "{ruled:in}:windows:due"
	FleetWindowsIdle = "{ruled:in}:windows:idle"
	// FleetWindowsClosed marks the tumbling periods the poll closed,
	// "<window>\x00<start>" by when (unix ms), for ten minutes: a member
	// late to one does not open it again.
	FleetWindowsClosed = "{ruled:in}:windows:closed"
	// Members is the roll call: member → its last beat.
	Members = "ruled:fleet:members"
)

// Shard is the prefix of every key of fleet shard n: "ruled:{n}:". Its
// hash tag keeps a shard's keys in one slot of a Redis Cluster.
func Shard(n int) string { return "ruled:{" + strconv.Itoa(n) + "}:" }

// ShardPending is the pending hash of shard n: the records of runs whose
// rule and key fall on it, replayed by the shard's next holder.
func ShardPending(n int) string { return Shard(n) + "pending" }

// ClusterLog is an execution log key as a Redis Cluster keeps it: with
// ClusterLogTag in place of Prefix ("ruled:runs" → "{ruled:log}:runs").
func ClusterLog(key string) string { return ClusterLogTag + strings.TrimPrefix(key, Prefix) }
