package sun

import (
	"fmt"
	"math"
	"time"
)

// Location is where the sun is seen from.
type Location struct {
	// Latitude and Longitude in degrees: north and east positive.
	Latitude, Longitude float64
	// Elevation in metres above the surroundings' horizon: a higher
	// observer sees the sun rise earlier and set later (the horizon's
	// dip). 0: at sea level.
	Elevation float64
}

// Check reports a location that cannot be: a latitude past the poles, a
// longitude past ±180, an elevation that is negative or higher than any
// mountain.
func (l Location) Check() error {
	switch {
	case math.IsNaN(l.Latitude) || l.Latitude < -90 || l.Latitude > 90:
		return fmt.Errorf("latitude %v is not between -90 and 90", l.Latitude)
	case math.IsNaN(l.Longitude) || l.Longitude < -180 || l.Longitude > 180:
		return fmt.Errorf("longitude %v is not between -180 and 180", l.Longitude)
	case math.IsNaN(l.Elevation) || l.Elevation < 0 || l.Elevation > 9000:
		return fmt.Errorf("elevation %v m is not between 0 and 9000", l.Elevation)
	}
	return nil
}

// Event is a moment of the sun's day.
type Event uint8

const (
	Sunrise Event = iota + 1 // the upper edge of the disc on the horizon, refraction counted, in the morning
	Sunset                   // the same in the evening
	Dawn                     // civil dawn: the centre 6° below the horizon, in the morning
	Dusk                     // civil dusk: the same in the evening
	Noon                     // solar noon: the sun due south (north of the tropics) at its highest
)

var eventNames = [...]string{Sunrise: "sunrise", Sunset: "sunset", Dawn: "dawn", Dusk: "dusk", Noon: "noon"}

func (e Event) String() string {
	if int(e) < len(eventNames) && eventNames[e] != "" {
		return eventNames[e]
	}
	return "?"
}

// ParseEvent reads an event's name.
func ParseEvent(s string) (Event, bool) {
	for i, n := range eventNames {
		if n != "" && n == s {
			return Event(i), true
		}
	}
	return 0, false
}

// EventNames are the events' names, in order.
func EventNames() []string { return []string{"sunrise", "sunset", "dawn", "dusk", "noon"} }

// horizon is the sun centre's geometric depression below the horizon at
// the event: 50′ at rise and set (34′ of refraction and the disc's 16′
// radius), 6° for civil twilight.
func (e Event) horizon() float64 {
	switch e {
	case Dawn, Dusk:
		return 6
	}
	return 0.833
}

// morning reports whether the event is before noon.
func (e Event) morning() bool { return e == Sunrise || e == Dawn }

// dip is how far below the horizon an observer at elevation metres sees,
// in degrees.
func (l Location) dip() float64 { return 2.076 * math.Sqrt(l.Elevation) / 60 }

// Position is the sun's apparent place in the sky.
type Position struct {
	// Elevation above the horizon in degrees, refraction counted; negative
	// below it.
	Elevation float64
	// Azimuth in degrees clockwise from north.
	Azimuth float64
	// Up says the sun is between its rise and its set (its upper edge
	// above the horizon, as Sunrise and Sunset count it).
	Up bool
	// Rising says it is before solar noon.
	Rising bool
}

// At is the sun's position seen from l at t.
func (l Location) At(t time.Time) Position {
	s := solar(t)
	lat := rad(l.Latitude)
	// True solar time, in minutes: noon is 720.
	mins := float64(t.UTC().Hour()*60+t.UTC().Minute()) + (float64(t.UTC().Second())+float64(t.UTC().Nanosecond())/1e9)/60
	tst := math.Mod(mins+s.eqTime+4*l.Longitude, 1440)
	if tst < 0 {
		tst += 1440
	}
	ha := tst/4 - 180
	cosZ := math.Sin(lat)*math.Sin(s.decl) + math.Cos(lat)*math.Cos(s.decl)*math.Cos(rad(ha))
	zenith := deg(math.Acos(clamp(cosZ)))
	elev := 90 - zenith
	var az float64
	if d := math.Cos(lat) * math.Sin(rad(zenith)); math.Abs(d) > 0.001 {
		a := (math.Sin(lat)*math.Cos(rad(zenith)) - math.Sin(s.decl)) / d
		az = 180 - deg(math.Acos(clamp(a)))
		if ha > 0 {
			az = -az
		}
	} else if l.Latitude > 0 {
		az = 180
	}
	az = math.Mod(az+360, 360)
	return Position{Elevation: elev + refraction(elev), Azimuth: az,
		Up: elev > -(Sunrise.horizon() + l.dip()), Rising: ha < 0}
}

// refraction is NOAA's atmospheric refraction at a geometric elevation,
// in degrees.
func refraction(e float64) float64 {
	var r float64
	switch te := math.Tan(rad(e)); {
	case e > 85:
		return 0
	case e > 5:
		r = 58.1/te - 0.07/math.Pow(te, 3) + 0.000086/math.Pow(te, 5)
	case e > -0.575:
		r = 1735 + e*(-518.2+e*(103.4+e*(-12.79+e*0.711)))
	default:
		r = -20.774 / te
	}
	return r / 3600
}

// Next is the first time after after that ev happens at l; the zero time
// when it does not happen in the next 370 days (the sun neither rises nor
// sets there, at the poles; or it does not get 6° below the horizon, in
// a northern summer night).
func (l Location) Next(ev Event, after time.Time) time.Time {
	n := dayOf(after, l.Longitude) - 1
	for range 372 {
		if t, ok := l.on(ev, n); ok && t.After(after) {
			return t
		}
		n++
	}
	return time.Time{}
}

// On is ev on the solar day of the local date d at l (the day whose
// solar noon falls on that date at l's longitude), and whether it happens
// that day.
func (l Location) On(ev Event, year int, month time.Month, day int) (time.Time, bool) {
	n := time.Date(year, month, day, 0, 0, 0, 0, time.UTC).Unix() / 86400
	return l.on(ev, n)
}

// dayOf is the solar day t falls in at longitude lon: the days since the
// epoch, counted from one local midnight (by mean solar time) to the next.
func dayOf(t time.Time, lon float64) int64 {
	return int64(math.Floor((float64(t.Unix()) + lon*240) / 86400))
}

// on is ev on solar day n: the events around the mean noon of day n at
// l's longitude, each found by rounds of moving the sun to the time of
// the last guess. While the guess says the sun stays up (or down) all day
// it moves to the day's end nearest the event (midnight, or noon), where
// the sun comes closest to the horizon: the first sunset after a polar
// summer falls near midnight, when the sun is lower than at noon's guess.
// Only the last round says whether the event happens.
func (l Location) on(ev Event, n int64) (time.Time, bool) {
	const rounds = 4
	day := float64(n) * 86400
	t := day + 43200 - l.Longitude*240 // mean noon, in unix seconds
	lat := rad(l.Latitude)
	zenith := rad(90 + ev.horizon() + l.dip())
	for i := range rounds {
		s := solar(unix(t))
		noon := day + (720-4*l.Longitude-s.eqTime)*60
		if ev == Noon {
			t = noon
			continue
		}
		cosH := (math.Cos(zenith) - math.Sin(lat)*math.Sin(s.decl)) / (math.Cos(lat) * math.Cos(s.decl))
		if (cosH < -1 || cosH > 1) && i == rounds-1 {
			return time.Time{}, false // up all day, or down all day
		}
		h := deg(math.Acos(clamp(cosH))) * 240 // seconds from noon
		if ev.morning() {
			t = noon - h
		} else {
			t = noon + h
		}
	}
	return unix(t), true
}

// sunAt is the sun's declination (radians) and the equation of time
// (minutes) at a moment.
type sunAt struct {
	decl, eqTime float64
}

// solar is NOAA's solar calculator's sun at t.
func solar(t time.Time) sunAt {
	jd := float64(t.UnixNano())/86400e9 + 2440587.5
	T := (jd - 2451545) / 36525
	l0 := math.Mod(280.46646+T*(36000.76983+T*0.0003032), 360)
	m := 357.52911 + T*(35999.05029-0.0001537*T)
	e := 0.016708634 - T*(0.000042037+0.0000001267*T)
	c := math.Sin(rad(m))*(1.914602-T*(0.004817+0.000014*T)) + math.Sin(rad(2*m))*(0.019993-0.000101*T) + math.Sin(rad(3*m))*0.000289
	omega := 125.04 - 1934.136*T
	lambda := l0 + c - 0.00569 - 0.00478*math.Sin(rad(omega))
	eps0 := 23 + (26+(21.448-T*(46.815+T*(0.00059-T*0.001813)))/60)/60
	eps := eps0 + 0.00256*math.Cos(rad(omega))
	decl := math.Asin(math.Sin(rad(eps)) * math.Sin(rad(lambda)))
	y := math.Pow(math.Tan(rad(eps)/2), 2)
	l0r, mr := rad(l0), rad(m)
	eq := y*math.Sin(2*l0r) - 2*e*math.Sin(mr) + 4*e*y*math.Sin(mr)*math.Cos(2*l0r) -
		0.5*y*y*math.Sin(4*l0r) - 1.25*e*e*math.Sin(2*mr)
	return sunAt{decl: decl, eqTime: 4 * deg(eq)}
}

func unix(s float64) time.Time {
	sec := math.Floor(s)
	return time.Unix(int64(sec), int64((s-sec)*1e9)).UTC()
}

func rad(d float64) float64 { return d * math.Pi / 180 }
func deg(r float64) float64 { return r * 180 / math.Pi }

func clamp(x float64) float64 { return math.Max(-1, math.Min(1, x)) }
