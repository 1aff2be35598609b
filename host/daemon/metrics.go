package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Alive reports whether the engine answers (engine.Engine.Alive): what a
// watchdog asks.
func (d *Daemon) Alive(ctx context.Context) error {
	if d.eng == nil {
		return errors.New("not started")
	}
	return d.eng.Alive(ctx)
}

// Ready is nil once Start is done (plugins, rules and states loaded,
// waiting steps replayed, the bus subscribed) and while the store answers;
// otherwise the reason not to send work (api.Engine: GET /readyz; `ruled
// run` tells systemd READY=1 the first time it is nil).
func (d *Daemon) Ready(ctx context.Context) error {
	if !d.ready.Load() {
		return errors.New("starting or stopping")
	}
	if d.redis != nil {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := d.redis.Client().Ping(ctx).Err(); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	if d.busSub != nil && !d.busSub.Live() {
		// Redis answers, but this process's subscription is not back yet:
		// an event accepted now would not reach its rules.
		return errors.New("the bus subscription is down (Redis reconnecting)")
	}
	return nil
}
