package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/wasm"
)

// publisher puts a plugin's event on the bus, like any other event: it is
// decoded (so it gets an id and a time), then taken as ingest takes one —
// journaled first when it triggers a durable rule (fromPlugin).
type publisher struct{ d *Daemon }

func (p publisher) Publish(ctx context.Context, from wasm.Origin, topic string, payload []byte) error {
	e, err := p.d.dec.Decode(withTopic(topic, payload))
	if err != nil {
		return guestStatus(err)
	}
	p.d.markOrigin(e, from)
	if p.d.bus == nil {
		// Start holds the workers until the bus is open; a call made
		// before that (none should be) is told so, not a nil bus.
		return errors.New("the bus is not open yet") // StatusUnavailable
	}
	return p.d.ingest(e, fromPlugin)
}

// guestStatus is the status a plugin's publish or fire gets for an event
// the decoder refused: too large (over the event size limit: a 300 KB
// payload was "denied"), or denied for anything else (a reserved topic, a
// control character).
func guestStatus(err error) error {
	if bus.ReasonOf(err) == bus.ReasonTooLarge {
		return fmt.Errorf("%w: %v", wasm.ErrTooLarge, err)
	}
	return fmt.Errorf("%w: %v", wasm.ErrDenied, err)
}

// withTopic sets an event's "topic" to topic: a plugin names the topic
// separately from the payload (ABI.md, publish), and a payload that carries
// a topic of its own (a trigger passed on as it is) gets the new one.
func withTopic(topic string, payload []byte) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	m["topic"] = abi.AppendJSONString(nil, topic)
	b, _ := json.Marshal(m)
	return b
}

// firer starts another rule's run for a plugin's fire host call.
type firer struct{ d *Daemon }

func (f firer) Fire(ctx context.Context, from wasm.Origin, rule string, payload []byte) (string, error) {
	s := f.d.Current(rule)
	if s == nil {
		return "", fmt.Errorf("%w: rule %q", wasm.ErrNotFound, rule)
	}
	e, err := f.d.dec.Decode(withTopic("fire."+rule, payload))
	if err != nil {
		return "", guestStatus(err)
	}
	id := seq.NewRunID()
	parent := ""
	if from.Info != nil {
		parent = from.Info.Run
	}
	f.d.runner.Fire(seq.Trigger{Seq: s, Event: e, RunID: id, Parent: parent})
	return id, nil
}

func (d *Daemon) kvService() wasm.KV {
	if d.redis != nil {
		return quotaKV{d.redis}
	}
	return quotaKV{d.bolt}
}

// quotaKV is the store's kv as the wasm host's KV: a write the store
// refused for its quota (store.ErrQuota) reaches the guest as
// StatusTooLarge (wasm.ErrTooLarge). The two packages know nothing of
// each other; this is where they meet.
type quotaKV struct{ wasm.KV }

func (q quotaKV) Set(ctx context.Context, scope, key string, value []byte) error {
	err := q.KV.Set(ctx, scope, key, value)
	if errors.Is(err, store.ErrQuota) {
		return overQuota{err}
	}
	return err
}

// overQuota is a store's quota error that is also wasm.ErrTooLarge, its
// text the store's own.
type overQuota struct{ error }

func (e overQuota) Is(target error) bool { return target == wasm.ErrTooLarge }
func (e overQuota) Unwrap() error        { return e.error }

// openBus subscribes the dispatcher to the in-process bus, or to Redis.
func (d *Daemon) openBus(ctx context.Context) error {
	if d.redis == nil {
		local := &bus.Local{}
		d.sub = local.Subscribe(d.dispatch)
		d.bus = local
		d.closers = append(d.closers, func() error { d.sub(); return nil })
		return nil
	}
	// On a cluster, go-redis publishes and subscribes a channel on the
	// node serving its slot, so a publish still counts its receivers.
	rb := bus.NewRedis(d.redis.Client(), bus.RedisConfig{Decoder: d.dec, Counters: &d.busIn, Logger: d.log.Named("bus"),
		Resumed: d.busResumed})
	subCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sub, err := rb.Subscribe(subCtx, d.dispatchBus)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.bus = rb
	if d.cfg.Shards == 0 {
		d.busSub = sub // a fleet accepts through its stream, not pub/sub
	}
	d.closers = append(d.closers, sub.Close)
	subCtx, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	d.ctl = rb
	ctl, err := rb.SubscribeControl(subCtx, d.control)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.closers = append(d.closers, ctl.Close)
	return nil
}

// dispatchBus is the Redis subscription's handler. An event from pub/sub
// has no client to answer "busy, retry later": while the worker queue is
// full the subscription waits for room — Redis buffers what arrives
// meanwhile — rather than have the event's triggers refused. (Past Redis's
// client-output-buffer-limit for pub/sub it drops the subscriber: a loss
// the subscription logs, as for any lost connection; package bus.)
func (d *Daemon) dispatchBus(e *bus.Event) {
	if d.member == nil {
		if n := len(d.ruleSnap().Index().Triggered(e.Topic)); n > 0 && !d.pool.Fits(n) {
			d.pool.WaitRoom(n, d.quit)
		}
	}
	d.dispatchAs(e, nil, true)
}

var _ wasm.KV = (*store.Bolt)(nil)
var _ wasm.KV = (*store.Redis)(nil)
