package wasm

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Slot is a named plugin whose module can be replaced while it serves: hot
// reload swaps the slot's module, and every handle configured through the
// slot moves to the new module with its next call. Calls in flight finish
// on the module they started on; the caller closes the replaced module,
// which drains (idle instances close at once, busy ones when their call
// returns).
//
// A handle configured on a Module directly (Module.Configure) stays on that
// module: that is how a waiting step pinned to an older digest runs it.
type Slot struct {
	cur atomic.Pointer[Module]
}

// NewSlot returns a slot serving m.
func NewSlot(m *Module) *Slot {
	s := &Slot{}
	s.cur.Store(m)
	return s
}

// Module is the slot's current module.
func (s *Slot) Module() *Module { return s.cur.Load() }

// Swap installs m and returns the module it replaced. The caller closes
// the old module once it has no more use for it.
func (s *Slot) Swap(m *Module) *Module { return s.cur.Swap(m) }

// Configure checks fn and its config on the current module and returns a
// handle that follows the slot.
func (s *Slot) Configure(ctx context.Context, fn string, configJSON []byte) (*Handle, error) {
	h, err := s.Module().Configure(ctx, fn, configJSON)
	if err != nil {
		return nil, err
	}
	h.slot = s
	return h, nil
}

// Prepare configures h on an instance of m, a module about to replace h's
// slot's current one: it checks that m still accepts h's function and
// config, and it warms m, so the first calls after the swap do not pay for
// configuring. The handle keeps its identity, so the configured guest
// handle is the one its calls will use.
func (h *Handle) Prepare(ctx context.Context, m *Module) error {
	if k, ok := m.funcs[h.fn]; !ok || k != h.kind {
		return fmt.Errorf("wasm: plugin %s (%s) has no %s %q", m.name, m.digest[:12], h.kind, h.fn)
	}
	in, err := m.acquire(ctx)
	if err != nil {
		return err
	}
	defer m.release(in)
	_, err = in.configure(ctx, h)
	return err
}
