package core

import "github.com/ruled-dev/ruled/host/rules"

// Key is what a decision reads of a rule's key: its runs and queue, as
// counts, and whether its cooldown holds.
type Key struct {
	Live    int  // runs part-way through their steps
	Closing int  // runs that ended and run their finally steps
	Queued  int  // triggers waiting for the live runs (queue, restart)
	Cooling bool // the key's cooldown has not passed
}

// Verdict is what a rule does with a trigger.
type Verdict uint8

const (
	// Start: a new run starts now.
	Start Verdict = iota
	// Suppress: the trigger is turned away — single mode with a run
	// live, or the key's cooldown (Decision.Why says which).
	Suppress
	// Refuse: the trigger is turned away by the rule's max (parallel, or
	// queue with its queue full).
	Refuse
	// Enqueue: the trigger waits for the key's live runs to end (queue).
	Enqueue
	// Restart: the key's live runs end (restarted), then the trigger
	// starts — at once when none is closing then (a run with finally
	// steps closes as it ends), else it replaces the key's queue and
	// starts once their finally steps are done. The driver looks after
	// ending them: which close is its to know.
	Restart
)

// Reasons a trigger is turned away, as the execution log and /whynot
// show them.
const (
	WhyCooldown  = "its key is in the rule's cooldown"
	WhySingle    = "a run of its key is live (mode single)"
	WhyQueueFull = "its key has max runs live and queued (mode queue)"
	WhyParallel  = "its key has max runs live (mode parallel)"
)

// Decision is a trigger's verdict, with why when it is turned away.
type Decision struct {
	Verdict Verdict
	Why     string
}

// Admit decides what rule r does with a trigger of a key in state k.
// A cooldown comes first: a cooling key turns every trigger away, whatever
// the mode.
func Admit(r *rules.Rule, k Key) Decision {
	if r.Cooldown > 0 && k.Cooling {
		return Decision{Verdict: Suppress, Why: WhyCooldown}
	}
	busy := k.Live > 0 || k.Closing > 0
	switch r.Mode {
	case rules.ModeSingle:
		if busy {
			return Decision{Verdict: Suppress, Why: WhySingle}
		}
	case rules.ModeRestart:
		if busy {
			return Decision{Verdict: Restart}
		}
	case rules.ModeQueue:
		if busy {
			if k.Live+k.Closing+k.Queued >= r.Max {
				return Decision{Verdict: Refuse, Why: WhyQueueFull}
			}
			return Decision{Verdict: Enqueue}
		}
	case rules.ModeParallel:
		// Past max: refused, in parallel mode as in queue mode — one
		// word for a trigger turned away by max (Home Assistant's
		// max_exceeded), where single mode's is suppressed.
		if k.Live >= r.Max {
			return Decision{Verdict: Refuse, Why: WhyParallel}
		}
	}
	return Decision{Verdict: Start}
}
