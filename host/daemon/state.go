package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/hold"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/window"
	"github.com/ruled-dev/ruled/internal/lograte"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/status"

	"github.com/ruled-dev/ruled/host/ingest"
	"github.com/ruled-dev/ruled/host/state"
)

// openStates reads the entities' states back from the store, unless the
// configuration keeps none. Closed before the store (closers run in
// reverse), after one last write of what changed.
func (d *Daemon) openStates() error {
	if d.cfg.State.MaxEntities < 0 {
		return nil
	}
	var kept state.Store = d.redis
	if d.bolt != nil {
		kept = d.bolt
	}
	// The clock is set after the store opens: read it when asked.
	now := func() time.Time { return d.clock.Now() }
	t, err := state.New(state.Config{Store: kept, MaxEntities: d.cfg.State.MaxEntities, MaxBytes: d.cfg.State.MaxBytes,
		Keys: d.cfg.State.Keys, ForgetAfter: d.cfg.State.ForgetAfter, Now: now, Log: d.log.Named("state")})
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.states = t
	d.closers = append(d.closers, t.Close)
	return nil
}

// statesFor ingest: none when kept off (a nil *state.Table is no States).
func (d *Daemon) statesFor() ingest.States {
	if d.states == nil {
		return nil
	}
	return d.states
}

// apiStates is the table as the API reads it; nil when none is kept.
func (d *Daemon) apiStates() api.States {
	if d.states == nil {
		return nil
	}
	r := stateReader{t: d.states, log: d.log}
	if d.cfg.Shards > 0 && d.redis != nil {
		r.fleet = d.redis.Stream()
	}
	return r
}

// runStates is the table as the rules' states: read it (seq.StateReader).
type runStates struct{ t *state.Table }

func (a runStates) State(id string) ([]byte, time.Time, bool) {
	e, ok := a.t.Get(id)
	return e.Raw, e.Seen, ok
}

// stateReader answers GET /v1/state from the table.
type stateReader struct {
	t   *state.Table
	log hclog.Logger
	// fleet is the fleet's ingest stream, whose states its change
	// triggers read (store.RedisStream.ForgetState); nil outside a fleet.
	fleet *store.RedisStream
}

func (a stateReader) States(prefix string, limit int) ([]status.Entity, int) {
	list, total := a.t.List(prefix, limit)
	out := make([]status.Entity, len(list))
	for i, e := range list {
		out[i] = entityStatus(e)
	}
	return out, total
}

func (a stateReader) State(id string) (status.Entity, bool) {
	e, ok := a.t.Get(id)
	if !ok {
		return status.Entity{}, false
	}
	return entityStatus(e), true
}

// Forget removes an entity's state and writes its removal now: an
// operator told "done" finds it gone after a restart too. In a fleet the
// stream's state of it goes too: its next report is a first one there.
func (a stateReader) Forget(id string) (bool, error) {
	gone := false
	if a.fleet != nil {
		var err error
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if gone, err = a.fleet.ForgetState(ctx, id); err != nil {
			return false, err
		}
	}
	if !a.t.Forget(id) {
		if gone {
			a.log.Info("an entity's state was forgotten by the operator", "entity", id)
		}
		return gone, nil
	}
	a.log.Info("an entity's state was forgotten by the operator", "entity", id)
	return true, a.t.Sync(id)
}

// entityStatus is e for the API: its JSON compacted (an event from the
// Redis bus is indented).
func entityStatus(e state.Entity) status.Entity {
	raw := json.RawMessage(e.Raw)
	var b bytes.Buffer
	if json.Compact(&b, e.Raw) == nil {
		raw = b.Bytes()
	}
	return status.Entity{ID: e.ID, Topic: e.Topic, EventID: e.EventID, State: raw, Changed: e.Changed, Seen: e.Seen}
}

// openHolds builds the holds of change triggers with for:, on the
// daemon's clock and store, their runs fired on the rules as loaded now.
// None without a state table (a hold is checked against it) or in a
// fleet (whose holds its append script runs in Redis: host/store).
func (d *Daemon) openHolds() {
	if d.states == nil || d.cfg.Shards > 0 {
		return
	}
	var kept hold.Store = d.redis
	if d.bolt != nil {
		kept = d.bolt
	}
	d.holds = hold.New(hold.Config{Store: kept, Clock: d.clock, Entity: d.states.Get, Window: d.cfg.ReplayWindow,
		Fire: d.fireHold, Refused: func(rule string) bool { return d.eng.RuleSet().Current().Refused(rule) },
		Log: d.log.Named("hold")})
	d.closers = append(d.closers, func() error { d.holds.Close(); return nil })
}

// fireHold starts the run of a hold that came due; done lets its record
// go once the rule has taken it. A rule removed or edited since the hold
// began, so that its trigger says something else, runs nothing.
func (d *Daemon) fireHold(h hold.Due, done func()) bool {
	t, ok := d.holdTrigger(h.Rule, h.Trigger)
	if !ok || t.String() != h.Def {
		// An edit can drop thousands of holds: one line a second a rule.
		if folded, ok := d.holdWarns.Allow(h.Rule); ok {
			d.log.Info("a hold came due for a trigger edited or removed since it began; dropped", "rule", h.Rule,
				"entity", h.Entity, "was", h.Def, "folded", folded, "next-log-within", lograte.Every.String())
		}
		done()
		return false
	}
	// The hold's run is named by the hold: started again after a kill cut
	// it short (at least once), its steps' idempotency keys repeat, and a
	// receiver can drop the repeat.
	id := seq.RunIDOf(h.At, "hold", h.Rule, strconv.Itoa(h.Trigger), h.Entity, strconv.FormatInt(h.Began.UnixNano(), 10))
	d.eng.Runner().Fire(seq.Trigger{Seq: d.eng.RuleSet().Current().Rule(h.Rule), Event: h.Event, Done: done, RunID: id})
	return true
}

// holdTrigger is a rule's change trigger i as loaded now.
func (d *Daemon) holdTrigger(rule string, i int) (rules.Change, bool) {
	s := d.eng.RuleSet().Current().Rule(rule)
	if s == nil || i >= len(s.Rule.Changes) {
		return rules.Change{}, false
	}
	return s.Rule.Changes[i], true
}

// restoreHolds reads back the holds a stop or a kill left, checked
// against the rules and the states as loaded now; one whose run took it
// before the kill (its rule holds a record of the event) is not run again.
func (d *Daemon) restoreHolds(held map[ingest.HeldEvent]bool) {
	if d.holds == nil {
		return
	}
	_, err := d.holds.Restore(d.holdTrigger, func(rule, eventID string, at int64) bool {
		_, ok := held[ingest.HeldEvent{Rule: rule, EventID: eventID, Time: at}]
		return ok
	})
	if err != nil {
		d.log.Error("cannot read the holds back; they wait for the next start", "error", err)
	}
}

// holdsFor ingest: none when nil.
func (d *Daemon) holdsFor() ingest.Holds {
	if d.holds == nil {
		return nil
	}
	return d.holds
}

// openWindows reads the windows back from the store; their definitions
// come with the rules (engine.syncWindows), and their closes fire once
// the engine is released. Closed before the store, after one last
// write. A fleet's are in Redis (window.Shared): each member counts what
// it accepts in the stream's append, and the members' poll closes them.
func (d *Daemon) openWindows() error {
	if d.cfg.Shards > 0 {
		if d.redis == nil {
			return nil
		}
		// A fleet's windows are in Redis, counted as the stream's append
		// writes each event (window.Shared).
		d.shared = window.NewShared(window.SharedConfig{Store: d.redis.Stream(), Now: laterClock{d}.Now,
			Log: d.log.Named("window")})
		return nil
	}
	var kept window.Store = d.redis
	if d.bolt != nil {
		kept = d.bolt
	}
	var maxWait time.Duration
	if d.cfg.Clock == nil {
		// A device's clock may be set forward (NTP after a boot without a
		// real-time clock): look once a minute, as the schedules do. A
		// virtual clock (ruled test) is moved by its owner.
		maxWait = time.Minute
	}
	t, err := window.New(window.Config{Store: kept, Clock: laterClock{d}, MaxWait: maxWait, Log: d.log.Named("window"),
		Fire: func(c window.Closed, done func()) {
			if d.eng == nil {
				done()
				return
			}
			d.eng.FireClose(c, done)
		}})
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.windows = t
	d.closers = append(d.closers, t.Close)
	return nil
}

// windowsFor ingest: none in a fleet.
func (d *Daemon) windowsFor() ingest.Windows {
	if d.windows == nil {
		return nil
	}
	return d.eng
}

// fleetWindowsFor ingest: a fleet's.
func (d *Daemon) fleetWindowsFor() ingest.FleetWindows {
	if d.shared == nil {
		return nil
	}
	return d.eng
}

// windowStats are the windows' counts, by name; nil when none is kept.
func (d *Daemon) windowStats() map[string]window.Stats {
	switch {
	case d.windows != nil:
		return d.windows.Stats()
	case d.shared != nil:
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		keys, _ := d.redis.Stream().WindowCounts(ctx, d.shared.Names())
		return d.shared.Stats(keys)
	}
	return nil
}

// laterClock is the daemon's clock for what is built before the clock is
// set (after the store opens): read when asked.
type laterClock struct{ d *Daemon }

func (c laterClock) Now() time.Time { return c.d.clock.Now() }

func (c laterClock) AfterFunc(dur time.Duration, f func()) *sched.Timer {
	return c.d.clock.AfterFunc(dur, f)
}

// apiWindows is the window table as the API reads it; nil when none is
// kept.
func (d *Daemon) apiWindows() api.Windows {
	switch {
	case d.windows != nil:
		return windowsAPI{d.windows}
	case d.shared != nil:
		return windowsAPI{d.shared}
	}
	return nil
}

// windowsAPI is the windows as the API reads them.
type windowsAPI struct {
	k interface {
		Read(name, key string) ([]byte, bool)
		Keys(name string, limit int) ([]string, int, bool)
	}
}

func (w windowsAPI) Window(name, key string) ([]byte, bool) { return w.k.Read(name, key) }

func (w windowsAPI) Keys(name string, limit int) ([]string, int, bool) { return w.k.Keys(name, limit) }

// Window is window name's value for key as JSON, as `ruled window show`
// reads it; false when no such window is kept (sdk/ruletest).
func (d *Daemon) Window(name, key string) ([]byte, bool) {
	if w := d.apiWindows(); w != nil {
		return w.Window(name, key)
	}
	return nil, false
}
