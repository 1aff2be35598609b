package cronspec

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // a device may have no zoneinfo: lint and the daemon must read zones alike
)

// Hint is what a cron expression is, for an error.
const Hint = `five fields: minute hour day-of-month month day-of-week, e.g. "0 3 * * *" is 03:00 every day, ` +
	`"*/15 * * * *" every 15 minutes, "0 9 * * MON-FRI" 09:00 on weekdays`

// Spec is a parsed cron expression: for each field, the values it matches.
type Spec struct {
	minute, hour, dom, month, dow uint64 // bit v: value v matches
	// domStar and dowStar: an item of the field is * (or ?) without a
	// step above 1. Cron's rule: when both day fields are restricted, a
	// day matches either; when one is *, the other alone decides.
	domStar, dowStar bool
	text             string
}

// String is the expression as written.
func (s *Spec) String() string { return s.text }

// Error is an expression Parse refuses: the field it is in ("" for the
// whole), the byte offset of the offending text, what is wrong and what
// to write instead.
type Error struct {
	Field  string
	Offset int
	Msg    string
	Hint   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

type field struct {
	name     string
	min, max int
	names    []string // names[i] stands for min+i
}

var (
	months = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	days   = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
	fields = [5]field{
		{"minute", 0, 59, nil},
		{"hour", 0, 23, nil},
		{"day-of-month", 1, 31, nil},
		{"month", 1, 12, months},
		{"day-of-week", 0, 7, days}, // 7 is Sunday too
	}
	shorthands = map[string]string{
		"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
		"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
	}
)

// Parse reads a five-field cron expression, or one of @yearly,
// @annually, @monthly, @weekly, @daily, @midnight and @hourly.
func Parse(text string) (*Spec, error) {
	s := &Spec{text: text}
	src := text
	trimmed := strings.TrimSpace(text)
	switch {
	case trimmed == "":
		return nil, &Error{Msg: "an empty schedule", Hint: Hint}
	case strings.HasPrefix(trimmed, "@every"):
		return nil, &Error{Offset: strings.Index(text, "@"), Msg: "@every is not a cron expression",
			Hint: "write on: {every: 15m} for a fixed interval"}
	case strings.HasPrefix(trimmed, "@"):
		long, ok := shorthands[trimmed]
		if !ok {
			return nil, &Error{Offset: strings.Index(text, "@"), Msg: fmt.Sprintf("%q is not a shorthand", trimmed),
				Hint: "@yearly, @monthly, @weekly, @daily or @hourly, or " + Hint}
		}
		src = long
	case strings.HasPrefix(trimmed, "CRON_TZ=") || strings.HasPrefix(trimmed, "TZ="):
		return nil, &Error{Offset: strings.Index(text, trimmed), Msg: "a time zone prefix is not part of the expression",
			Hint: "give the zone as timezone: Europe/Berlin beside schedule:"}
	}
	parts, offsets := split(src)
	if src != text { // a shorthand: errors cannot come from its expansion
		offsets = []int{0, 0, 0, 0, 0}
	}
	switch {
	case len(parts) == 6:
		return nil, &Error{Msg: "six fields: ruled schedules to the minute, without a seconds field", Hint: Hint}
	case len(parts) != 5:
		return nil, &Error{Msg: fmt.Sprintf("%d fields, want 5", len(parts)), Hint: Hint}
	}
	for i, f := range fields {
		bits, star, err := f.parse(parts[i], offsets[i])
		if err != nil {
			return nil, err
		}
		switch i {
		case 0:
			s.minute = bits
		case 1:
			s.hour = bits
		case 2:
			s.dom, s.domStar = bits, star
		case 3:
			s.month = bits
		case 4:
			if bits&(1<<7) != 0 {
				bits = bits&^(1<<7) | 1 // 7 is Sunday
			}
			s.dow, s.dowStar = bits, star
		}
	}
	if s.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.UTC).IsZero() {
		return nil, &Error{Field: "day-of-month", Offset: offsets[2], Msg: fmt.Sprintf("%q never comes due: no month has that day", text),
			Hint: "February has 29 days at most, and April, June, September and November 30"}
	}
	return s, nil
}

// split cuts s at runs of spaces and tabs, keeping each part's offset.
func split(s string) ([]string, []int) {
	var parts []string
	var offsets []int
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\t' {
			if start >= 0 {
				parts, offsets = append(parts, s[start:i]), append(offsets, start)
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return parts, offsets
}

// parse reads one field: a list of *, ?, values, ranges, each with an
// optional /step. at is the field's offset in the expression.
func (f field) parse(text string, at int) (bits uint64, star bool, err error) {
	off := 0
	for _, item := range strings.Split(text, ",") {
		b, st, err := f.item(item, at+off)
		if err != nil {
			return 0, false, err
		}
		bits |= b
		star = star || st
		off += len(item) + 1
	}
	return bits, star, nil
}

func (f field) item(item string, at int) (uint64, bool, error) {
	fail := func(off int, format string, args ...any) (uint64, bool, error) {
		return 0, false, &Error{Field: f.name, Offset: at + off, Msg: fmt.Sprintf(format, args...), Hint: f.hint()}
	}
	if item == "" {
		return fail(0, "an empty item")
	}
	rng, stepText, hasStep := strings.Cut(item, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 {
			return fail(len(rng)+1, "step %q is not a whole number above 0", stepText)
		}
		step = n
	}
	lo, hi := f.min, f.max
	star := false
	switch {
	case rng == "*" || rng == "?":
		if rng == "?" && f.name != "day-of-month" && f.name != "day-of-week" {
			return fail(0, "? is for day-of-month and day-of-week")
		}
		star = step == 1 // */2 restricts the field: it is not "any day"
		if f.name == "day-of-week" {
			hi = 6
		}
	case strings.HasPrefix(rng, "-"):
		return fail(0, "%q: a value is never negative, and a range needs its start (1-5)", rng)
	case strings.Count(rng, "-") > 1:
		return fail(0, "%q: a range has one - (1-5)", rng)
	default:
		a, b, isRange := strings.Cut(rng, "-")
		var err error
		if lo, err = f.value(a); err != nil {
			return fail(0, "%v", err)
		}
		switch {
		case isRange:
			if hi, err = f.value(b); err != nil {
				return fail(len(a)+1, "%v", err)
			}
			if lo > hi {
				return fail(0, "range %s starts above its end", rng)
			}
		case hasStep:
			hi = f.max // a/n: from a to the field's end, every n
			if f.name == "day-of-week" {
				hi = 6
			}
		default:
			hi = lo
		}
	}
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << uint(v)
	}
	return bits, star, nil
}

// value reads a number or a name of the field.
func (f field) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, nil
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < f.min || n > f.max {
		return 0, fmt.Errorf("%d is outside %d-%d", n, f.min, f.max)
	}
	return n, nil
}

func (f field) hint() string {
	switch f.name {
	case "month":
		return "1-12 or JAN-DEC, *, a list (1,4), a range (3-5) or a step (*/3); " + Hint
	case "day-of-week":
		return "0-6 (0 and 7 are Sunday) or SUN-SAT, *, a list, a range (MON-FRI) or a step; " + Hint
	}
	return fmt.Sprintf("%d-%d, *, a list (1,15), a range (1-5) or a step (*/15); %s", f.min, f.max, Hint)
}

// matchDay reports whether the civil date y-m-d matches the day fields.
func (s *Spec) matchDay(y int, m time.Month, d int) bool {
	domOK := s.dom&(1<<uint(d)) != 0
	dowOK := s.dow&(1<<uint(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday())) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// maxYears bounds Next's search: a spec that matches anything does so
// within a leap cycle and a weekday cycle (Feb 29 on a Monday: 28 years).
const maxYears = 30

// Next is the first instant after after at which the schedule comes due
// in loc: the first instant of the next matching civil minute, or, for a
// civil minute that does not exist there (a spring change's gap), the
// first instant after the gap — each matching civil minute once. Zero
// when none comes within maxYears.
func (s *Spec) Next(after time.Time, loc *time.Location) time.Time {
	local := after.In(loc)
	// The civil minute after's, as a UTC time: civil arithmetic without a
	// zone's changes.
	c := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), local.Minute(), 0, 0, time.UTC).Add(time.Minute)
	end := c.AddDate(maxYears, 0, 0)
	for day := time.Date(c.Year(), c.Month(), c.Day(), 0, 0, 0, 0, time.UTC); day.Before(end); day = day.AddDate(0, 0, 1) {
		if s.month&(1<<uint(day.Month())) == 0 {
			day = time.Date(day.Year(), day.Month()+1, 0, 0, 0, 0, 0, time.UTC) // the month's last day; the loop adds one
			continue
		}
		if !s.matchDay(day.Year(), day.Month(), day.Day()) {
			continue
		}
		for h := 0; h < 24; h++ {
			if s.hour&(1<<uint(h)) == 0 {
				continue
			}
			for mi := 0; mi < 60; mi++ {
				if s.minute&(1<<uint(mi)) == 0 {
					continue
				}
				civil := day.Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute)
				if civil.Before(c) {
					continue
				}
				if t := instant(civil, loc); t.After(after) {
					return t
				}
			}
		}
	}
	return time.Time{}
}

// civilOf is t's wall-clock time in loc, as a UTC time.
func civilOf(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
}

// instant is the first instant whose civil time in loc is civil (a fold
// has two), or when none is (a gap), the first instant after it.
func instant(civil time.Time, loc *time.Location) time.Time {
	t := time.Date(civil.Year(), civil.Month(), civil.Day(), civil.Hour(), civil.Minute(), 0, 0, loc)
	if civilOf(t, loc).Equal(civil) {
		for _, d := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
			if u := t.Add(-d); civilOf(u, loc).Equal(civil) {
				t = u
			}
		}
		return t
	}
	// In a gap: the first second whose civil time is past it.
	lo, hi := t.Add(-4*time.Hour).Unix(), t.Add(4*time.Hour).Unix()
	for lo < hi {
		mid := lo + (hi-lo)/2
		if civilOf(time.Unix(mid, 0), loc).Before(civil) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return time.Unix(lo, 0).In(loc)
}

// NextEvery is the first instant after after on the grid of every d from
// the Unix epoch: the same instants whenever, wherever and however often
// the process starts, so a restart neither shifts nor repeats them.
func NextEvery(after time.Time, d time.Duration) time.Time {
	n := after.UnixNano()
	k := n / int64(d)
	if n < 0 && n%int64(d) != 0 {
		k--
	}
	return time.Unix(0, (k+1)*int64(d))
}
