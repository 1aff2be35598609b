package rules

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/ruled-dev/ruled/host/cronspec"
	"github.com/ruled-dev/ruled/host/sun"
	suggestpkg "github.com/ruled-dev/ruled/internal/suggest"
)

// Schedule is a trigger on the clock: `on: {schedule: "0 3 * * *",
// timezone: Europe/Berlin}`, `on: {every: 15m}`, or on the sun: `on:
// {sun: sunset, offset: -30m}`. The event it fires carries its due time.
type Schedule struct {
	// Cron is the expression (nil for Every), in Zone (the daemon's
	// local zone when the rule gives none; TZ is what it gave).
	Cron *cronspec.Spec
	Zone *time.Location
	TZ   string
	// Every is a fixed interval on the grid from the Unix epoch.
	Every time.Duration
	// Sun is an event of the sun's day at the daemon's location (0: not
	// a sun schedule), Offset how long after it (before, negative).
	Sun    sun.Event
	Offset time.Duration
	// Missed is what the occurrences that fell while the process was
	// down (or the clock jumped over) do; Within bounds how late one may
	// still run (0: the daemon's replay window).
	Missed Missed
	Within time.Duration
	Pos    Pos
}

// Missed is a schedule's missed: policy.
type Missed uint8

const (
	// MissedOnce runs the latest missed occurrence, once (default).
	MissedOnce Missed = iota
	// MissedSkip runs none: the schedule goes on with the next.
	MissedSkip
	// MissedAll runs every missed occurrence within the window, in order.
	MissedAll
)

var missedNames = [...]string{"once", "skip", "all"}

func (m Missed) String() string {
	if int(m) < len(missedNames) {
		return missedNames[m]
	}
	return "?"
}

// Next is the schedule's first occurrence after after; for a sun
// schedule, seen from at (none without a location: the zero time, as when
// the sun does not rise or set there within a year).
func (s *Schedule) Next(after time.Time, at *sun.Location) time.Time {
	switch {
	case s.Sun != 0:
		if at == nil {
			return time.Time{}
		}
		t := at.Next(s.Sun, after.Add(-s.Offset))
		if t.IsZero() {
			return t
		}
		// On the whole second after the event, as cron's and every's
		// occurrences are on whole seconds: the record keeps milliseconds,
		// and an occurrence read back a fraction early would come again.
		t = t.Add(s.Offset)
		if c := t.Truncate(time.Second); !c.Equal(t) {
			t = c.Add(time.Second)
		}
		return t
	case s.Cron == nil:
		return cronspec.NextEvery(after, s.Every)
	}
	return s.Cron.Next(after, s.Zone)
}

// String names the schedule as written: "0 3 * * * Europe/Berlin",
// "every 15m", "sunset -30m".
func (s *Schedule) String() string {
	if s.Sun != 0 {
		switch {
		case s.Offset > 0:
			return s.Sun.String() + " +" + s.Offset.String()
		case s.Offset < 0:
			return s.Sun.String() + " " + s.Offset.String()
		}
		return s.Sun.String()
	}
	if s.Cron == nil {
		return "every " + s.Every.String()
	}
	if s.TZ == "" {
		return s.Cron.String()
	}
	return s.Cron.String() + " " + s.TZ
}

// Key identifies the schedule's occurrences: a schedule whose key changed
// (another expression, zone or interval) starts anew rather than catching
// up on what the old one missed.
func (s *Schedule) Key() string {
	if s.Sun != 0 {
		return "sun " + s.String()
	}
	if s.Cron == nil {
		return s.String()
	}
	return s.Cron.String() + " " + s.Zone.String()
}

var scheduleKeys = []string{"schedule", "every", "sun", "offset", "timezone", "missed", "within"}

const scheduleHint = `on: {schedule: "0 3 * * *", timezone: Europe/Berlin}, on: {every: 15m} or on: {sun: sunset, offset: -30m}`

// MaxSunOffset bounds a sun schedule's offset either way: further than
// half a day from the event is another time of day, a schedule:'s.
const MaxSunOffset = 12 * time.Hour

// triggers reads on: a topic pattern, a schedule, a change, or a list of
// them.
func (p *parser) triggers(r *Rule, e entry) {
	v := resolve(e.value)
	items := []*yaml.Node{e.value}
	if v.Kind == yaml.SequenceNode {
		if len(v.Content) == 0 {
			p.errorf(e.value, "on is an empty list").Hint = "it takes a topic pattern, a schedule, or a list of them"
			return
		}
		items = v.Content
	}
	for _, item := range items {
		ie := entry{e.name, e.key, item}
		if resolve(item).Kind == yaml.MappingNode {
			if hasKey(resolve(item), "topic") {
				if c, ok := p.change(ie); ok {
					r.Changes = append(r.Changes, c)
				}
			} else if hasKey(resolve(item), "window") {
				if c, ok := p.windowClose(ie); ok {
					r.Closes = append(r.Closes, c)
				}
			} else if s, ok := p.schedule(ie); ok {
				r.Schedules = append(r.Schedules, s)
			}
			continue
		}
		if resolve(item).Kind != yaml.ScalarNode || resolve(item).Tag != "!!str" {
			p.wrongType(ie, "a topic pattern, a schedule ({schedule} or {every}), a change ({topic, changes}), a window's close ({window, closed}) or a list of them", true)
			continue
		}
		if pat, ok := p.pattern(ie); ok {
			if slices.Contains(r.On, pat) {
				p.errorf(item, "%s: %q is given twice", e.name, pat)
				continue
			}
			r.On = append(r.On, pat)
		}
	}
}

// schedule reads one {schedule, timezone, missed, within} or {every,
// missed, within}.
func (p *parser) schedule(e entry) (Schedule, bool) {
	s := Schedule{Pos: p.pos(resolve(e.value)), Zone: time.Local}
	f, _ := p.fields(e.value, "a schedule", scheduleKeys)
	ce, isCron := f["schedule"]
	ee, isEvery := f["every"]
	se, isSun := f["sun"]
	bad := len(p.errs)
	switch {
	case isCron && isEvery, isSun && (isCron || isEvery):
		k := ee.key
		if isSun {
			k = se.key
		}
		p.errorf(k, "a schedule is one of schedule, every and sun").Hint = "one per entry; give on: a list for more"
	case isSun:
		if i, ok := p.enum(se, sun.EventNames()); ok {
			s.Sun, _ = sun.ParseEvent(sun.EventNames()[i])
		} else if n := len(p.errs); n > bad && p.errs[n-1].Hint == "" {
			p.errs[n-1].Hint = "sunrise and sunset (the sun's upper edge on the horizon), dawn and dusk (civil: 6° below), noon"
		}
	case isCron:
		text, ok := p.str(ce)
		if !ok {
			break
		}
		spec, err := cronspec.Parse(text)
		if err != nil {
			p.cronError(resolve(ce.value), text, err.(*cronspec.Error))
			break
		}
		s.Cron = spec
	case isEvery:
		if d, ok := p.durationZero(ee, "how often the schedule comes due, e.g. every: 15m"); ok {
			if d < time.Second || d%time.Second != 0 {
				p.errorf(ee.value, "every: want whole seconds, at least 1s, got %v", d).Hint = "e.g. every: 15m; a schedule counts in seconds at the finest"
			}
			s.Every = d
		}
	default:
		p.errorf(e.value, "a schedule needs schedule, every or sun").Hint = scheduleHint
	}
	if oe, ok := f["offset"]; ok {
		switch d, ok := p.signedDuration(oe, "-30m"); {
		case !ok:
		case !isSun:
			p.errorf(oe.key, "offset: only a sun schedule has one").Hint = "on: {sun: sunset, offset: -30m}: half an hour before sunset"
		case d.Abs() > MaxSunOffset:
			p.errorf(oe.value, "offset: %v is more than %v from the sun's event", d, MaxSunOffset).Hint = "a time of day is a schedule: \"0 22 * * *\""
		default:
			s.Offset = d
		}
	}
	if te, ok := f["timezone"]; ok {
		if name, ok := p.str(te); ok {
			switch loc, err := time.LoadLocation(name); {
			case isSun:
				p.errorf(te.key, "timezone: a sun schedule has no time zone").Hint =
					"the sun's events are moments at the daemon's location (location: in its config), the same in any zone"
			case isEvery:
				p.errorf(te.key, "timezone: an every: schedule has no time zone").Hint =
					"every: runs on a fixed grid of real time; a time of day is a schedule: in a zone, e.g. schedule: \"0 3 * * *\""
			case err != nil || name == "":
				p.errorf(te.value, "timezone: %q is not a time zone", name).Hint =
					"an IANA name such as Europe/Berlin or America/New_York, or UTC, or Local for the daemon's own" + zoneSuggestion(name)
			default:
				s.Zone, s.TZ = loc, name
			}
		}
	}
	if me, ok := f["missed"]; ok {
		if i, ok := p.enum(me, missedNames[:]); ok {
			s.Missed = Missed(i)
		} else if n := len(p.errs); n > bad && p.errs[n-1].Hint == "" {
			p.errs[n-1].Hint = "once (default) runs the latest occurrence missed while the daemon was down, skip none, all each within the window"
		}
	}
	if we, ok := f["within"]; ok {
		s.Within, _ = p.durationZero(we, "how late a missed occurrence may still run; leave within out for the daemon's replay window")
	}
	return s, len(p.errs) == bad
}

// cronError reports a cron expression's error at the file position of the
// text it names (textPos: quotes, escapes and block scalars included).
func (p *parser) cronError(n *yaml.Node, text string, ce *cronspec.Error) {
	at := p.textPos(n, text, 1, utf8.RuneCountInString(text[:ce.Offset])+1)
	err := &Error{Pos: at, Msg: "schedule: " + ce.Error(), Hint: ce.Hint}
	if k := err.Error(); !p.reported[k] {
		p.reported[k] = true
		p.errs = append(p.errs, err)
	}
	p.bad = true
}

// zoneSuggestion names a zone close to a misspelt one.
func zoneSuggestion(name string) string {
	for _, z := range []string{"Europe/Berlin", "Europe/London", "Europe/Paris", "America/New_York", "America/Los_Angeles", "Asia/Tokyo", "UTC"} {
		if strings.EqualFold(z, name) || suggestpkg.Distance(strings.ToLower(z), strings.ToLower(name)) <= 2 {
			return fmt.Sprintf("; did you mean %s?", z)
		}
	}
	return ""
}
