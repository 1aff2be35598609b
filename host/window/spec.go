package window

import (
	"fmt"
	"time"
)

// Kind is how a window decides which events it holds.
type Kind uint8

const (
	// Sliding holds the events of the last Spec.Last, in Spec.Buckets
	// buckets: the window's far edge moves a bucket at a time.
	Sliding Kind = iota + 1
	// Tumbling holds the events of the current period (Spec.Every on the
	// epoch's grid, or a calendar day or week in Spec.Zone) and closes
	// it when the next begins.
	Tumbling
	// Count holds the last Spec.Events events, in the order they came.
	Count
)

// Calendar is a tumbling window's period on the wall clock.
type Calendar uint8

const (
	// Day runs from local midnight to the next, 23 to 25 hours across a
	// daylight-saving change.
	Day Calendar = iota + 1
	// Week runs from Monday's local midnight to the next Monday's.
	Week
)

// Bounds of a Spec: what a window may hold per key.
const (
	// DefaultBuckets is a sliding window's buckets when its spec says
	// none: the far edge is then within 1/60 of the window's length.
	DefaultBuckets = 60
	// MaxBuckets bounds a sliding window's buckets: each is 72 bytes a
	// key.
	MaxBuckets = 1000
	// MaxEvents bounds a count window: it keeps each event's value (16
	// bytes a key an event).
	MaxEvents = 10000
	// MaxLength is the longest sliding window or tumbling period on the
	// grid: a year.
	MaxLength = 8784 * time.Hour
	// DefaultMaxKeys bounds the keys of a window whose spec says none.
	DefaultMaxKeys = 10000
	// MaxSkew is how far ahead of the daemon's clock an event's own time
	// may be: within it, the event counts as now; past it, refused.
	MaxSkew = time.Minute
)

// Spec is what a window keeps and for how long. The events it hears, and
// what of them it aggregates, are its caller's choice (Observe's
// arguments): a spec is the arithmetic.
type Spec struct {
	Kind Kind
	// Last is a sliding window's length.
	Last time.Duration
	// Buckets is a sliding window's resolution; 0: DefaultBuckets.
	Buckets int
	// Every is a tumbling window's period on the Unix epoch's grid; 0
	// with Calendar set.
	Every time.Duration
	// Calendar is a tumbling window's period on the wall clock of Zone.
	Calendar Calendar
	Zone     *time.Location
	// Events is a count window's length.
	Events int
	// MaxKeys bounds the keys the window holds; 0: DefaultMaxKeys.
	MaxKeys int
	// Numeric says the window aggregates a field's number (sum, avg,
	// min, max, first, last), not only counts events.
	Numeric bool
	// Def is what else defines the window for its caller (the events it
	// hears, its key, its field): a change starts it afresh, as a change
	// of its arithmetic does.
	Def string
}

// Check reports what is wrong with s, or nil.
func (s Spec) Check() error {
	switch s.Kind {
	case Sliding:
		if s.Last <= 0 || s.Last > MaxLength {
			return fmt.Errorf("a sliding window is longer than 0 and at most %v", MaxLength)
		}
		if s.Buckets < 0 || s.Buckets > MaxBuckets {
			return fmt.Errorf("buckets is 1 to %d", MaxBuckets)
		}
		if s.Last/time.Duration(s.buckets()) < time.Millisecond {
			return fmt.Errorf("a bucket of %v is under a millisecond", s.Last/time.Duration(s.buckets()))
		}
	case Tumbling:
		switch {
		case s.Calendar != 0 && s.Zone == nil:
			return fmt.Errorf("a calendar window needs a zone")
		case s.Calendar == 0 && (s.Every < time.Second || s.Every > MaxLength):
			return fmt.Errorf("every is 1s to %v", MaxLength)
		}
	case Count:
		if s.Events < 1 || s.Events > MaxEvents {
			return fmt.Errorf("a count window holds 1 to %d events", MaxEvents)
		}
	default:
		return fmt.Errorf("no kind of window")
	}
	if s.MaxKeys < 0 {
		return fmt.Errorf("max-keys is at least 1")
	}
	return nil
}

func (s Spec) buckets() int {
	if s.Buckets > 0 {
		return s.Buckets
	}
	return DefaultBuckets
}

func (s Spec) maxKeys() int {
	if s.MaxKeys > 0 {
		return s.MaxKeys
	}
	return DefaultMaxKeys
}

// width is a sliding window's bucket width.
func (s Spec) width() int64 { return int64(s.Last) / int64(s.buckets()) }

// String is the spec as one line: two specs that keep the same are the
// same string (a reload that changes it starts the window afresh).
func (s Spec) String() string {
	n := "n"
	if s.Numeric {
		n = "v"
	}
	if s.Def != "" {
		n += " " + s.Def
	}
	switch s.Kind {
	case Sliding:
		return fmt.Sprintf("sliding %v/%d %s", s.Last, s.buckets(), n)
	case Tumbling:
		if s.Calendar != 0 {
			return fmt.Sprintf("tumbling %s %s %s", [...]string{"", "day", "week"}[s.Calendar], s.Zone, n)
		}
		return fmt.Sprintf("tumbling %v %s", s.Every, n)
	case Count:
		return fmt.Sprintf("count %d %s", s.Events, n)
	}
	return "none"
}

// Period is the tumbling period holding t: its start and its end.
func (s Spec) Period(t time.Time) (start, end time.Time) {
	if s.Calendar == 0 {
		ns := t.UnixNano()
		p := int64(s.Every)
		q := ns / p * p
		if ns < 0 && q != ns {
			q -= p
		}
		return time.Unix(0, q), time.Unix(0, q+p)
	}
	l := t.In(s.Zone)
	y, m, d := l.Date()
	if s.Calendar == Week {
		d -= (int(l.Weekday()) + 6) % 7 // back to Monday
	}
	start = midnight(y, m, d, s.Zone)
	if s.Calendar == Week {
		return start, midnight(y, m, d+7, s.Zone)
	}
	return start, midnight(y, m, d+1, s.Zone)
}

// midnight is the first instant of a local day. Where a zone's clocks
// skip midnight (a spring change at 00:00), the day begins when they
// land.
func midnight(y int, m time.Month, d int, z *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, z)
	if _, _, dd := t.Date(); dd != time.Date(y, m, d, 12, 0, 0, 0, z).Day() {
		// time.Date moved a midnight in the gap back into the day before.
		t = time.Date(y, m, d, 12, 0, 0, 0, z)
		for h := 11; h >= 0; h-- {
			c := time.Date(y, m, d, h, 0, 0, 0, z)
			if c.Day() != t.Day() {
				break
			}
			t = c
		}
	}
	return t
}
