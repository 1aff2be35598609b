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

	bw int64 // a sliding window's bucket width, once Define worked it out
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
func (s *Spec) width() int64 {
	if s.bw == 0 {
		s.bw = int64(s.Last) / int64(s.buckets())
	}
	return s.bw
}

// holds reports whether a sliding window read at now holds an event of
// time at: its bucket is one of the window's (value's edge), so what is
// counted is what a read shows.
func (s *Spec) holds(now, at int64) bool {
	w := s.width()
	return floorDiv(at, w) >= floorDiv(now, w)-int64(s.buckets())+1
}

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

// midnight is the first instant of a local day: its midnight, or where
// a zone's clocks skip it (a spring change at 00:00) the instant they
// land, or where they repeat it (a change back from 01:00 to 00:00) the
// first of the two.
func midnight(y int, m time.Month, d int, z *time.Location) time.Time {
	noon := time.Date(y, m, d, 12, 0, 0, 0, z)
	ty, tm, td := noon.Date()
	before := func(sec int64) bool {
		yy, mm, dd := time.Unix(sec, 0).In(z).Date()
		return yy < ty || yy == ty && (mm < tm || mm == tm && dd < td)
	}
	// From a little before the wall clock's midnight, in steps of a
	// quarter hour, to the first instant of the day; then to its second.
	lo := time.Date(y, m, d, 0, 0, 0, 0, z).Unix() - 4*3600
	for !before(lo) {
		lo -= 4 * 3600
	}
	hi := lo
	for before(hi) {
		lo, hi = hi, hi+900
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if before(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return time.Unix(hi, 0).In(z)
}
