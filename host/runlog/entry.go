package runlog

import (
	"encoding/json"
	"fmt"
	"github.com/ruled-dev/ruled/host/keyspace"
	"strconv"
	"strings"
	"time"
)

// Prefix starts every key of the log. Commit refuses any other key: a key
// is the whole authority a commit carries, so it must not reach anything
// but the log.
const Prefix = keyspace.LogPrefix

// MaxSeq is the last node number a key can carry: sequences are zero-padded
// to six digits so that a store listing a run's keys in lexicographic order
// lists its nodes in the order they were opened. The width is a contract
// between the writer and every store; a run's nodes past MaxSeq are not
// logged (and are counted as dropped), since a run that opens a million
// nodes is a runaway repeat, not something to read as a tree.
const MaxSeq = 999999

// Outcomes of a run (Run.Outcome) and of a node (Node.Outcome).
const (
	Running   = "running"   // a run not yet ended; a node: Open
	OK        = "ok"        // ended as it should
	Failed    = "failed"    // a condition or action failed
	Cancelled = "cancelled" // cancel-on, a restart-mode trigger, a kill
	Dropped   = "dropped"   // a waiting step dropped (reason in the node)
	Open      = "open"      // a node whose content has not returned
	False     = "false"     // a condition node that said no
	Skipped   = "skipped"   // a step whose own condition said no
	Held      = "held"      // a delay that came due while its rule was paused or asleep
	// Interrupted is a run whose process stopped mid-run with nothing to
	// resume it (no durable step waiting): set by the next start.
	Interrupted = "interrupted"
	// Unlogged is a run that went on after the log's last entry of it, in
	// the moments before its process was killed: its durable step's record
	// is gone (the step ran, or the run was cancelled or dropped), but the
	// log had not written what followed. Set by the next start (Unended).
	Unlogged = "unlogged"
)

// Unended judges a run the log has as running when its process is gone
// and no pending record holds it: the outcome the next start gives it,
// and why. A run that had passed a durable point — a durable delay or
// wait, a retry's wait, a replay — went on: its record follows it from
// there to its end (host/seq), and it is gone, so the run ended (or was
// cancelled or dropped) and only its end is missing from the log
// (Unlogged). Any other run was cut where its log ends, with nothing to
// resume it (Interrupted): a step open, or a delay that was only in
// memory.
func Unended(nodes []*Node) (outcome, why string) {
	if n := len(nodes); n > 0 {
		last := nodes[n-1]
		if last.Kind == KindDelay && last.Outcome == Open && strings.HasSuffix(last.Detail, "(durable)") {
			return Unlogged, "its end is not in the log: the step its durable delay " + strconv.Quote(last.Name) +
				" waited for came due and its record went (the step ran, or the run was cancelled or dropped) in the moments before the process was killed, before the log had written it"
		}
		for _, nd := range nodes {
			if nd.Kind == KindReplay || (nd.Kind == KindDelay || nd.Kind == KindWait) && strings.Contains(nd.Detail, "(durable)") {
				return Unlogged, "its end is not in the log: it had passed a durable point (" + nd.Kind + " " + strconv.Quote(nd.Name) +
					"), whose record follows a run to its end, and the record is gone: the run ended (or was cancelled or dropped) in the moments before the process was killed, before the log had written it"
			}
		}
		if last.Kind == KindStep && last.Outcome == Open {
			return Interrupted, "the process running it stopped during step " + strconv.Quote(last.Name) +
				" (or before the log had the step's end); nothing was waiting to resume it"
		}
	}
	return Interrupted, "the process running it stopped; nothing was waiting to resume it"
}

// Node kinds.
const (
	KindTrigger   = "trigger"   // the event that started the run
	KindCondition = "condition" // the rule's when
	KindStep      = "step"      // one step: its when (if any) and its action
	KindDelay     = "delay"     // a step's after, open while the run waits
	KindWait      = "wait"      // a wait-for step, open while the run waits for its event
	KindReplay    = "replay"    // a run resumed from its pending record after a restart
	KindCancel    = "cancel"    // what ended the run early
	KindDrop      = "drop"      // a waiting step dropped, with the reason
)

// Exec is Run's name before the glossary's one word for a run.
//
// Deprecated: use Run (sdk/ruletest's Runs and Tree answer with it).
type Exec = Run

// Run is a run as the log keeps it: written when the run starts (Outcome
// Running) and again when it ends, under the same key (its run entry,
// ruled:log:<run>:exec: the key and the API's JSON keep the spec's name).
type Run struct {
	ID      string    `json:"id"`
	Rule    string    `json:"rule"`
	Topic   string    `json:"topic"`              // the trigger's topic
	EventID string    `json:"event_id,omitempty"` // the trigger's id
	Key     string    `json:"key,omitempty"`      // the run's concurrency key
	Parent  string    `json:"parent,omitempty"`   // the run whose action fired this one
	Started time.Time `json:"started"`
	At      int64     `json:"at"` // Started in unix milliseconds, for stores that index without parsing times
	Ended   time.Time `json:"ended,omitzero"`
	Outcome string    `json:"outcome"`
	Error   string    `json:"error,omitempty"`
	// Trace is the W3C traceparent its trigger came with (HTTP, MQTT, a
	// step's publish or fire), "" for none: the run's trace is then its
	// own, with the run's id for the trace's (host/traces).
	Trace string `json:"traceparent,omitempty"`
}

// Node is one node of a run: written when it opens (Outcome Open, no
// Ended) and again when it closes, under the same key.
type Node struct {
	Run      string    `json:"-"` // the key has it; readers set it
	Seq      int       `json:"seq"`
	Kind     string    `json:"kind"`
	Name     string    `json:"name,omitempty"`   // the step's name
	Do       string    `json:"do,omitempty"`     // plugin.function
	Digest   string    `json:"digest,omitempty"` // the module that ran: its first DigestLen hex digits
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended,omitzero"`
	Outcome  string    `json:"outcome"`
	Error    string    `json:"error,omitempty"`
	Detail   string    `json:"detail,omitempty"`
	Children []string  `json:"children,omitempty"` // runs this node's action fired
	// Output is what a step returned for the run's later steps (a JSON
	// object), when it is at most MaxOutput bytes.
	Output json.RawMessage `json:"output,omitempty"`
	// Input is what the node worked on: a trigger's event, a step's
	// config as rendered for its call (its placeholders filled from the
	// event and the run's context), a condition plugin's config. Values
	// is what each path a condition reads held when it was asked (an
	// object of path to value, null where missing): what a condition
	// that said no saw. Each is kept up to the log's bound (MaxOutput
	// unless the daemon is told otherwise); Detail says when one was not.
	Input  json.RawMessage `json:"input,omitempty"`
	Values json.RawMessage `json:"values,omitempty"`
	// Effects is what a step did beyond its answer, a line each: the
	// events it published ("published <topic> <payload>") and the kv keys
	// it wrote ("kv set <key>", "kv delete <key>"); at most a few dozen.
	Effects []string `json:"effects,omitempty"`
	// By is who asked, for a node an operator's command made (a cancel,
	// a re-run, a waiting step run now or dropped).
	By string `json:"by,omitempty"`
	// Trace is its run's Run.Trace, for a Tracer that sends spans
	// (host/traces): told with every node, never written (the run entry
	// keeps it).
	Trace string `json:"-"`
}

// MaxOutput is the largest step output, input or condition values a node
// shows unless the daemon is told another bound (log-value-kb): a run
// keeps larger outputs for its steps, and the log says only how large
// they were.
const MaxOutput = 4 << 10

// DigestLen is how much of a module's digest a node keeps: enough to tell
// modules apart in a log (ruled plugin ls and the pending records carry
// the whole digest), not the 64 digits every step would otherwise write.
const DigestLen = 16

// Took is how long the node ran, or 0 while it is open.
func (n *Node) Took() time.Duration {
	if n.Ended.IsZero() {
		return 0
	}
	return n.Ended.Sub(n.Started)
}

// ExecKey is the key of a run's run entry.
func ExecKey(run string) string { return Prefix + run + ":exec" }

// NodeKey is the key of a run's node seq (1 ≤ seq ≤ MaxSeq), zero-padded.
func NodeKey(run string, seq int) string {
	return Prefix + run + ":n:" + pad(seq)
}

func pad(seq int) string {
	s := strconv.Itoa(seq)
	if len(s) < 6 {
		s = "000000"[len(s):] + s
	}
	return s
}

// Field is where a key's entry lives within its run: "exec" or "n:000001".
// Stores keep a run's entries together under its id and order them by
// field.
func Field(seq int) string {
	if seq == 0 {
		return "exec"
	}
	return "n:" + pad(seq)
}

// ParseKey splits a log key into its run and its node number (0 for the
// run entry). Any key outside Prefix, or not shaped as ExecKey or NodeKey
// makes it, is an error: the store derives where an entry goes from its
// key alone.
func ParseKey(key string) (run string, seq int, err error) {
	rest, ok := strings.CutPrefix(key, Prefix)
	if !ok {
		return "", 0, fmt.Errorf("runlog: key %q is outside %q", key, Prefix)
	}
	run, field, ok := strings.Cut(rest, ":")
	if !ok || !ValidRun(run) {
		return "", 0, fmt.Errorf("runlog: key %q names no run", key)
	}
	if field == "exec" {
		return run, 0, nil
	}
	num, ok := strings.CutPrefix(field, "n:")
	if !ok || len(num) != 6 {
		return "", 0, fmt.Errorf("runlog: key %q is neither a run's exec nor a node", key)
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return "", 0, fmt.Errorf("runlog: key %q has a malformed node number", key)
		}
	}
	seq, _ = strconv.Atoi(num)
	if seq < 1 {
		return "", 0, fmt.Errorf("runlog: key %q has node number 0", key)
	}
	return run, seq, nil
}

// ValidRun accepts the run ids ruled makes (hex) and anything else made of
// letters, digits, '-' and '_', 1 to 64 bytes: no ':' (the key separator),
// no '/' (the bbolt store's), no wildcard.
func ValidRun(run string) bool {
	if run == "" || len(run) > 64 {
		return false
	}
	for i := 0; i < len(run); i++ { // bytes: any byte of a multi-byte rune fails
		if !runByte[run[i]] {
			return false
		}
	}
	return true
}

// runByte is ValidRun's table: the writer checks every record's run.
var runByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	return t
}()
