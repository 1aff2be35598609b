package task

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/ruled-dev/ruled/host/sched"
)

// Scheduler is the clock Tasks wakes sleeping rules on.
type Scheduler = sched.Clock

// Logger is go-hclog's Info/Warn/Error.
type Logger interface {
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

// Tasks holds the state of every rule. Every transition is stored before it
// takes effect: a transition whose Store fails is refused and reported, so
// what the store says is what the rule does after a restart. Safe for
// concurrent use.
type Tasks struct {
	store StateStore
	sch   Scheduler
	log   Logger

	mu       sync.Mutex
	rules    map[string]*entry
	notify   func(rule string, from, to State)
	released bool
}

// ErrReleased is what a transition meets after Release: the process is
// going away and leaves every state as stored.
var ErrReleased = errors.New("task: released (shutting down)")

// keep bounds the recent errors and hops Tasks holds per rule for Status.
const keep = 20

type entry struct {
	state  State
	eh     ErrHandler
	wake   *sched.Timer
	errors []Err // recent errors of any state, for Status (trimmed)
	hops   []Hop // recent transitions, for Status (trimmed)
}

// New returns an empty Tasks over store, waking sleepers on sch.
func New(store StateStore, sch Scheduler, log Logger) *Tasks {
	return &Tasks{store: store, sch: sch, log: log, rules: map[string]*entry{}}
}

// OnChange sets the function told of every transition (after it is
// stored), with the state before and after: the daemon ends a killed
// rule's runs and releases a resumed rule's held steps there. It is called
// without the Tasks lock held, on the goroutine that caused the transition.
func (t *Tasks) OnChange(f func(rule string, from, to State)) { t.notify = f }

// Loader is the bulk read Load prefers when the store offers it.
type Loader interface {
	LoadAll() (map[string]Stored, error)
}

// Load reads the states of rules (id → its error budget) at start. A rule
// with no stored state starts Runnable; a rule whose state will not decode
// is set Failed with the reason (and that is stored); a sleeping rule whose
// time has come wakes. An error means the store could not be read at all:
// the caller retries before starting the rules.
func (t *Tasks) Load(budgets map[string]Limits) error {
	var all map[string]Stored
	if l, ok := t.store.(Loader); ok {
		var err error
		if all, err = l.LoadAll(); err != nil {
			return err
		}
	}
	for rule, lim := range budgets {
		var st Stored
		if all != nil {
			st = all[rule]
		} else {
			s, err := t.store.Load(rule)
			if err != nil && !errors.Is(err, ErrStateNotFound) {
				st.Err = err
			} else {
				st.State = s
			}
		}
		t.add(rule, lim, st)
	}
	return nil
}

// Ensure adds a rule loaded after start (a reload) with its budget, or
// updates the budget of a known one.
func (t *Tasks) Ensure(rule string, lim Limits) {
	t.mu.Lock()
	e := t.rules[rule]
	if e != nil {
		e.eh = lim.Handler()
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	var st Stored
	s, err := t.store.Load(rule)
	switch {
	case errors.Is(err, ErrStateNotFound):
	case err != nil:
		st.Err = err
	default:
		st.State = s
	}
	t.add(rule, lim, st)
}

func (t *Tasks) add(rule string, lim Limits, st Stored) {
	now := t.sch.Now()
	e := &entry{eh: lim.Handler(), state: State{Code: Runnable, Since: now}}
	switch {
	case st.Err != nil:
		e.state = State{Code: Failed, Since: now, Reason: st.Err.Error()}
		t.log.Error("rule failed: its stored state is unusable", "rule", rule, "error", st.Err)
		if err := t.store.Store(rule, &e.state); err != nil {
			t.log.Error("cannot store the failed state", "rule", rule, "error", err)
		}
	case st.State != nil:
		e.state = *st.State
		// The errors still counting are the recent ones a restart keeps;
		// those beyond the budget's window, and the hops, were this
		// process's alone.
		e.errors = append([]Err(nil), e.state.Errors...)
	}
	t.mu.Lock()
	t.rules[rule] = e
	t.armLocked(rule, e)
	t.mu.Unlock()
}

// armLocked sets a sleeping rule's wake-up.
func (t *Tasks) armLocked(rule string, e *entry) {
	if e.wake != nil {
		e.wake.Stop()
		e.wake = nil
	}
	if e.state.Code != Sleeping || e.state.Until == nil {
		return
	}
	d := e.state.Until.Sub(t.sch.Now())
	e.wake = t.sch.AfterFunc(max(d, 0), func() {
		if _, err := t.Send(rule, RunMessage()); err != nil {
			var ill *IllegalError
			if !errors.As(err, &ill) && !errors.Is(err, ErrReleased) { // woken by a command already: fine
				t.log.Error("cannot wake a sleeping rule", "rule", rule, "error", err)
			}
		}
	})
}

// Send applies a message to a rule's state, stores it, and only then makes
// it the rule's state. An unknown rule, an illegal transition (an
// *IllegalError naming event and state), a sleep without a deadline or a
// store that fails are errors, and nothing changes.
func (t *Tasks) Send(rule string, m *Message) (State, error) {
	t.mu.Lock()
	e, err := t.entryLocked(rule)
	if err != nil {
		t.mu.Unlock()
		return State{}, err
	}
	from := e.state
	now := t.sch.Now()
	next, hops, err := Walk(from, m, now, e.eh, rule)
	if err != nil {
		t.mu.Unlock()
		return from, err
	}
	if err := t.commitLocked(rule, e, next); err != nil {
		t.mu.Unlock()
		return from, err
	}
	if m.Code == Error {
		e.errors = trim(append(e.errors, NewErr(m.Err, now)))
	}
	for i := range hops {
		hops[i].By = m.By
	}
	e.hops = trim(append(e.hops, hops...))
	t.mu.Unlock()
	t.changed(rule, from, next, hops)
	return next, nil
}

// trim keeps the newest keep items.
func trim[T any](s []T) []T {
	if len(s) > keep {
		return append(s[:0:0], s[len(s)-keep:]...)
	}
	return s
}

// Release ends Tasks without a transition, as the seed's Release message
// does: sleepers' wake-ups stop and every later Send or Reset is refused
// with ErrReleased, so what the store holds is what the next process
// starts from. The daemon calls it first when it shuts down (and, later,
// when it loses a shard's lease).
func (t *Tasks) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.released = true
	for _, e := range t.rules {
		if e.wake != nil {
			e.wake.Stop()
			e.wake = nil
		}
	}
}

// Reset brings a failed, killed or completed rule back to runnable. It is
// the operator's way out of a terminal state, outside the seed's table;
// by says who asked, for its hop.
func (t *Tasks) Reset(rule, by string) (State, error) {
	t.mu.Lock()
	e, err := t.entryLocked(rule)
	if err != nil {
		t.mu.Unlock()
		return State{}, err
	}
	from := e.state
	now := t.sch.Now()
	next, err := Reset(from, now)
	if err == nil {
		err = t.commitLocked(rule, e, next)
	}
	if err != nil {
		t.mu.Unlock()
		return from, err
	}
	e.errors = nil
	hops := []Hop{{Time: now, Event: ResetEvent, From: from.Code, To: next.Code, By: by}}
	e.hops = trim(append(e.hops, hops...))
	t.mu.Unlock()
	t.changed(rule, from, next, hops)
	return next, nil
}

// entryLocked is the rule's entry if a transition may be made: the rule
// is known and Tasks not released.
func (t *Tasks) entryLocked(rule string) (*entry, error) {
	e := t.rules[rule]
	switch {
	case e == nil:
		return nil, fmt.Errorf("task: no rule %q", rule)
	case t.released:
		return nil, ErrReleased
	}
	return e, nil
}

func (t *Tasks) commitLocked(rule string, e *entry, next State) error {
	if err := t.store.Store(rule, &next); err != nil {
		t.log.Error("transition refused: the state could not be stored", "rule", rule, "to", next.Code, "error", err)
		return fmt.Errorf("task: %s stays %s: %w", rule, e.state.Code, err)
	}
	e.state = next
	t.armLocked(rule, e)
	return nil
}

func (t *Tasks) changed(rule string, from, to State, hops []Hop) {
	for _, h := range hops {
		if h.From != h.To {
			t.log.Info("rule state", "rule", rule, "event", h.Event, "from", h.From, "to", h.To)
		}
	}
	if from.Code != Sleeping && to.Code == Sleeping && len(hops) > 0 && hops[0].To == Fault && to.Until != nil {
		// Put to sleep by its error budget, not by an operator: say when
		// it wakes, and how to wake it sooner once the cause is mended.
		// The error itself was logged where it happened, just before.
		t.log.Warn("rule asleep: its errors went past its budget (on-error)", "rule", rule,
			"until", to.Until.UTC().Format(time.RFC3339), "errors", len(to.Errors),
			"fix", "mend what failed (ruled log ls --rule "+rule+"), then ruled rule resume "+rule)
	}
	if t.notify != nil {
		t.notify(rule, from, to)
	}
}

// State is a rule's state, and false for an unknown rule.
func (t *Tasks) State(rule string) (State, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.rules[rule]
	if e == nil {
		return State{}, false
	}
	return e.state, true
}

// History is a rule's last transitions (at most 20), oldest first, since
// this process started (it is a view for operators, not part of the stored
// state); a message that changed nothing (a Checkpoint) is there too.
func (t *Tasks) History(rule string) []Hop {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.rules[rule]; e != nil {
		return append([]Hop(nil), e.hops...)
	}
	return nil
}

// RecentErrors are the last errors a rule reported (at most 20): since
// this process started, and before that the ones still counting against
// the budget when it loaded the rule's state.
func (t *Tasks) RecentErrors(rule string) []Err {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.rules[rule]; e != nil {
		return append([]Err(nil), e.errors...)
	}
	return nil
}

// Admits reports whether a rule starts runs: only a runnable one does.
func (t *Tasks) Admits(rule string) bool {
	st, ok := t.State(rule)
	return !ok || st.Code == Runnable
}

// Errored records an error from a live run of a rule. For a runnable,
// sleeping or fault rule it is an Error message (the table's rows); in any
// other state the run's error only counts (the runner's error count).
func (t *Tasks) Errored(rule string, err error) {
	st, ok := t.State(rule)
	if !ok {
		return
	}
	switch st.Code {
	case Runnable, Sleeping, Fault:
		if _, e := t.Send(rule, ErrorMessage(err)); e != nil && !errors.Is(e, ErrReleased) {
			t.log.Error("cannot record a rule's error", "rule", rule, "error", e)
		}
	}
}

// Rules lists the rules Tasks knows, sorted.
func (t *Tasks) Rules() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.rules))
	for r := range t.rules {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Forget drops a removed rule (its stored state stays, so a rule that
// comes back keeps it).
func (t *Tasks) Forget(rule string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.rules[rule]; e != nil {
		if e.wake != nil {
			e.wake.Stop()
		}
		delete(t.rules, rule)
	}
}
