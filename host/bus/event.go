package bus

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ruled-dev/ruled/abi"
)

// ReservedPrefix starts the topics ruled keeps for itself
// (ruled.cmd.<rule>, ruled.triggers.changed). Ingest and plugins may not
// publish to them, and no wildcard matches them.
const ReservedPrefix = "ruled."

// DefaultMaxEventSize bounds an event's JSON. default for Decoder.MaxSize.
const DefaultMaxEventSize = 256 << 10

// Event is one event on the bus: a JSON object with a string "topic", and
// optionally a string "id" and an RFC 3339 "time". It is decoded once, when it
// is accepted, into the view every rule it triggers reads (abi.View), so a
// hundred rules on one event cost one decode.
//
// An Event is immutable once decoded: share it, never modify it.
type Event struct {
	ID    string
	Topic string
	Time  time.Time
	// Raw is the event's JSON as it arrived.
	Raw []byte
	// View is Raw decoded for guests (abi.AppendJSONView, without raw).
	View []byte
	// Key is the source's identity of the message the event came from,
	// the same for each delivery of it (an MQTT message: its topic, packet
	// id and payload), kept with the event in the journal so that a
	// redelivery of a message already accepted is known (mqtt); "": none.
	Key string
	// Hops is how many steps' publishes and fires led to the event: 0 for
	// one from outside (HTTP, MQTT from a device, a schedule), the run's
	// trigger's Hops + 1 for one a step publishes or fires. It travels in
	// pending records, the journal, the Redis bus and MQTT, so a loop of
	// rules meets MaxHops however it goes round (issue 38: a rule that
	// published its own trigger ran 850,640 runs in 20 s).
	Hops int
	// Chain names the rules that led to the event, oldest first, joined by
	// " → ", at most MaxHops of them: for the message that refuses a loop.
	// Kept in memory only; "" after a restart or from another process.
	Chain string
	// Prior is the state the event's entity had before it (host/state),
	// as JSON: what a rule reads as previous. Set on a copy of the event
	// for the rules that read it (ingest's dispatch); nil: none, or not
	// asked for. A run keeps it in its records.
	Prior []byte
	// Trace is the W3C traceparent the event came with (an HTTP header, an
	// MQTT 5 user property, the step that published or fired it), in its
	// canonical 55 bytes (traces.Canonical), or "": the run it triggers is
	// a span of that trace. It travels in pending records, the journal and
	// MQTT.
	Trace string
}

// MaxHops is the most steps' publishes and fires that may lead to an
// event: a publish or fire past it is refused, naming the rules of the
// chain. Sixteen is deeper than any chain of rules written on purpose
// (a device's automations chain two or three) and stops a loop after a
// handful of runs.
const MaxHops = 16

// HopsError is a publish or fire refused at MaxHops.
type HopsError struct {
	Hops  int    // the refused event's
	Chain string // the rules that led to it, as Event.Chain
}

func (e *HopsError) Error() string {
	chain := e.Chain
	if chain == "" {
		chain = "(the chain was not kept across a restart or another process)"
	}
	return fmt.Sprintf("a loop of rules? this event would be %d steps' publishes or fires from outside, past the limit of %d: %s (a rule meant to run again and again is a schedule: on: {every: 1m})", e.Hops, MaxHops, chain)
}

// ChainOf is the chain of an event that rule publishes or fires from a
// run triggered by one of chain: rule appended, the oldest dropped past
// MaxHops.
func ChainOf(chain, rule string) string {
	if chain == "" {
		return rule
	}
	parts := strings.Split(strings.TrimPrefix(chain, "… → "), " → ")
	cut := len(parts) >= MaxHops || strings.HasPrefix(chain, "… → ")
	if len(parts) >= MaxHops {
		parts = parts[len(parts)-(MaxHops-1):]
	}
	chain = strings.Join(append(parts, rule), " → ")
	if cut {
		chain = "… → " + chain
	}
	return chain
}

// Reason says why an event was rejected. Ingest counts rejections by it.
type Reason string

const (
	ReasonNotJSON  Reason = "not json"
	ReasonNotObj   Reason = "not an object"
	ReasonNoTopic  Reason = "no topic"
	ReasonReserved Reason = "reserved topic"
	ReasonTooLarge Reason = "too large"
	ReasonBadField Reason = "bad field"
)

// Rejection is an event refused at ingest, with the reason and a detail a
// person can act on.
type Rejection struct {
	Reason Reason
	Detail string
}

func (r *Rejection) Error() string {
	if r.Detail == "" {
		return "event rejected: " + string(r.Reason)
	}
	return "event rejected: " + string(r.Reason) + ": " + r.Detail
}

// ReasonOf returns the reason of a *Rejection, "" for other errors.
func ReasonOf(err error) Reason {
	var r *Rejection
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

// NoID is a Decoder.IDField that takes no field for the event's identity:
// it is made up (NewID), and the payload's fields are all data.
const NoID = "-"

// MaxIDLen bounds an event's id: it names runs' triggers, journal entries
// and log lines, and arrives from whoever sends the event.
const MaxIDLen = 256

// Decoder turns bytes into Events. The zero Decoder is ready to use; it is
// safe for concurrent use.
type Decoder struct {
	// MaxSize bounds an event's JSON in bytes. default: DefaultMaxEventSize.
	MaxSize int
	// Now stamps events that carry no "time". default: time.Now.
	Now func() time.Time
	// IDField is the top-level field an event's identity is read from:
	// "" is "id", which must then be a string (ruled's own events, HTTP,
	// the events file). A source whose payloads are a device's (MQTT)
	// names a field of its own, whose string or number is the identity,
	// or NoID: the identity is made up, and every field stays data — a
	// device's {"id": 17} is its own, not the event's (issue 37, 10). For
	// such a source a "time" that is not RFC 3339 stays data too, and the
	// event is dated when it arrives.
	IDField string

	builders sync.Pool // *abi.ViewBuilder
}

// Decode checks and decodes one event. The JSON is copied: the caller may
// reuse b.
func (d *Decoder) Decode(b []byte) (*Event, error) { return d.decode(b, d.IDField, "") }

// DecodeAs is Decode for an event whose identity, when it names none, is
// id rather than a random one: a step's publish (StepEventID).
func (d *Decoder) DecodeAs(b []byte, id string) (*Event, error) { return d.decode(b, d.IDField, id) }

// decode is Decode with the identity read from idField (Decoder.IDField),
// else fallback, else a new one.
func (d *Decoder) decode(b []byte, idField, fallback string) (*Event, error) {
	max := d.MaxSize
	if max <= 0 {
		max = DefaultMaxEventSize
	}
	b = bytes.TrimSpace(b)
	if len(b) > max {
		return nil, &Rejection{ReasonTooLarge, fmt.Sprintf("%d bytes, over the limit of %d", len(b), max)}
	}
	vb, _ := d.builders.Get().(*abi.ViewBuilder)
	if vb == nil {
		vb = &abi.ViewBuilder{}
	}
	view, err := vb.Append(nil, b, false)
	d.builders.Put(vb)
	if err != nil {
		return nil, &Rejection{ReasonNotJSON, err.Error()}
	}
	v, _ := abi.ParseView(view)
	if root, _ := v.Find(""); root.Kind() != abi.ValueObject {
		return nil, &Rejection{ReasonNotObj, "an event is a JSON object, not " + article(root.Kind().String())}
	}
	e := &Event{Raw: bytes.Clone(b), View: view}
	topic, ok := v.Find("topic")
	t, isStr := topic.Str()
	if !ok || !isStr || len(t) == 0 {
		return nil, &Rejection{ReasonNoTopic, `an event needs a string "topic"`}
	}
	e.Topic = string(t)
	if err := CheckTopic(e.Topic); err != nil {
		return nil, err
	}
	switch idField {
	case "":
		if x, ok := v.Find("id"); ok {
			s, isStr := x.Str()
			if !isStr {
				return nil, &Rejection{ReasonBadField, `"id" must be a string: it is the event's identity, which names its runs; a device's own id goes under another name (device: 17)`}
			}
			e.ID = string(s)
		}
	case NoID:
	default:
		// A path, not only a top-level key: Find takes dots.
		if x, ok := v.Find(idField); ok {
			if s, isStr := x.Str(); isStr {
				e.ID = string(s)
			} else if f, isNum := x.Float(); isNum {
				e.ID = strconv.FormatFloat(f, 'f', -1, 64)
			}
		}
	}
	if len(e.ID) > MaxIDLen {
		return nil, &Rejection{ReasonBadField, fmt.Sprintf("the event's id is %d bytes, over %d", len(e.ID), MaxIDLen)}
	}
	if e.ID == "" {
		e.ID = fallback
	}
	if e.ID == "" {
		e.ID = NewID()
	}
	if x, ok := v.Find("time"); ok {
		s, isStr := x.Str()
		at, err := time.Parse(time.RFC3339Nano, string(s))
		switch {
		case isStr && err == nil:
			e.Time = at
		case idField == "":
			return nil, &Rejection{ReasonBadField, `"time" must be an RFC 3339 string (2026-12-07T09:30:00Z): it is the event's time; a device's own (epoch seconds) goes under another name (ts: 1700000000)`}
		default:
			// A device's own "time" (epoch seconds, say) stays data; the
			// event is dated when it arrived.
			e.Time = d.now()
		}
	} else if d.Now != nil {
		e.Time = d.Now()
	} else {
		e.Time = time.Now()
	}
	return e, nil
}

func (d *Decoder) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// CheckTopic refuses topics ingest and plugins may not publish to: empty,
// reserved, or with empty segments or wildcard characters.
func CheckTopic(topic string) error {
	switch {
	case topic == "":
		return &Rejection{Reason: ReasonNoTopic}
	case len(topic) >= len(ReservedPrefix) && strings.EqualFold(topic[:len(ReservedPrefix)], ReservedPrefix):
		// Any case: RULED.cmd.x is not a way around the reservation.
		return &Rejection{ReasonReserved, fmt.Sprintf("%q: topics under %q are ruled's own", topic, ReservedPrefix)}
	case len(topic) > 256:
		return &Rejection{ReasonBadField, "topic longer than 256 bytes"}
	case !utf8.ValidString(topic):
		return &Rejection{ReasonBadField, fmt.Sprintf("topic %q is not valid UTF-8", topic)}
	case strings.ContainsAny(topic, "*> \t\n"):
		return &Rejection{ReasonBadField, fmt.Sprintf("topic %q holds a wildcard or space", topic)}
	case strings.ContainsFunc(topic, unprintable):
		// A topic ends up in logs, the console and MQTT: no NUL, CR, ESC
		// or line separator may forge a line there.
		return &Rejection{ReasonBadField, fmt.Sprintf("topic %q holds a control or separator character", topic)}
	case strings.HasPrefix(topic, ".") || strings.HasSuffix(topic, ".") || strings.Contains(topic, ".."):
		return &Rejection{ReasonBadField, fmt.Sprintf("topic %q has an empty segment", topic)}
	}
	return nil
}

// unprintable is a character a topic must not hold: a control character
// (C0, DEL, C1), or a line or paragraph separator (U+2028, U+2029), which
// some readers take for a new line.
func unprintable(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError
}

// NewID returns a random 16-byte hex id, for events and runs.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// StepEventID is the id of the nth event (from 0) a step's call
// publishes, its idempotency key being key: the same when the step runs
// again, so that a consumer that drops repeats by event id (another
// ruled does, by its ruled-event property) drops a re-run's as it would
// by the key. 32 hex digits, as NewID's.
func StepEventID(key string, n int) string {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(n), 10))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Rebuild returns an event as a Decoder first made it — its id, topic,
// time and JSON, its view decoded again — from what a store kept of it
// (a pending record, a journal entry, an ingest stream entry).
func Rebuild(id, topic string, at time.Time, raw []byte) (*Event, error) {
	view, err := abi.AppendJSONView(nil, raw, false)
	if err != nil {
		return nil, err
	}
	return &Event{ID: id, Topic: topic, Time: at, Raw: raw, View: view}, nil
}

// article puts "a" or "an" before a kind's name (an array, a string).
func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
