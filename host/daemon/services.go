package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/wasm"
)

// publisher and firer are the plugins' publish and fire (ingest's): the
// runtime is built before ingest is, and no plugin should call either
// before Start has set d.in (the workers are held until then).
type publisher struct{ d *Daemon }

func (p publisher) Publish(ctx context.Context, from wasm.Origin, topic string, payload []byte) error {
	if p.d.in == nil {
		return errNotOpen // StatusUnavailable
	}
	return p.d.in.Publish(ctx, from, topic, payload)
}

type firer struct{ d *Daemon }

func (f firer) Fire(ctx context.Context, from wasm.Origin, rule string, payload []byte) (string, error) {
	if f.d.in == nil {
		return "", errNotOpen
	}
	return f.d.in.Fire(ctx, from, rule, payload)
}

// errNotOpen answers a plugin's publish or fire before Start has built
// ingest: none should come (the workers are held), but one that does is
// told so, not a nil pointer.
var errNotOpen = errors.New("the bus is not open yet")

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
		if d.cfg.SeeEvents != nil {
			local.Subscribe(d.cfg.SeeEvents) // for the daemon's life: the bus goes with it
		}
		// Ingest dispatches what it takes itself, after the bus's
		// subscribers (ConnectLocal): it is not one of them.
		d.bus, d.local = local, true
		d.in.ConnectLocal(local)
		return nil
	}
	// On a cluster, go-redis publishes and subscribes a channel on the
	// node serving its slot, so a publish still counts its receivers.
	rb := bus.NewRedis(d.redis.Client(), bus.RedisConfig{Decoder: d.decoder, Counters: &d.busIn, Logger: d.log.Named("bus"),
		Resumed: d.in.Resumed})
	subCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sub, err := rb.Subscribe(subCtx, d.in.DispatchWaiting)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.bus = rb
	if d.cfg.Shards == 0 {
		d.busSub = sub // a fleet accepts through its stream, not pub/sub
		d.in.Connect(rb, sub.Live, nil)
	}
	d.closers = append(d.closers, sub.Close)
	subCtx, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	d.control = rb
	ctl, err := rb.SubscribeControl(subCtx, d.onControl)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.closers = append(d.closers, ctl.Close)
	return nil
}

var _ wasm.KV = (*store.Bolt)(nil)
var _ wasm.KV = (*store.Redis)(nil)
