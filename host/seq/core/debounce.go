package core

import (
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// DebounceDue is when a key's held trigger runs: the debounce's quiet
// period after the latest trigger (now), but no later than max-wait after
// the burst's first (first), when the rule sets one.
func DebounceDue(first, now time.Time, db rules.Debounce) time.Time {
	due := now.Add(db.For)
	if db.MaxWait > 0 && first.Add(db.MaxWait).Before(due) {
		due = first.Add(db.MaxWait)
	}
	return due
}
