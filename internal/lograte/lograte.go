package lograte

import (
	"sync"
	"time"
)

// Every is how often one cause's warning is logged by default.
const Every = time.Second

// MaxCauses bounds the causes a Limiter tracks. A cause names something
// the operator chose (a rule, a step, a plugin) and a reason from the
// code, never an input's value, so a device has few; the bound is for the
// one whose inputs name more.
const MaxCauses = 4096

// overflow is the cause the rest share while MaxCauses are tracked and
// all were logged within the period.
const overflow = "\x00overflow"

// A Limiter lets one warning per cause through per period. The zero value
// logs at most once a second per cause on the wall clock; it is safe for
// concurrent use.
type Limiter struct {
	// Every is the period; zero means Every (one second).
	Every time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu     sync.Mutex
	causes map[string]*cause
}

// cause is one cause's last logged line and what was folded since.
type cause struct {
	logged time.Time
	folded uint64
}

// Allow reports whether cause's warning is logged now, and how many of
// its occurrences were folded (not logged) since its last line. The first
// occurrence of a cause is logged at once.
func (l *Limiter) Allow(cause string) (folded uint64, ok bool) {
	now := l.now()
	every := l.Every
	if every <= 0 {
		every = Every
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.lookup(cause, now, every)
	if !c.logged.IsZero() && now.Sub(c.logged) < every {
		c.folded++
		return 0, false
	}
	folded, c.folded, c.logged = c.folded, 0, now
	return folded, true
}

// lookup is cause's entry, made if need be within MaxCauses.
func (l *Limiter) lookup(name string, now time.Time, every time.Duration) *cause {
	if c, ok := l.causes[name]; ok {
		return c
	}
	if l.causes == nil {
		l.causes = map[string]*cause{}
	}
	if len(l.causes) >= MaxCauses {
		for k, c := range l.causes {
			// A cause quiet for a period has nothing folded worth keeping
			// beyond its next line: forgetting it logs that line at once.
			if now.Sub(c.logged) >= every {
				delete(l.causes, k)
			}
		}
		if len(l.causes) >= MaxCauses {
			name = overflow
			if c, ok := l.causes[name]; ok {
				return c
			}
		}
	}
	c := &cause{}
	l.causes[name] = c
	return c
}

func (l *Limiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}
