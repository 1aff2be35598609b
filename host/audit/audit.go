package audit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Entry is one thing done: who did it, from where, what, and how it went.
type Entry struct {
	// Seq numbers the entries of a chain from 1, without gaps.
	Seq uint64    `json:"seq"`
	At  time.Time `json:"at"`
	// Who did it: "token ops", "uid 1000", "alice@laptop" (ruled deploy),
	// "ruled" (the daemon itself, refusing a file).
	Who string `json:"who"`
	// From is where: a TCP client's address, "unix socket", a host name.
	From string `json:"from,omitempty"`
	// What is the kind: command, refused, deploy, deploy-refused, dropped.
	What string `json:"what"`
	// Detail says it in words: "POST /v1/rules/speeding/pause → 200".
	Detail string `json:"detail"`
	// Prev is the hash of the entry before ("" for the first ever); Hash
	// this entry's (Seal).
	Prev string `json:"prev"`
	Hash string `json:"hash"`
}

// Kinds of entries (Entry.What).
const (
	Command       = "command"        // an API request that changes something, served or refused
	Refused       = "refused"        // a file refused for its signature
	Deploy        = "deploy"         // ruled deploy put a deployment in Redis
	DeployRefused = "deploy-refused" // a member refused a deployment
	Dropped       = "dropped"        // entries the Trail's queue had no room for
)

// Bounds of what one entry carries: an entry is a line an operator reads.
const (
	MaxWho    = 128
	MaxDetail = 2048
)

// hash is an entry's hash: sha256 over its fields, each length-prefixed
// (so no two entries' fields run together the same), and prev.
func (e *Entry) hash() string {
	h := sha256.New()
	var n [8]byte
	put := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	put("ruled-audit-v1")
	binary.BigEndian.PutUint64(n[:], e.Seq)
	h.Write(n[:])
	put(e.At.UTC().Format(time.RFC3339Nano))
	put(e.Who)
	put(e.From)
	put(e.What)
	put(e.Detail)
	put(e.Prev)
	return hex.EncodeToString(h.Sum(nil))
}

// Seal makes e the entry after one whose hash is prev, numbered seq: it
// bounds its fields, makes them valid UTF-8, sets its time to UTC, and
// sets Prev and Hash. Valid UTF-8 because the stores keep entries as
// JSON, which would replace a stray byte (a request's path may hold one)
// after the hash was taken: the entry would no longer verify, and the
// chain would be broken for good by whoever sent it.
func (e *Entry) Seal(seq uint64, prev string) {
	e.Seq, e.Prev, e.At = seq, prev, e.At.UTC()
	e.Who, e.From, e.What = clip(e.Who, MaxWho), clip(e.From, MaxWho), clip(e.What, MaxWho)
	e.Detail = clip(e.Detail, MaxDetail)
	e.Hash = e.hash()
}

// clip is s as valid UTF-8 (a stray byte as U+FFFD), cut to at most n
// bytes on a character's boundary.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// BrokenError is where a chain does not hold: the entry whose hash or
// link is wrong, and why.
type BrokenError struct {
	Seq uint64
	Why string
}

func (e *BrokenError) Error() string {
	return fmt.Sprintf("audit: the chain breaks at entry %d: %s", e.Seq, e.Why)
}

// Verify checks entries, oldest first, as one run of a chain whose entry
// before the first had the hash anchor: "" when the first is the first
// ever; the hash of the last entry retention trimmed (the store keeps
// it). It returns the head (the last entry's hash) or a *BrokenError at
// the first entry that was changed, or follows a removed one.
func Verify(entries []Entry, anchor string) (string, error) {
	prev, seq := anchor, uint64(0)
	for i, e := range entries {
		switch {
		case i == 0 && anchor == "" && e.Seq != 1:
			return "", &BrokenError{Seq: e.Seq, Why: fmt.Sprintf("entries 1 to %d are missing, and no anchor says retention trimmed them", e.Seq-1)}
		case i > 0 && e.Seq <= seq:
			return "", &BrokenError{Seq: e.Seq, Why: fmt.Sprintf("it comes after entry %d (a copy, or its seq changed)", seq)}
		case i > 0 && e.Seq != seq+1:
			return "", &BrokenError{Seq: e.Seq, Why: fmt.Sprintf("entries %d to %d are missing", seq+1, e.Seq-1)}
		}
		if e.Prev != prev {
			return "", &BrokenError{Seq: e.Seq, Why: "it does not follow the entry before it (removed or changed)"}
		}
		if e.hash() != e.Hash {
			return "", &BrokenError{Seq: e.Seq, Why: "its content is not what was sealed (changed)"}
		}
		prev, seq = e.Hash, e.Seq
	}
	return prev, nil
}

// Log is where a Trail appends (the store): Append seals e as the entry
// after the chain's head, in one transaction with reading the head, and
// trims the chain to retention.
type Log interface {
	AuditAppend(ctx context.Context, e Entry, keep Retention) (Entry, error)
}

// Retention bounds a chain: its entries, and their age. A trimmed chain
// keeps the hash of the last entry trimmed as its anchor.
type Retention struct {
	MaxEntries int
	MaxAge     time.Duration
}

// DefaultRetention keeps a year, at most 100,000 entries.
var DefaultRetention = Retention{MaxEntries: 100_000, MaxAge: 365 * 24 * time.Hour}

// QueueSize bounds the entries waiting for the store.
const QueueSize = 1024

// Trail appends entries to a Log from a bounded queue, on a goroutine of
// its own (ended by Close): a caller never waits for the store. An entry
// that finds the queue full is dropped and counted, and the count is
// appended as an entry of its own when there is room: the chain says
// entries are missing rather than hiding it.
type Trail struct {
	log  Log
	keep Retention
	warn func(msg string, args ...any)

	q    chan Entry
	done chan struct{}

	mu      sync.Mutex
	pending uint64 // dropped, not yet said in an entry
	dropped uint64 // dropped since the start
	failed  uint64 // appends the store refused
	closed  bool
	cut     bool // Close's deadline passed: what is queued is dropped
}

// CloseWithin bounds how long Close appends what is queued (a store that
// went away would hold a stop for the queue's length times the append's
// timeout); what is left then is counted as dropped.
const CloseWithin = 10 * time.Second

// NewTrail starts a Trail over log. warn, when set, is told of an append
// the store refused (the caller rate-limits it).
func NewTrail(log Log, keep Retention, warn func(msg string, args ...any)) *Trail {
	if keep.MaxEntries <= 0 {
		keep.MaxEntries = DefaultRetention.MaxEntries
	}
	if keep.MaxAge <= 0 {
		keep.MaxAge = DefaultRetention.MaxAge
	}
	t := &Trail{log: log, keep: keep, warn: warn, q: make(chan Entry, QueueSize), done: make(chan struct{})}
	go t.run()
	return t
}

// Record queues e (At defaults to now). It never blocks.
func (t *Trail) Record(e Entry) {
	if t == nil {
		return
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	select {
	case t.q <- e:
	default:
		t.pending++
		t.dropped++
	}
}

// Stats are the Trail's counters since it started: entries dropped for
// want of room (each gap appended as a count when there is room again, or
// left when Close's deadline passed) and appends the store refused.
func (t *Trail) Stats() (dropped, failed uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped, t.failed
}

func (t *Trail) run() {
	defer close(t.done)
	for e := range t.q {
		t.mu.Lock()
		cut := t.cut
		if cut {
			t.dropped++
		}
		t.mu.Unlock()
		if cut {
			continue
		}
		t.append(e)
		t.mu.Lock()
		n := t.pending
		t.pending = 0
		t.mu.Unlock()
		if n > 0 {
			t.append(Entry{At: time.Now(), Who: "ruled", What: Dropped,
				Detail: fmt.Sprintf("%d entries dropped: the audit queue (%d) was full", n, QueueSize)})
		}
	}
}

func (t *Trail) append(e Entry) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := t.log.AuditAppend(ctx, e, t.keep); err != nil {
		t.mu.Lock()
		t.failed++
		t.mu.Unlock()
		if t.warn != nil {
			t.warn("audit: an entry was not stored", "what", e.What, "detail", e.Detail, "error", err)
		}
	}
}

// Close stops taking entries, appends those queued within CloseWithin
// (counting the rest dropped), and returns when the goroutine is done.
func (t *Trail) Close() {
	if t == nil {
		return
	}
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		close(t.q)
	}
	t.mu.Unlock()
	select {
	case <-t.done:
	case <-time.After(CloseWithin):
		t.mu.Lock()
		t.cut = true
		t.mu.Unlock()
		<-t.done // the append in flight ends within its own timeout
	}
}
