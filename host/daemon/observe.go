package daemon

import (
	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/host/seq"
)

// Tap calls fn with every event the daemon dispatches, in either bus mode,
// until cancel. fn runs on the dispatching goroutine: it must not block.
func (d *Daemon) Tap(fn func(observe.Seen)) (cancel func()) { return d.taps.Tap(fn) }

// observe wraps st's action when the config asks to see action calls.
func (d *Daemon) observe(st *seq.CompiledStep, with []byte) {
	if d.cfg.ObserveAction == nil {
		return
	}
	st.Action = observe.Action(st.Action, st.Do, st.Digest, with, d.cfg.ObserveAction)
}
