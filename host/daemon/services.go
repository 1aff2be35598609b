package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/wasm"
)

// publisher puts a plugin's event on the bus, like any other event: it is
// decoded (so it gets an id and a time), then published.
type publisher struct{ d *Daemon }

func (p publisher) Publish(ctx context.Context, from wasm.Origin, topic string, payload []byte) error {
	e, err := p.d.dec.Decode(withTopic(topic, payload))
	if err != nil {
		return fmt.Errorf("%w: %v", wasm.ErrDenied, err)
	}
	p.d.markOrigin(e, from)
	if p.d.stream != nil {
		return p.d.acceptFleet(ctx, e)
	}
	return p.d.bus.Publish(ctx, e)
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
		return "", fmt.Errorf("%w: %v", wasm.ErrDenied, err)
	}
	id := seq.NewRunID()
	parent := ""
	if from.Info != nil {
		parent = from.Info.Run
	}
	f.d.runner.FireFrom(s, e, id, parent)
	return id, nil
}

func (d *Daemon) kvService() wasm.KV {
	if d.redis != nil {
		return d.redis
	}
	return d.bolt
}

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
	rb := bus.NewRedis(d.redis.Client(), bus.RedisConfig{Decoder: d.dec, Counters: &d.busIn, Logger: d.log.Named("bus")})
	subCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sub, err := rb.Subscribe(subCtx, d.dispatch)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.bus = rb
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

var _ wasm.KV = (*store.Bolt)(nil)
var _ wasm.KV = (*store.Redis)(nil)
