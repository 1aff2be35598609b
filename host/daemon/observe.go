package daemon

import (
	"github.com/ruled-dev/ruled/host/observe"
)

// Tap calls fn with every event the daemon dispatches, in either bus mode,
// until cancel. fn runs on the dispatching goroutine: it must not block.
func (d *Daemon) Tap(fn func(observe.Seen)) (cancel func()) { return d.taps.Tap(fn) }
