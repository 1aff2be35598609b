package window

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// Agg is what a window knows of the events it holds: how many, and of
// their numbers the sum, the least, the most, the first and the last by
// their time. It is all a window keeps: any of its aggregates is one of
// these or a quotient of two.
type Agg struct {
	// Count is the events; N those with a number (a numeric window's
	// events without one are not counted at all: N == Count there).
	Count           int64
	Sum, Min, Max   float64
	First, Last     float64
	FirstAt, LastAt int64 // Unix nanoseconds
}

// add counts an event of time at, with its number v when numeric.
func (a *Agg) add(v float64, at int64) {
	if a.Count == 0 {
		*a = Agg{Count: 1, Sum: v, Min: v, Max: v, First: v, Last: v, FirstAt: at, LastAt: at}
		return
	}
	a.Count++
	a.Sum += v
	a.Min = math.Min(a.Min, v)
	a.Max = math.Max(a.Max, v)
	if at < a.FirstAt {
		a.First, a.FirstAt = v, at
	}
	if at >= a.LastAt {
		a.Last, a.LastAt = v, at
	}
}

// merge adds b's events to a.
func (a *Agg) merge(b Agg) {
	if b.Count == 0 {
		return
	}
	if a.Count == 0 {
		*a = b
		return
	}
	a.Count += b.Count
	a.Sum += b.Sum
	a.Min = math.Min(a.Min, b.Min)
	a.Max = math.Max(a.Max, b.Max)
	if b.FirstAt < a.FirstAt {
		a.First, a.FirstAt = b.First, b.FirstAt
	}
	if b.LastAt >= a.LastAt {
		a.Last, a.LastAt = b.Last, b.LastAt
	}
}

// Value is a window's answer for one key at one moment: its aggregates
// over the span it covers.
type Value struct {
	Agg
	// Numeric: Sum and the rest are numbers' (else only Count means
	// anything).
	Numeric bool
	// Start and End are the span the aggregates cover: a sliding
	// window's far edge (a bucket's start) to now, a tumbling window's
	// period, a count window's first event to now.
	Start, End time.Time
}

// Aggregates are the names a rule reads a window's value by
// (states.<name>.<aggregate>), in the order AppendJSON writes them.
var Aggregates = []string{"count", "sum", "avg", "min", "max", "first", "last", "per_second", "per_minute", "start", "end"}

// AppendJSON appends v as the JSON object rules read: count, per_second
// and per_minute (events over the span, a second at least; for a
// tumbling window, over the part of the period gone by; for a count
// window, from its first event to now), start and end (RFC 3339), and for a
// numeric window with events sum, avg, min, max, first and last. A
// numeric window without events has no avg: a rule gives a default
// ((states.t.avg ?? 0) < 5).
func (v Value) AppendJSON(b []byte) []byte {
	b = append(b, `{"count":`...)
	b = strconv.AppendInt(b, v.Count, 10)
	if v.Numeric {
		b = append(b, `,"sum":`...)
		b = appendNum(b, v.Sum)
		if v.Count > 0 {
			b = append(b, `,"avg":`...)
			b = appendNum(b, v.Sum/float64(v.Count))
			for _, x := range []struct {
				k string
				v float64
			}{{"min", v.Min}, {"max", v.Max}, {"first", v.First}, {"last", v.Last}} {
				b = append(append(append(b, ',', '"'), x.k...), '"', ':')
				b = appendNum(b, x.v)
			}
		}
	}
	// Over a second at least: two events a microsecond apart are not a
	// rate of millions a second.
	secs := max(v.End.Sub(v.Start).Seconds(), 1)
	rate := float64(v.Count) / secs
	b = append(b, `,"per_second":`...)
	b = appendNum(b, rate)
	b = append(b, `,"per_minute":`...)
	b = appendNum(b, rate*60)
	b = append(b, `,"start":"`...)
	b = v.Start.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","end":"`...)
	b = v.End.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"', '}')
}

// appendNum appends x as JSON: an integer without a fraction, infinities
// (a sum past float64) as the largest number.
func appendNum(b []byte, x float64) []byte {
	switch {
	case math.IsNaN(x):
		return append(b, '0')
	case math.IsInf(x, 1):
		x = math.MaxFloat64
	case math.IsInf(x, -1):
		x = -math.MaxFloat64
	}
	return strconv.AppendFloat(b, x, 'g', -1, 64)
}

// UnmarshalJSON reads back what AppendJSON wrote (a close's record).
func (v *Value) UnmarshalJSON(b []byte) error {
	var j struct {
		Count                           int64
		Sum, Avg, Min, Max, First, Last *float64
		Start, End                      time.Time
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*v = Value{Agg: Agg{Count: j.Count}, Numeric: j.Sum != nil, Start: j.Start, End: j.End}
	for _, x := range []struct {
		p *float64
		d *float64
	}{{j.Sum, &v.Sum}, {j.Min, &v.Min}, {j.Max, &v.Max}, {j.First, &v.First}, {j.Last, &v.Last}} {
		if x.p != nil {
			*x.d = *x.p
		}
	}
	return nil
}
