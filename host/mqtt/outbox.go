package mqtt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/internal/lograte"
	"github.com/ruled-dev/ruled/internal/traceparent"
)

// Route sends the events steps publish on a ruled topic pattern to the
// broker, on the MQTT topic the event's topic maps to ("light.hall.set"
// → "light/hall/set").
type Route struct {
	Pattern rules.Pattern
	QoS     byte // 0, 1 or 2
	Retain  bool
	// AtMostOnce (QoS 0 routes): the route's messages are queued in
	// memory only, never written to the store — no commit, no fsync —
	// and a kill loses those the broker has not taken. They keep their
	// place in the order of their topic as any other, and count against
	// the outbox's bound.
	AtMostOnce bool
}

// Hasher is the store surface the outbox keeps its messages in (both of
// ruled's stores have it).
type Hasher interface {
	HSet(key, field string, value any) error
	HGetAll(key string) (map[string]string, error)
	HDel(key string, fields ...string) error
}

// ErrOutboxFull refuses a publish while the outbox holds its limit: the
// broker has been away long enough that keeping more would exhaust the
// device. The publishing step fails with it, so nothing is lost silently.
var ErrOutboxFull = errors.New("mqtt: the outbox is full (the broker has not taken what it holds)")

// User properties every message ruled publishes carries (MQTT 5).
const (
	// PropKey is the publishing step's idempotency key: the same for
	// every delivery of one step of one pass of one run, so a consumer
	// can drop a repeat (a step run again after a crash, an outbox
	// message sent again because its acknowledgement was lost).
	PropKey = "idempotency-key"
	// PropEvent is the id of the event on ruled's bus.
	PropEvent = "ruled-event"
	// PropBy is the publishing rule and step ("rule/step").
	PropBy = "ruled-by"
	// PropOrigin is the client id of the process that published it: its
	// own Client does not take it back as an event (the bus carried it
	// already).
	PropOrigin = "ruled-origin"
	// PropHops is the event's hops (bus.Event.Hops) when it has some: a
	// ruled that takes the message back counts on from it, so a loop of
	// rules through a broker meets bus.MaxHops.
	PropHops = "ruled-hops"
)

// outboxVersion is the message format the outbox writes.
const outboxVersion = 1

// message is one outbox entry: what a step published, waiting for the
// broker to take it.
type message struct {
	V       int             `json:"v"`
	ID      string          `json:"-"` // the hash field
	Topic   string          `json:"topic"`
	Payload json.RawMessage `json:"payload"`
	QoS     byte            `json:"qos"`
	Retain  bool            `json:"retain,omitempty"`
	Key     string          `json:"key,omitempty"`
	Event   string          `json:"event,omitempty"`
	By      string          `json:"by,omitempty"`
	Hops    int             `json:"hops,omitempty"`
	Trace   string          `json:"trace,omitempty"` // the publishing step's traceparent
	Written int64           `json:"written"`         // unix nanoseconds: the order they go out in
	// flying: the sender has published it and waits for the broker's
	// answer; gone: the broker took it, and it waits for the messages
	// before it to leave the queue; unwritten: the store does not have it
	// (addLater), and w is the write it waits in, until the broker takes
	// it or the store has it; stored: the store has it, or a write of it
	// is on its way (outbox.inStore counts it); mustWrite: the broker took
	// it while an earlier message of its topic was stored, so it is
	// written all the same (taken); lost: its write failed before the
	// broker took it, and its waiter fails (outbox.mu).
	flying, gone, unwritten, stored, mustWrite, lost bool
	w                                                *outboxWrite
	// memory: an at-most-once route's (Route.AtMostOnce), never in the
	// store.
	memory bool
}

func (m *message) size() int { return len(m.Payload) + len(m.Topic) + len(m.Key) + 64 }

// outbox is the store's copy and the memory's queue of the messages the
// broker has not taken yet, oldest first. The store's copy is what a
// restart sends; the queue is what the sender works through.
type outbox struct {
	h           Hasher
	key         string
	limit, max  int // messages, bytes
	mu          sync.Mutex
	queue       []*message
	bytes       int            // of queue
	gone        int            // messages in queue that the broker took (remove)
	next        *outboxWrite   // what addLater queued since the write in progress began
	dels        []*message     // what the broker took, to remove from the store (taken)
	inStore     map[string]int // stored messages a topic (message.stored)
	writing     bool           // a write goroutine runs (addLater)
	closed      bool           // close was called: no write goroutine starts
	writes      sync.WaitGroup // it, for Close
	wake        chan struct{}
	poke        chan struct{} // the writer's: its write is due now (all taken, or closing)
	behind      time.Duration // writeBehind; a test's own
	sent        atomic.Uint64
	written     atomic.Uint64 // messages the store had to keep: not taken within writeBehind
	rejected    atomic.Uint64
	refusedFull atomic.Uint64
	log         Logger
	seen        map[string]bool // ready's, kept from call to call (under mu)
	warns       lograte.Limiter // the writer's warnings: once a second a cause
}

// OutboxKey is the store hash of a client's outbox: one per client id, so
// that the members of a fleet sharing a Redis each send their own.
func OutboxKey(clientID string) string { return keyspace.MQTTOutboxPrefix + clientID }

func newOutbox(h Hasher, clientID string, limit, maxBytes int, log Logger) *outbox {
	return &outbox{h: h, key: OutboxKey(clientID), limit: limit, max: maxBytes, wake: make(chan struct{}, 1),
		poke: make(chan struct{}, 1), behind: writeBehind, log: log}
}

// load queues what an earlier process left in the store, oldest first; an
// entry that does not decode is logged and deleted (it can never be sent).
func (o *outbox) load(log Logger) error {
	all, err := o.h.HGetAll(o.key)
	if err != nil {
		return fmt.Errorf("mqtt: reading the outbox %s: %w", o.key, err)
	}
	var bad []string
	for id, v := range all {
		m := &message{}
		if err := json.Unmarshal([]byte(v), m); err != nil || m.V != outboxVersion || m.Topic == "" {
			log.Error("mqtt: an outbox entry does not decode; deleted", "entry", id, "error", err)
			bad = append(bad, id)
			continue
		}
		m.ID, m.stored = id, true
		o.storedLocked(m, 1)
		o.queue = append(o.queue, m)
		o.bytes += m.size()
	}
	slices.SortFunc(o.queue, func(a, b *message) int {
		return cmp.Or(cmp.Compare(a.Written, b.Written), strings.Compare(a.ID, b.ID))
	})
	if len(bad) > 0 {
		if err := o.h.HDel(o.key, bad...); err != nil {
			log.Warn("mqtt: could not delete bad outbox entries", "error", err)
		}
	}
	if len(o.queue) > 0 {
		log.Info("mqtt: sending what the outbox kept", "messages", len(o.queue))
		o.kick()
	}
	return nil
}

func (o *outbox) kick() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// add writes m to the store and queues it; it returns once the store has
// it, so a kill after the step returns loses nothing.
func (o *outbox) add(m *message) error {
	wait, err := o.addLater(m)
	if err != nil {
		return err
	}
	return wait()
}

// setDeleter is a store that writes and removes many fields of a hash at
// once (one bbolt commit, one Redis MULTI): both of ruled's stores are.
type setDeleter interface {
	HSetDel(key string, fields []string, values [][]byte, del []string) error
}

// outboxWrite is the messages added while the one before was written,
// or while it waited out writeBehind: what of them the broker has not
// taken by then goes to the store together, and done closes when every
// one is taken or written (err says why not).
type outboxWrite struct {
	msgs  []*message
	vals  [][]byte // msgs' JSON
	first time.Time
	left  int // msgs neither taken nor written
	done  chan struct{}
	err   error
	over  bool // done is closed
}

// endLocked closes w's done with err, once. Under outbox.mu.
func (w *outboxWrite) endLocked(err error) {
	if !w.over {
		w.over, w.err = true, err
		close(w.done)
	}
}

// writeBehind is how long a message may wait for the broker to take it
// before the store must have it. A broker that answers sooner (a healthy
// one on the device or the LAN: well under a millisecond) takes the
// message before it is written, and it never is: no commit, no fsync.
// One that does not — away, slow, its window full — gets the outbox's
// copy, as before, this much later. So a step that publishes counts as
// done once its message is safe, with the broker or on the disk,
// whichever comes first; an outbox write with its two fsyncs was a fifth
// of ruled's CPU on the MQTT flow (issue 39).
const writeBehind = 10 * time.Millisecond

// addLater queues m, in the order of the adds, and returns at once with
// the wait that ends when m is safe: the broker took it, or the store
// has it. The sender sends it at once, in its turn on its topic. The
// writer writes what the broker has not taken writeBehind after the
// first of a batch was added: one commit and one fsync for all the
// steps that published meanwhile. A step's publish waits before its step
// counts as done (wasm.Call.Owed), and not on its worker. A write that
// fails takes its messages out of the queue (the ones not on their way
// are not sent) and fails each waiter whose message the broker had not
// taken.
//
// The writer is a goroutine of its own while there is something to
// write: it ends when a write leaves nothing behind it, and Close waits
// for it (writes).
func (o *outbox) addLater(m *message) (wait func() error, err error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("mqtt: encode: %w", err)
	}
	o.mu.Lock()
	if o.closed {
		// The Client closed while a step still ran (a stop): the message
		// goes to the store for the next start to send, written here.
		o.mu.Unlock()
		err := o.h.HSet(o.key, m.ID, b)
		return func() error {
			if err != nil {
				return fmt.Errorf("mqtt: writing to the outbox: %w", err)
			}
			return nil
		}, nil
	}
	if err := o.roomLocked(m); err != nil {
		o.mu.Unlock()
		return nil, err
	}
	w := o.next
	if w == nil {
		w = &outboxWrite{done: make(chan struct{}), first: time.Now()}
		o.next = w
	}
	m.unwritten, m.w = true, w
	o.queue = append(o.queue, m)
	w.msgs, w.vals = append(w.msgs, m), append(w.vals, b)
	w.left++
	start := !o.writing
	if start {
		o.writing = true
		o.writes.Add(1)
	}
	o.mu.Unlock()
	o.kick() // the sender: it goes now
	if start {
		go o.write()
	}
	return func() error {
		<-w.done
		if m.lost { // set before done closed
			return fmt.Errorf("mqtt: writing to the outbox: %w", w.err)
		}
		return nil
	}, nil
}

// storedLocked counts n more (or fewer) stored messages of m's topic.
func (o *outbox) storedLocked(m *message, n int) {
	if o.inStore == nil {
		o.inStore = map[string]int{}
	}
	if o.inStore[m.Topic] += n; o.inStore[m.Topic] <= 0 {
		delete(o.inStore, m.Topic)
	}
}

// roomLocked counts m's bytes against the outbox's bound, or refuses it
// (ErrOutboxFull) when the outbox holds its limit.
func (o *outbox) roomLocked(m *message) error {
	if len(o.queue)-o.gone >= o.limit || o.bytes+m.size() > o.max {
		o.refusedFull.Add(1)
		return ErrOutboxFull
	}
	o.bytes += m.size()
	return nil
}

// addMemory queues m, an at-most-once route's message, without writing
// it anywhere: the sender takes it in its turn.
func (o *outbox) addMemory(m *message) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return errClosed
	}
	if err := o.roomLocked(m); err != nil {
		o.mu.Unlock()
		return err
	}
	o.queue = append(o.queue, m)
	o.mu.Unlock()
	o.kick()
	return nil
}

// errClosed refuses an at-most-once message once the Client is closed:
// with no sender, it would only be lost later.
var errClosed = errors.New("mqtt: the client is closed")

// closeWrites is how long close waits for the write in progress.
const closeWrites = 10 * time.Second

// close ends the outbox's writing: a write in progress is waited for (at
// most closeWrites), and what is added afterwards (a step still running
// during a stop) is written on its caller's goroutine, for the next start
// to send.
func (o *outbox) close(log Logger) {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	select { // a write waiting out writeBehind writes now
	case o.poke <- struct{}{}:
	default:
	}
	done := make(chan struct{})
	go func() { o.writes.Wait(); close(done) }() // ends when the write does
	select {
	case <-done:
	case <-time.After(closeWrites):
		log.Warn("mqtt: closing with an outbox write still in progress", "waited", closeWrites)
	}
	log.Debug("mqtt: outbox closed", "published", o.sent.Load(), "written", o.written.Load(), "left", o.len())
}

// write writes what addLater queued and the broker has not taken within
// writeBehind, and removes what the broker took after it was written
// (taken), in one store write after another until none is left.
func (o *outbox) write() {
	defer o.writes.Done()
	for {
		o.mu.Lock()
		w := o.next
		if w != nil && !o.closed {
			if d := time.Until(w.first.Add(o.behind)); d > 0 {
				o.mu.Unlock()
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-o.poke: // all of it taken, or closing
				}
				t.Stop()
				continue
			}
		}
		del := o.dels
		o.next, o.dels = nil, nil
		var msgs []*message
		var ids []string
		var vals [][]byte
		if w != nil {
			// A message taken while an older one of its topic was stored
			// needs no write when this commit removes every such one: the
			// topic is clean when its wait ends (after the commit), and
			// writing it would only make another removal to wait behind —
			// under saturation nearly every message was written so.
			var cleaned map[string]int
			for _, m := range del {
				if cleaned == nil {
					cleaned = map[string]int{}
				}
				cleaned[m.Topic]++
			}
			for _, m := range w.msgs {
				if m.mustWrite && m.gone && m.unwritten && !m.stored && o.inStore[m.Topic] <= cleaned[m.Topic] {
					m.mustWrite = false
				}
			}
			for i, m := range w.msgs {
				if m.unwritten && !m.stored && (!m.gone || m.mustWrite) {
					m.stored = true
					o.storedLocked(m, 1)
					msgs, ids, vals = append(msgs, m), append(ids, m.ID), append(vals, w.vals[i])
				}
			}
		}
		if len(msgs) == 0 && len(del) == 0 {
			if w != nil {
				w.endLocked(nil) // every one taken
			}
			if o.next == nil {
				o.writing = false
				o.mu.Unlock()
				return
			}
			o.mu.Unlock()
			continue
		}
		o.mu.Unlock()
		delIDs := make([]string, len(del))
		for i, m := range del {
			delIDs[i] = m.ID
		}
		setErr, delErr := o.store(ids, vals, delIDs)
		if delErr != nil {
			if folded, ok := o.warns.Allow("remove"); ok {
				o.log.Warn("mqtt: could not remove sent messages from the outbox; tried again with the next write (a restart before that sends them again)",
					"messages", len(del), "error", delErr, "folded", folded)
			}
		}
		o.mu.Lock()
		if delErr != nil {
			o.dels = append(del, o.dels...)
		} else {
			for _, m := range del {
				m.stored = false
				o.storedLocked(m, -1)
			}
		}
		if setErr == nil {
			o.written.Add(uint64(len(msgs)))
		}
		for _, m := range msgs {
			m.w = nil
			switch {
			case setErr == nil:
				m.unwritten = false
				if m.gone {
					o.dels = append(o.dels, m) // taken while it was written
				}
			default:
				m.stored = false
				o.storedLocked(m, -1)
				if !m.gone {
					// Not sent after its step failed, unless it is on its
					// way already (the sender looks again: gone). One the
					// broker took meanwhile is safe: its waiter is not
					// failed (lost is the message's, not the write's).
					m.lost = true
					o.removeLocked(m)
				}
			}
		}
		if w != nil {
			w.endLocked(setErr) // each waiter asks whether its message was lost
		}
		if delErr != nil && len(msgs) == 0 && o.next == nil {
			// Only removals, and the store is away: the next add or
			// flush comes back to them.
			o.writing = false
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
		o.kick()
	}
}

// store writes ids' values and removes del: in one write when the store
// can (setDeleter), else one for each.
func (o *outbox) store(ids []string, vals [][]byte, del []string) (setErr, delErr error) {
	if sd, ok := o.h.(setDeleter); ok {
		err := sd.HSetDel(o.key, ids, vals, del)
		if len(del) == 0 {
			return err, nil
		}
		return err, err
	}
	for i := range ids {
		if setErr = o.h.HSet(o.key, ids[i], vals[i]); setErr != nil {
			// Its waiters fail: what was written of it must not be sent
			// after a restart either (best effort).
			if i > 0 {
				o.h.HDel(o.key, ids[:i]...)
			}
			break
		}
	}
	if len(del) > 0 {
		delErr = o.h.HDel(o.key, del...)
	}
	return setErr, delErr
}

// taken removes m, which the broker took (or refused for good), from the
// queue now and from the store with the next write: with the messages
// steps publish next, or on its own when flush says so.
//
// A message the store does not have needs no removal, and is safe now:
// its write's waiters may be done — unless an earlier message of its
// topic is stored (written, its removal not yet committed). A restart
// would send that one again after this one, and the topic would end on
// the older message (a retained state gone back). Then this one is
// written all the same (mustWrite), so that a restart sends both, in
// their order.
func (o *outbox) taken(m *message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.removeLocked(m)
	switch {
	case m.memory:
	case !m.unwritten: // the store has it
		o.dels = append(o.dels, m)
	case m.stored: // its write is on its way: the writer removes it after (gone)
	case o.inStore[m.Topic] > 0:
		m.mustWrite = true
	default:
		w := m.w
		m.w = nil
		if w == nil {
			return
		}
		if w.left--; w.left == 0 {
			w.endLocked(nil)
			if o.next == w {
				// Nothing of it left to write: what is added next waits
				// in a write of its own.
				o.next = nil
			}
			select {
			case o.poke <- struct{}{}:
			default:
			}
		}
	}
}

// flush starts a write of what taken left, when there is some and no
// write runs to take it along.
func (o *outbox) flush() {
	o.mu.Lock()
	start := len(o.dels) > 0 && !o.writing && !o.closed
	if start {
		o.writing = true
		o.writes.Add(1)
	}
	o.mu.Unlock()
	if start {
		go o.write()
	}
}

// ready returns, oldest first, up to n messages of the first scan in the
// queue that are not in flight and whose topic has none in flight (busy):
// what the sender may publish next.
func (o *outbox) ready(n, scan int, busy map[string]bool) []*message {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*message
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	seen := o.seen // a topic's oldest waiting message only
	clear(seen)
	for _, m := range o.queue[:min(scan, len(o.queue))] {
		if len(out) == n {
			break
		}
		if m.gone {
			continue
		}
		if m.flying || busy[m.Topic] || seen[m.Topic] {
			seen[m.Topic] = true
			continue
		}
		seen[m.Topic] = true
		m.flying = true
		out = append(out, m)
	}
	return out
}

// remove takes m out of the queue: the broker took it (or refused it for
// good). A message behind the head is marked gone and leaves when the
// head reaches it: it is one of the first sendScan, and cutting it out of
// a long queue would move the rest (a memmove of the queue a message).
func (o *outbox) remove(m *message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.removeLocked(m)
}

func (o *outbox) removeLocked(m *message) {
	if m.gone {
		return
	}
	m.gone = true
	o.gone++
	o.bytes -= m.size()
	for len(o.queue) > 0 && o.queue[0].gone {
		o.queue[0] = nil
		o.queue = o.queue[1:]
		o.gone--
	}
}

// land marks m no longer in flight: its publish failed, and it waits to
// be sent again.
func (o *outbox) land(m *message) {
	o.mu.Lock()
	m.flying = false
	o.mu.Unlock()
}

func (o *outbox) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.queue) - o.gone
}

// Offer sends e to the broker when a route takes its topic: it writes the
// message to the outbox and returns true once the store has it; the
// broker gets it as soon as it can take it, in the order offered. payload
// is the step's payload as published (the JSON object, without the topic
// ruled sets on the event); key is the step's idempotency key and by
// "rule/step". False: no route takes the topic (or the Client publishes
// nothing).
func (s *Client) Offer(e *bus.Event, payload []byte, key, by string) (bool, error) {
	kept, wait, err := s.OfferLater(e, payload, key, by)
	if err != nil || wait == nil {
		return kept, err
	}
	return kept, wait()
}

// OfferLater is Offer returning before the store has the message: wait
// ends when it has (its error: it could not write it, and the message
// is not sent). Until then the message is queued in the order offered
// and nothing later on its topic is sent. wait is nil when nothing was
// kept.
func (s *Client) OfferLater(e *bus.Event, payload []byte, key, by string) (kept bool, wait func() error, err error) {
	if s.out == nil {
		return false, nil, nil
	}
	var r *Route
	for i := range s.cfg.Publish {
		if s.cfg.Publish[i].Pattern.Match(e.Topic) {
			r = &s.cfg.Publish[i]
			break
		}
	}
	if r == nil {
		return false, nil, nil
	}
	topic, err := TopicOf(e.Topic)
	if err != nil {
		return true, nil, err
	}
	m := &message{V: outboxVersion, ID: bus.NewID(), Topic: topic, Payload: bytes.Clone(payload), QoS: r.QoS, Retain: r.Retain,
		Key: key, Event: e.ID, By: by, Hops: e.Hops, Trace: e.Trace, Written: time.Now().UnixNano(), memory: r.AtMostOnce}
	if m.memory {
		return true, nil, s.out.addMemory(m)
	}
	wait, err = s.out.addLater(m)
	return true, wait, err
}

// TopicOf maps a ruled topic to the MQTT topic its events are published
// on: its segments joined with "/" ("light.hall.set" → "light/hall/set").
// A segment holding an MQTT wildcard ("+", "#") or "/" has no MQTT
// counterpart.
func TopicOf(ruledTopic string) (string, error) {
	if ruledTopic == "" || strings.ContainsAny(ruledTopic, "+#/\x00") || strings.HasPrefix(ruledTopic, "$") {
		return "", fmt.Errorf("%w: %q cannot be an MQTT topic (no \"+\", \"#\", \"/\" or leading \"$\")", ErrTopic, ruledTopic)
	}
	return strings.ReplaceAll(ruledTopic, ".", "/"), nil
}

// publishTimeout bounds one publish's wait for the broker's answer; past
// it the message is sent again (the broker may then have it twice: at
// least once, as PropKey expects).
const publishTimeout = 10 * time.Second

// deleteBatch is how many sent messages the sender lets wait for the
// outbox's next write before it has them removed on their own (it does
// whenever nothing is in flight, too): a crash between a send and its
// removal sends the message again.
const deleteBatch = 64

// sendWindow is how many messages the sender has out at once, waiting
// for the broker's acknowledgement; paho holds a publish back past the
// broker's Receive Maximum (MQTT 5) itself. sendScan is how far into the
// queue it looks for a topic with nothing in flight.
const (
	sendWindow = 64
	sendScan   = 4 * sendWindow
)

// flown is a publish's answer.
type flown struct {
	m   *message
	pr  *paho.PublishResponse
	err error
}

// send is the sender: it publishes the outbox's messages oldest first,
// up to sendWindow at once but one at a time on each topic — MQTT keeps
// the order of one client's messages on a topic (MQTT 5, 4.6: ordered
// topics) and says nothing across topics, so the outbox keeps each
// topic's order, across reconnects too (its one message in flight is
// sent again before the next), and messages on different topics overtake
// each other. A message the broker refuses for good (not authorized, a
// topic it does not accept) is logged, counted and dropped so that it
// does not hold back the rest; one it refuses for now (quota) and one
// lost with the connection are sent again after a backoff. It runs until
// Close; each publish it started ends with its answer, at most
// publishTimeout, or at once when Close cancels it.
func (s *Client) send() {
	defer close(s.sendDone)
	defer s.out.flush()
	answers := make(chan flown, sendWindow)
	busy := map[string]bool{} // topics with a message in flight
	flying, taken := 0, 0
	attempt := 0
	var hold <-chan time.Time // after a failure: nothing new is sent until it fires
	for {
		if hold == nil && flying < sendWindow {
			if ms := s.out.ready(sendWindow-flying, sendScan, busy); len(ms) > 0 {
				if err := s.pub.AwaitConnection(s.ctx); err != nil {
					return
				}
				for _, m := range ms {
					busy[m.Topic] = true
					flying++
					go func() {
						if s.out.isGone(m) { // its write failed while the connection was awaited
							answers <- flown{m: m, err: errGone}
							return
						}
						ctx, cancel := context.WithTimeout(s.ctx, publishTimeout)
						defer cancel()
						pr, err := s.pub.Publish(ctx, s.publish(m))
						answers <- flown{m, pr, err}
					}()
				}
			}
		}
		if flying == 0 && hold == nil {
			s.out.flush()
		}
		var a flown
		select {
		case <-s.ctx.Done():
			return
		case <-hold:
			hold = nil
			continue
		case <-s.out.wake:
			continue
		case a = <-answers:
		}
		flying--
		delete(busy, a.m.Topic)
		m, pr, err := a.m, a.pr, a.err
		refused := pr != nil && pr.ReasonCode >= 0x80 // paho answers a QoS 2 refusal (PUBREC) without an error
		if err == errGone {
			continue
		}
		switch {
		case err == nil && !refused:
			s.out.sent.Add(1)
		case s.ctx.Err() != nil:
			return
		case refused && !transient(pr.ReasonCode):
			s.out.rejected.Add(1)
			reason := ""
			if pr.Properties != nil {
				reason = pr.Properties.ReasonString
			}
			s.log.Error("mqtt: the broker refused a message; dropped", "topic", m.Topic, "by", m.By, "key", m.Key,
				"reason", fmt.Sprintf("0x%02x %s", pr.ReasonCode, reason))
		case errors.Is(err, paho.ErrInvalidArguments):
			// What this broker can never take (a QoS above its maximum,
			// retain it does not support): sending it again would hold
			// back everything behind it forever.
			s.out.rejected.Add(1)
			s.log.Error("mqtt: the broker cannot take this message; dropped", "topic", m.Topic, "by", m.By, "key", m.Key, "error", err)
		default:
			s.out.land(m)
			if hold == nil {
				attempt++
				d := reconnectBackoff(min(attempt, 6))
				s.log.Warn("mqtt: publishing failed; sending again", "topic", m.Topic, "after", d, "error", err)
				hold = time.After(d)
			}
			continue
		}
		if hold == nil {
			attempt = 0
		}
		s.out.taken(m)
		if taken++; taken%deleteBatch == 0 {
			s.out.flush()
		}
	}
}

// errGone answers a message that left the queue before it was published.
var errGone = errors.New("mqtt: gone from the outbox before it was sent")

// isGone reports whether m left the queue: its write failed, and it is
// not to be sent.
func (o *outbox) isGone(m *message) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return m.gone
}

// transient reports whether a PUBACK reason code refuses a message for
// now only: 0x97 quota exceeded, 0x91 packet identifier in use.
func transient(code byte) bool { return code == 0x97 || code == 0x91 }

func (s *Client) publish(m *message) *paho.Publish {
	props := &paho.PublishProperties{ContentType: "application/json", User: paho.UserProperties{
		{Key: PropEvent, Value: m.Event}, {Key: PropOrigin, Value: s.cfg.ClientID}}}
	if m.Key != "" {
		props.User = append(props.User, paho.UserProperty{Key: PropKey, Value: m.Key})
	}
	if m.Hops > 0 {
		props.User = append(props.User, paho.UserProperty{Key: PropHops, Value: strconv.Itoa(m.Hops)})
	}
	if m.By != "" {
		props.User = append(props.User, paho.UserProperty{Key: PropBy, Value: m.By})
	}
	if tp := traceparent.Canonical(m.Trace); tp != "" { // W3C trace context: the consumer's span goes under the step's (as written, unless the store's copy was changed)
		props.User = append(props.User, paho.UserProperty{Key: traceparent.Header, Value: tp})
	}
	return &paho.Publish{Topic: m.Topic, Payload: m.Payload, QoS: m.QoS, Retain: m.Retain, Properties: props}
}
