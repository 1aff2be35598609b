package ingest

import (
	"context"
	"fmt"
	"strings"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// Publish is a plugin's publish host call (wasm.Publisher): the event is
// decoded like any other (so it gets an id and a time), then taken as
// Take takes one — journaled first when it triggers a durable rule
// (FromPlugin).
func (in *Ingest) Publish(ctx context.Context, from wasm.Origin, topic string, payload []byte) error {
	// A step's event is named by its key and its place among the call's
	// publishes, unless the payload names it: the same id when the step
	// runs again (a retry, a replay after a kill).
	id := ""
	if from.Info != nil && from.Info.Key != "" {
		if n := from.NextPublish(); n >= 0 {
			id = bus.StepEventID(from.Info.Key, n)
		}
	}
	e, err := in.cfg.Decoder.DecodeAs(withTopic(topic, payload), id)
	if err != nil {
		return GuestError(topic, err)
	}
	if err := in.hop(e, from); err != nil {
		return err
	}
	in.markOrigin(e, from)
	onBus := func() error {
		if err := in.Take(e, FromPlugin); err != nil {
			return err
		}
		from.Note("published", e.Topic, string(e.Raw))
		return nil
	}
	if o := in.outbox.Load(); o != nil {
		key, by := "", ""
		if from.Info != nil {
			key, by = from.Info.Key, from.Info.Rule+"/"+from.Info.Step
		}
		// Kept for the broker before the bus has it: a step whose publish
		// the outbox refused, or could not write, fails
		// (StatusUnavailable) and no rule has seen its event; one that is
		// run again sends it again under the same key. The step is done,
		// and the bus has the event, once the store has it: its caller
		// waits for that when it can (Origin.Owe), this call when not.
		_, wait, err := (*o).OfferLater(e, payload, key, by)
		if err != nil {
			return err
		}
		if wait != nil {
			then := func() error {
				if err := wait(); err != nil {
					return err
				}
				return onBus()
			}
			if from.Owe(then) {
				return nil
			}
			return then()
		}
	}
	return onBus()
}

// Outbox is where a step's publish also goes beyond ruled (mqtt.Client):
// OfferLater keeps it until the far side has it when a route takes its
// topic (true), and wait returns once it is kept (nil: nothing kept).
type Outbox interface {
	OfferLater(e *bus.Event, payload []byte, key, by string) (kept bool, wait func() error, err error)
}

// SendOut hands Ingest the outbox of a step's publishes, before the
// workers are released: from then on every publish is offered to it.
func (in *Ingest) SendOut(o Outbox) { in.outbox.Store(&o) }

// Fire is a plugin's fire host call (wasm.Firer): it starts a run of
// another rule, a sub-run of the calling step's run, and returns its id.
func (in *Ingest) Fire(ctx context.Context, from wasm.Origin, rule string, payload []byte) (string, error) {
	s := in.cfg.Rules.Current().Rule(rule)
	if s == nil {
		return "", fmt.Errorf("%w: rule %q", wasm.ErrNotFound, rule)
	}
	e, err := in.cfg.Decoder.Decode(withTopic("fire."+rule, payload))
	if err != nil {
		return "", guestStatus(err)
	}
	if err := in.hop(e, from); err != nil {
		return "", err
	}
	id := seq.NewRunID()
	parent := ""
	if from.Info != nil {
		parent = from.Info.Run
	}
	in.cfg.Runner.Fire(seq.Trigger{Seq: s, Event: e, RunID: id, Parent: parent})
	return id, nil
}

var (
	_ wasm.Publisher = (*Ingest)(nil)
	_ wasm.Firer     = (*Ingest)(nil)
)

// hop makes e, published or fired by a step of a run triggered by an
// event of from.Hops(), one hop further, and refuses it past bus.MaxHops:
// a rule publishing its own trigger, two rules triggering each other or a
// rule firing itself ran ~40,000 runs a second for as long as it was
// left (issue 38). The refusal fails the step (the guest gets
// StatusDenied with the chain), is counted and is logged at most once a
// second per rule.
func (in *Ingest) hop(e *bus.Event, from wasm.Origin) error {
	rule := ""
	if from.Info != nil {
		rule = from.Info.Rule
	}
	e.Hops = from.Hops() + 1
	e.Chain = bus.ChainOf(from.Chain(), rule)
	e.Trace = from.Trace() // the run it triggers is a span under the step's
	if e.Hops <= bus.MaxHops {
		return nil
	}
	in.loops.Add(1)
	err := &bus.HopsError{Hops: e.Hops, Chain: e.Chain}
	if folded, ok := in.warns.Allow("hops " + rule); ok {
		in.log.Warn("a loop of rules? a step's publish or fire refused at the hop limit", "rule", rule,
			"limit", bus.MaxHops, "chain", e.Chain, "folded", folded, "next-log-within", lograte.Every.String())
	}
	return fmt.Errorf("%w: %v", wasm.ErrDenied, err)
}

// Loops is how many steps' publishes and fires were refused at the hop
// limit (bus.MaxHops).
func (in *Ingest) Loops() uint64 { return in.loops.Load() }

// markOrigin notes that a plugin published e from a step, while someone
// watches.
func (in *Ingest) markOrigin(e *bus.Event, from wasm.Origin) {
	if !in.cfg.Taps.Watching() || from.Info == nil {
		return
	}
	by := from.Info.Rule
	if from.Info.Step != "" {
		by += "/" + from.Info.Step
	}
	in.cfg.Taps.Published(e.ID, by)
}

// guestStatus is the status a plugin's publish or fire gets for an event
// the decoder refused: too large (over the event size limit: a 300 KB
// payload was "denied"), denied for a reserved topic, and bad input for
// anything else (an empty segment, a control character, not an object):
// "denied" read as a missing grant.
func guestStatus(err error) error {
	switch bus.ReasonOf(err) {
	case bus.ReasonTooLarge:
		return fmt.Errorf("%w: %v", wasm.ErrTooLarge, err)
	case bus.ReasonReserved:
		return fmt.Errorf("%w: %v", wasm.ErrDenied, err)
	}
	return fmt.Errorf("%w: %v", wasm.ErrBadInput, err)
}

// GuestError is what a plugin's publish to topic gets for the decoder's
// refusal err (guestStatus), with a hint when an empty segment is most
// likely a template's placeholder naming a field the event lacks
// (alerts.{{vehicle}} over an event with no vehicle). ruled call uses it
// too, so a call and the daemon say the same.
func GuestError(topic string, err error) error {
	if strings.HasSuffix(topic, ".") || strings.HasPrefix(topic, ".") || strings.Contains(topic, "..") {
		err = fmt.Errorf("%w (a {{placeholder}} in the topic naming a field the event lacks?)", err)
	}
	return guestStatus(err)
}

// withTopic sets an event's "topic" to topic: a plugin names the topic
// separately from the payload (ABI.md, publish), and a payload that carries
// a topic of its own (a trigger passed on as it is) gets the new one.
//
// The topic goes in as the first member and the payload's bytes follow
// as they are, its own "topic" left out (bus.WithMembers): decoding it
// into a map and encoding the map again was 2% of a publishing flow's CPU
// (issue 39). One that is not shaped as an object (none should come
// here) leaves the topic alone.
//
// It does not check the payload is JSON: the host function did
// (wasm.hostPublish), and the decoder checks the event it builds, so a
// third parse bought nothing (issue 40, part 5). What is not JSON comes
// out not JSON, and Publish refuses it.
func withTopic(topic string, payload []byte) []byte {
	if b, ok := bus.WithMembers(payload, bus.Member{Name: "topic", Value: abi.AppendJSONString(nil, topic)}); ok {
		return b
	}
	return append(abi.AppendJSONString([]byte(`{"topic":`), topic), '}')
}
