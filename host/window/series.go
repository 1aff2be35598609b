package window

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"time"
)

// bucket is a sliding window's events of one width of time.
type bucket struct {
	idx int64 // its start / the spec's width
	agg Agg
}

// point is one event of a count window.
type point struct {
	v  float64
	at int64
}

// series is one key's events in one window. Its size is bounded by the
// spec: a sliding window's buckets (only those that hold events), a
// count window's events, a tumbling window's one Agg.
type series struct {
	buckets []bucket // Sliding: by idx, oldest first
	ring    []point  // Count: a ring, its oldest at head once full
	head    int
	period  int64 // Tumbling: its period's start (Unix ns)
	agg     Agg   // Tumbling: the period's
	// emptied: a tumbling key whose last period closed with no events;
	// the next close forgets it.
	emptied bool
	// touched: counted in since the table's last write (Table.touched
	// lists it once).
	touched bool
}

// add counts v at time at (Unix ns) for spec s. It returns false when at
// is older than the window holds (late).
func (x *series) add(s *Spec, v float64, at int64) bool {
	switch s.Kind {
	case Sliding:
		w := s.width()
		i := floorDiv(at, w)
		n := len(x.buckets)
		if n > 0 && x.buckets[n-1].idx == i { // the usual case: the newest bucket
			x.buckets[n-1].agg.add(v, at)
			return true
		}
		if n > 0 && i < x.buckets[n-1].idx-int64(s.buckets())+1 {
			return false
		}
		k, found := slices.BinarySearchFunc(x.buckets, i, func(b bucket, i int64) int { return cmp64(b.idx, i) })
		if !found {
			x.buckets = slices.Insert(x.buckets, k, bucket{idx: i})
		}
		x.buckets[k].agg.add(v, at)
		x.trim(s, x.buckets[len(x.buckets)-1].idx)
	case Tumbling:
		x.agg.add(v, at)
		x.emptied = false
	case Count:
		if len(x.ring) < s.Events {
			x.ring = append(x.ring, point{v, at})
		} else {
			x.ring[x.head] = point{v, at}
			x.head = (x.head + 1) % len(x.ring)
		}
	}
	return true
}

// trim drops the buckets before the window that ends in bucket last.
func (x *series) trim(s *Spec, last int64) {
	first := last - int64(s.buckets()) + 1
	k := 0
	for k < len(x.buckets) && x.buckets[k].idx < first {
		k++
	}
	if k > 0 {
		x.buckets = append(x.buckets[:0], x.buckets[k:]...)
	}
}

// value is the series' aggregates at now (Unix ns).
func (x *series) value(s *Spec, now int64) Value {
	v := Value{Numeric: s.Numeric}
	switch s.Kind {
	case Sliding:
		w := s.width()
		last := floorDiv(now, w)
		first := last - int64(s.buckets()) + 1
		for _, b := range x.buckets {
			if b.idx >= first && b.idx <= last {
				v.merge(b.agg)
			}
		}
		v.Start, v.End = time.Unix(0, first*w), time.Unix(0, now)
	case Tumbling:
		start, end := s.Period(time.Unix(0, now))
		if x.period == start.UnixNano() {
			v.Agg = x.agg
		}
		v.Start, v.End = start, time.Unix(0, now)
		if v.End.After(end) {
			v.End = end
		}
	case Count:
		first, last := int64(math.MaxInt64), int64(math.MinInt64)
		for i := range x.ring { // oldest first: of events of one time, the first came first
			p := x.ring[(x.head+i)%len(x.ring)]
			v.add(p.v, p.at)
			first, last = min(first, p.at), max(last, p.at)
		}
		if len(x.ring) > 0 {
			v.Start, v.End = time.Unix(0, first), time.Unix(0, max(last, now))
		} else {
			v.Start, v.End = time.Unix(0, now), time.Unix(0, now)
		}
	}
	return v
}

// empty reports whether the series holds nothing at now: a sliding
// window whose buckets all fell out, a count window with no events.
func (x *series) empty(s *Spec, now int64) bool {
	switch s.Kind {
	case Sliding:
		return len(x.buckets) == 0 || x.buckets[len(x.buckets)-1].idx < floorDiv(now, s.width())-int64(s.buckets())+1
	case Count:
		return len(x.ring) == 0
	}
	return false
}

// The encoding of a series in the store: a version byte, the kind, then
// the kind's fields as varints and float64 bits. A decoder refuses a
// record of another spec's kind (its window was edited: start afresh).
const encVersion = 1

func (x *series) encode(s *Spec) []byte {
	b := []byte{encVersion, byte(s.Kind)}
	switch s.Kind {
	case Sliding:
		b = binary.AppendUvarint(b, uint64(len(x.buckets)))
		for _, k := range x.buckets {
			b = binary.AppendVarint(b, k.idx)
			b = appendAgg(b, k.agg)
		}
	case Tumbling:
		b = binary.AppendVarint(b, x.period)
		b = appendAgg(b, x.agg)
		if x.emptied {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	case Count:
		b = binary.AppendUvarint(b, uint64(len(x.ring)))
		for _, p := range append(x.ring[x.head:len(x.ring):len(x.ring)], x.ring[:x.head]...) {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.v))
			b = binary.AppendVarint(b, p.at)
		}
	}
	return b
}

func appendAgg(b []byte, a Agg) []byte {
	b = binary.AppendVarint(b, a.Count)
	if a.Count == 0 {
		return b
	}
	for _, f := range []float64{a.Sum, a.Min, a.Max, a.First, a.Last} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	b = binary.AppendVarint(b, a.FirstAt)
	return binary.AppendVarint(b, a.LastAt)
}

var errRecord = errors.New("window: a record that does not decode")

// decode reads a series of spec s; an error for a record of another
// kind or a bound s does not allow (a spec edited smaller).
func decode(s *Spec, b []byte) (*series, error) {
	r := reader{b: b}
	if r.byte() != encVersion || Kind(r.byte()) != s.Kind {
		return nil, errRecord
	}
	x := &series{}
	switch s.Kind {
	case Sliding:
		n := r.uvarint()
		if n > uint64(s.buckets()) {
			return nil, errRecord
		}
		for range n {
			k := bucket{idx: r.varint(), agg: r.agg()}
			if len(x.buckets) > 0 && k.idx <= x.buckets[len(x.buckets)-1].idx {
				return nil, errRecord
			}
			x.buckets = append(x.buckets, k)
		}
	case Tumbling:
		x.period = r.varint()
		x.agg = r.agg()
		x.emptied = r.byte() == 1
	case Count:
		n := r.uvarint()
		if n > uint64(s.Events) {
			return nil, errRecord
		}
		x.ring = make([]point, 0, n)
		for range n {
			x.ring = append(x.ring, point{v: r.float(), at: r.varint()})
		}
	}
	if r.bad || len(r.b) != 0 || !bytes.Equal(x.encode(s), b) {
		// A record that decodes but is not how this code writes it (a
		// varint padded, a float where none is kept): not ours.
		return nil, errRecord
	}
	return x, nil
}

// reader reads an encoding; bad once it ran out.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) float() float64 {
	if len(r.b) < 8 {
		r.bad, r.b = true, nil
		return 0
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return f
}

func (r *reader) agg() Agg {
	a := Agg{Count: r.varint()}
	if a.Count < 0 {
		r.bad = true
	}
	if a.Count <= 0 {
		return Agg{}
	}
	a.Sum, a.Min, a.Max, a.First, a.Last = r.float(), r.float(), r.float(), r.float(), r.float()
	a.FirstAt, a.LastAt = r.varint(), r.varint()
	return a
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
