package history

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"sort"
	"sync"
	"time"
)

// The rings' sizes: an hour of minutes, a day of quarter hours.
const (
	HourPoints = 60
	DayPoints  = 96
	perDay     = 15 // hour points to a day point
)

// MaxRules and MaxPlugins bound the names charted: a rule set of
// thousands of rules is not read as sparklines, and each name costs its
// rings (about 1.5 KB a rule).
const (
	MaxRules   = 1000
	MaxPlugins = 100
)

// maxOmitted bounds the names kept to count those not charted.
const maxOmitted = 10000

// Reading is what the daemon has counted since it started, at At: the
// counters are cumulative (a restart starts them again from zero).
type Reading struct {
	At      time.Time
	Rules   map[string]RuleCounts
	Plugins map[string]Buckets // each plugin's calls, all its functions
	Queued  int
}

// RuleCounts are a rule's cumulative counters.
type RuleCounts struct {
	Started, Failed, TurnedAway, Errors uint64
}

// Buckets is a latency histogram, cumulative as Prometheus keeps one:
// Counts[i] calls took at most Bounds[i] seconds; the last bound may be
// +Inf.
type Buckets struct {
	Bounds []float64
	Counts []uint64
}

// Snapshot is the charts' data: the hour's and the day's points, oldest
// first, each ring's last point the step that ended last.
type Snapshot struct {
	Hour Series `json:"hour"`
	Day  Series `json:"day"`
	// Omitted counts the rules and plugins past MaxRules and MaxPlugins,
	// not charted.
	Omitted int `json:"omitted,omitempty"`
}

// Series is one ring as the API shows it: Points points Step apart, the
// last ending at End. A point not counted (the daemon was down) is null
// (-1 in the rings).
type Series struct {
	Step    time.Duration          `json:"step_ns"`
	End     time.Time              `json:"end"`
	Rules   map[string]*RuleSeries `json:"rules"`
	Plugins map[string]*Latency    `json:"plugins"`
	Queued  []*float64             `json:"queued"`
}

// RuleSeries is a rule's points: how many runs started, failed, how many
// triggers were turned away (suppressed or refused) and errors counted,
// in each step.
type RuleSeries struct {
	Started    []*float64 `json:"started"`
	Failed     []*float64 `json:"failed"`
	TurnedAway []*float64 `json:"turned_away"`
	Errors     []*float64 `json:"errors"`
}

// Latency is a plugin's call latency in each step, in milliseconds: null
// where it made no call.
type Latency struct {
	P50 []*float64 `json:"p50_ms"`
	P99 []*float64 `json:"p99_ms"`
}

// ring is one resolution: n slots, slot i holding period p (its end:
// (p+1)·step after the epoch) when seq[i] == p.
type ring struct {
	step    time.Duration
	seq     []int64 // the period each slot holds; -1: none
	rules   map[string]*ruleRing
	plugins map[string]*latRing
	queued  []float64
}

type ruleRing struct{ started, failed, away, errors []float64 }
type latRing struct{ p50, p99 []float64 }

func newRing(step time.Duration, n int) *ring {
	r := &ring{step: step, seq: make([]int64, n), rules: map[string]*ruleRing{}, plugins: map[string]*latRing{}, queued: nan(n)}
	for i := range r.seq {
		r.seq[i] = -1
	}
	return r
}

func nan(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// slot is where period p goes, made empty when it held another (fresh).
func (r *ring) slot(p int64) (i int, fresh bool) {
	i = int(p % int64(len(r.seq)))
	if r.seq[i] != p {
		fresh = true
		r.seq[i] = p
		r.queued[i] = math.NaN()
		for _, rr := range r.rules {
			rr.started[i], rr.failed[i], rr.away[i], rr.errors[i] = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		}
		for _, l := range r.plugins {
			l.p50[i], l.p99[i] = math.NaN(), math.NaN()
		}
	}
	return i, fresh
}

// period is the step a reading at at ends: the one that ends at at, when
// at is a step's end (a tick's reading), else the one at is in (a
// stop's, mid-step).
func period(at time.Time, step time.Duration) int64 {
	return (at.UnixNano() - 1) / int64(step)
}

// put is a point added to slot i: set when the slot is fresh, else added
// to what a reading before in the same step put there (a stop and a
// start within one minute).
func put(v []float64, i int, fresh bool, x float64) {
	if fresh || math.IsNaN(v[i]) {
		v[i] = x
		return
	}
	v[i] += x
}

// worst is a latency added to slot i: the larger of two in one step.
func worst(v []float64, i int, fresh bool, x float64) {
	if fresh || math.IsNaN(v[i]) || x > v[i] {
		v[i] = x
	}
}

func (r *ring) rule(name string) *ruleRing {
	rr := r.rules[name]
	if rr == nil {
		n := len(r.seq)
		rr = &ruleRing{nan(n), nan(n), nan(n), nan(n)}
		r.rules[name] = rr
	}
	return rr
}

func (r *ring) plugin(name string) *latRing {
	l := r.plugins[name]
	if l == nil {
		n := len(r.seq)
		l = &latRing{nan(n), nan(n)}
		r.plugins[name] = l
	}
	return l
}

// History keeps the rings. Its methods are safe for concurrent use.
type History struct {
	mu sync.Mutex
	// answers are JSON answers made since the last Add, by query: the
	// points change once a step, and a page asks at every change of the
	// daemon (JSON). At most maxAnswers, one a query without a rule.
	answers map[string][]byte
	// making is held while an answer to cache is made: requests that
	// come together wait for the first's, instead of each making its own
	// (64 at once took a daemon with 1,000 rules to 1 GB).
	making    sync.Mutex
	step      time.Duration
	hour, day *ring
	last      Reading
	hasLast   bool
	// acc is the day's period being gathered: the hour points' sums and
	// the latency histograms' increase over it.
	acc     dayAcc
	omitted map[string]bool
	// changed says a reading since the last TakeChanged counted
	// something: an idle daemon writes nothing (its store's file stays
	// as it was: TestIdleDaemonWritesNothing).
	changed bool
}

type dayAcc struct {
	period  int64 // the day period it gathers; -1 none
	rules   map[string]*RuleCounts
	plugins map[string]Buckets
	queued  float64
}

// New keeps points step apart (a minute; the day's are 15 steps).
func New(step time.Duration) *History {
	return &History{step: step, hour: newRing(step, HourPoints), day: newRing(step*perDay, DayPoints),
		acc: dayAcc{period: -1}, omitted: map[string]bool{}}
}

// Start says the counters start from zero at at (the daemon started):
// the first Add counts from there.
func (h *History) Start(at time.Time) { h.Begin(Reading{At: at}) }

// Begin says the counters stood at r when the charts began: the first
// Add counts from there (what the daemon did while it started — its
// plugins' first calls, a replay — is not a minute's work).
func (h *History) Begin(r Reading) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last, h.hasLast = r, true
}

// Add takes the reading at the end of a step: the increase since the one
// before is the step's point (a counter that went down — a restart —
// counts from zero).
func (h *History) Add(r Reading) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answers = nil
	if !h.hasLast {
		h.last, h.hasLast = r, true
		return
	}
	p := period(r.At, h.step)
	i, fresh := h.hour.slot(p)
	h.hour.queued[i] = float64(r.Queued)
	h.changed = h.changed || r.Queued > 0
	dp := p / perDay
	if h.acc.period != dp {
		h.closeDay()
		h.prune()
		h.acc = h.day.resume(dp)
	}
	h.acc.queued = math.Max(nz(h.acc.queued), float64(r.Queued))
	for _, name := range sortedKeys(r.Rules) { // past MaxRules, the same names are left out each time
		c := r.Rules[name]
		if _, ok := h.hour.rules[name]; !ok && len(h.hour.rules) >= MaxRules {
			if len(h.omitted) < maxOmitted {
				h.omitted["rule "+name] = true
			}
			continue
		}
		before := h.last.Rules[name]
		d := RuleCounts{inc(c.Started, before.Started), inc(c.Failed, before.Failed), inc(c.TurnedAway, before.TurnedAway), inc(c.Errors, before.Errors)}
		h.changed = h.changed || d != RuleCounts{}
		rr := h.hour.rule(name)
		put(rr.started, i, fresh, float64(d.Started))
		put(rr.failed, i, fresh, float64(d.Failed))
		put(rr.away, i, fresh, float64(d.TurnedAway))
		put(rr.errors, i, fresh, float64(d.Errors))
		a := h.acc.rules[name]
		if a == nil {
			a = &RuleCounts{}
			h.acc.rules[name] = a
		}
		a.Started, a.Failed, a.TurnedAway, a.Errors = a.Started+d.Started, a.Failed+d.Failed, a.TurnedAway+d.TurnedAway, a.Errors+d.Errors
	}
	for _, name := range sortedKeys(r.Plugins) {
		b := r.Plugins[name]
		if _, ok := h.hour.plugins[name]; !ok && len(h.hour.plugins) >= MaxPlugins {
			if len(h.omitted) < maxOmitted {
				h.omitted["plugin "+name] = true
			}
			continue
		}
		d := b.since(h.last.Plugins[name])
		l := h.hour.plugin(name)
		if q := d.Quantile(0.5) * 1e3; !math.IsNaN(q) {
			h.changed = true
			worst(l.p50, i, fresh, q)
			worst(l.p99, i, fresh, d.Quantile(0.99)*1e3)
		} else if fresh {
			l.p50[i], l.p99[i] = q, q
		}
		h.acc.plugins[name] = d.add(h.acc.plugins[name])
	}
	h.last = r
}

// resume is the day period p gathered so far: what the ring holds of it
// (a restart within the quarter hour, whose points were kept), or
// nothing. Latencies start again: the ring keeps their quantiles, not
// the calls.
func (r *ring) resume(p int64) dayAcc {
	acc := dayAcc{period: p, rules: map[string]*RuleCounts{}, plugins: map[string]Buckets{}}
	i := int(p % int64(len(r.seq)))
	if r.seq[i] != p {
		return acc
	}
	acc.queued = r.queued[i]
	for name, rr := range r.rules {
		if !math.IsNaN(rr.started[i]) {
			acc.rules[name] = &RuleCounts{uint64(rr.started[i]), uint64(nz(rr.failed[i])), uint64(nz(rr.away[i])), uint64(nz(rr.errors[i]))}
		}
	}
	return acc
}

// prune forgets the rules and plugins not in the last reading whose
// points have all gone from both rings (a rule removed a day ago): a
// daemon whose rules are renamed now and then charts its new ones past
// MaxRules distinct names.
func (h *History) prune() {
	for name, rr := range h.hour.rules {
		if _, ok := h.last.Rules[name]; !ok && none(rr.started) && h.day.rules[name] != nil && none(h.day.rules[name].started) {
			delete(h.hour.rules, name)
			delete(h.day.rules, name)
		}
	}
	for name, l := range h.hour.plugins {
		if _, ok := h.last.Plugins[name]; !ok && none(l.p50) && h.day.plugins[name] != nil && none(h.day.plugins[name].p50) {
			delete(h.hour.plugins, name)
			delete(h.day.plugins, name)
		}
	}
}

// none reports whether every point of v is missing.
func none(v []float64) bool {
	for _, x := range v {
		if !math.IsNaN(x) {
			return false
		}
	}
	return true
}

// closeDay writes the gathered day period into the day ring.
func (h *History) closeDay() {
	if h.acc.period < 0 {
		return
	}
	i, _ := h.day.slot(h.acc.period)
	h.day.queued[i] = h.acc.queued
	for name, c := range h.acc.rules {
		rr := h.day.rule(name)
		rr.started[i], rr.failed[i], rr.away[i], rr.errors[i] = float64(c.Started), float64(c.Failed), float64(c.TurnedAway), float64(c.Errors)
	}
	for name, b := range h.acc.plugins {
		l := h.day.plugin(name)
		l.p50[i], l.p99[i] = b.Quantile(0.5)*1e3, b.Quantile(0.99)*1e3
	}
}

func nz(f float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return f
}

// inc is a counter's increase from before to now; a counter that went
// down started again (a restart) and counts from zero.
func inc(now, before uint64) uint64 {
	if now < before {
		return now
	}
	return now - before
}

// since is b's increase over before (the same bounds, else b whole).
func (b Buckets) since(before Buckets) Buckets {
	if len(before.Counts) != len(b.Counts) {
		return b
	}
	d := Buckets{Bounds: b.Bounds, Counts: make([]uint64, len(b.Counts))}
	for i := range b.Counts {
		d.Counts[i] = inc(b.Counts[i], before.Counts[i])
	}
	return d
}

// add is b added to acc (acc empty: b).
func (b Buckets) add(acc Buckets) Buckets {
	if len(acc.Counts) != len(b.Counts) {
		return Buckets{Bounds: b.Bounds, Counts: append([]uint64(nil), b.Counts...)}
	}
	for i := range b.Counts {
		acc.Counts[i] += b.Counts[i]
	}
	return acc
}

// Quantile is the q-quantile of b's calls in seconds, interpolated
// within its bucket as Prometheus's histogram_quantile does; NaN with no
// calls. A quantile in the +Inf bucket is the last finite bound.
func (b Buckets) Quantile(q float64) float64 {
	n := len(b.Counts)
	if n == 0 || b.Counts[n-1] == 0 {
		return math.NaN()
	}
	rank := q * float64(b.Counts[n-1])
	i := sort.Search(n, func(i int) bool { return float64(b.Counts[i]) >= rank })
	if i >= n {
		i = n - 1
	}
	if math.IsInf(b.Bounds[i], 1) {
		if i == 0 {
			return math.NaN()
		}
		return b.Bounds[i-1]
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = b.Bounds[i-1], float64(b.Counts[i-1])
	}
	in := float64(b.Counts[i]) - below
	if in <= 0 {
		return b.Bounds[i]
	}
	return lo + (b.Bounds[i]-lo)*(rank-below)/in
}

// Snapshot is the rings as the API shows them.
func (h *History) Snapshot() Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	var end int64
	if h.hasLast {
		end = period(h.last.At, h.step)
	}
	// The day's last point is its quarter hour so far: written now, and
	// again, whole, when the quarter hour ends.
	h.closeDay()
	s := Snapshot{Hour: h.hour.series(end), Day: h.day.series(end / perDay), Omitted: len(h.omitted)}
	return s
}

// series is the ring's points up to period last, oldest first.
func (r *ring) series(last int64) Series {
	n := len(r.seq)
	s := Series{Step: r.step, End: time.Unix(0, (last+1)*int64(r.step)).UTC(), Rules: map[string]*RuleSeries{},
		Plugins: map[string]*Latency{}, Queued: make([]*float64, n)}
	idx := make([]int, n) // slot of each point, -1: none
	for k := range n {
		p := last - int64(n-1-k)
		idx[k] = -1
		if p >= 0 && r.seq[int(p%int64(n))] == p {
			idx[k] = int(p % int64(n))
		}
	}
	pick := func(v []float64) []*float64 {
		out := make([]*float64, n)
		for k, i := range idx {
			if i >= 0 && !math.IsNaN(v[i]) {
				x := v[i]
				out[k] = &x
			}
		}
		return out
	}
	s.Queued = pick(r.queued)
	for name, rr := range r.rules {
		s.Rules[name] = &RuleSeries{pick(rr.started), pick(rr.failed), pick(rr.away), pick(rr.errors)}
	}
	for name, l := range r.plugins {
		s.Plugins[name] = &Latency{pick(l.p50), pick(l.p99)}
	}
	return s
}

// kept is the rings as the store keeps them.
type kept struct {
	V    int       `json:"v"`
	Step int64     `json:"step"`
	Hour *ringJSON `json:"hour"`
	Day  *ringJSON `json:"day"`
}

type ringJSON struct {
	Seq     []int64               `json:"seq"`
	Rules   map[string][4][]float `json:"rules"`
	Plugins map[string][2][]float `json:"plugins"`
	Queued  []float               `json:"queued"`
}

// float is a point in the stored rings: NaN (none) as null.
type float float64

func (f float) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

func (f *float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = float(math.NaN())
		return nil
	}
	var x float64
	err := json.Unmarshal(b, &x)
	*f = float(x)
	return err
}

func toF(v []float64) []float {
	out := make([]float, len(v))
	for i, x := range v {
		out[i] = float(x)
	}
	return out
}

func (r *ring) kept() *ringJSON {
	k := &ringJSON{Seq: r.seq, Rules: map[string][4][]float{}, Plugins: map[string][2][]float{}, Queued: toF(r.queued)}
	for name, rr := range r.rules {
		k.Rules[name] = [4][]float{toF(rr.started), toF(rr.failed), toF(rr.away), toF(rr.errors)}
	}
	for name, l := range r.plugins {
		k.Plugins[name] = [2][]float{toF(l.p50), toF(l.p99)}
	}
	return k
}

// Marshal is the rings as the store keeps them (a few KB a rule).
func (h *History) Marshal() ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeDay() // the quarter hour so far, as Snapshot shows it
	return json.Marshal(kept{V: 1, Step: int64(h.step), Hour: h.hour.kept(), Day: h.day.kept()})
}

// Restore takes back what Marshal gave (a start's): points of another
// step, or of a shape it does not know, are refused and the rings stay
// empty.
func (h *History) Restore(b []byte) error {
	var k kept
	if err := json.Unmarshal(b, &k); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if k.V != 1 || k.Step != int64(h.step) || k.Hour == nil || k.Day == nil {
		return fmt.Errorf("history: kept with another step or version (%d, %v)", k.V, time.Duration(k.Step))
	}
	hour, err := k.Hour.ring(h.step, HourPoints)
	if err != nil {
		return err
	}
	day, err := k.Day.ring(h.step*perDay, DayPoints)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hour, h.day, h.answers = hour, day, nil
	return nil
}

func (k *ringJSON) ring(step time.Duration, n int) (*ring, error) {
	bad := len(k.Seq) != n || len(k.Queued) != n || len(k.Rules) > MaxRules || len(k.Plugins) > MaxPlugins
	from := func(v []float) []float64 {
		if len(v) != n {
			bad = true
			return nan(n)
		}
		out := make([]float64, n)
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	r := &ring{step: step, seq: k.Seq, rules: map[string]*ruleRing{}, plugins: map[string]*latRing{}, queued: from(k.Queued)}
	for name, v := range k.Rules {
		r.rules[name] = &ruleRing{from(v[0]), from(v[1]), from(v[2]), from(v[3])}
	}
	for name, v := range k.Plugins {
		r.plugins[name] = &latRing{from(v[0]), from(v[1])}
	}
	if bad {
		return nil, fmt.Errorf("history: a kept ring is not %d points", n)
	}
	return r, nil
}

// Select is the part of s a page asks for (GET /v1/history's query):
// rule=ID, that rule's series alone and no plugin's; only=rules or
// only=plugins, the one kind; ring=hour or ring=day, the one ring. A page
// that draws one rule does not fetch every rule's points at each change.
func Select(s Snapshot, q url.Values) (Snapshot, error) {
	for k := range q {
		if k != "rule" && k != "only" && k != "ring" {
			return s, fmt.Errorf("history: no query %q (rule, only, ring)", k)
		}
	}
	keep := func(se *Series) {
		if id := q.Get("rule"); id != "" {
			one := map[string]*RuleSeries{}
			if r, ok := se.Rules[id]; ok {
				one[id] = r
			}
			se.Rules, se.Plugins = one, map[string]*Latency{}
		}
		switch q.Get("only") {
		case "rules":
			se.Plugins = map[string]*Latency{}
		case "plugins":
			se.Rules = map[string]*RuleSeries{}
		}
	}
	switch q.Get("only") {
	case "", "rules", "plugins":
	default:
		return s, fmt.Errorf("history: only=rules or only=plugins, not %q", q.Get("only"))
	}
	keep(&s.Hour)
	keep(&s.Day)
	switch q.Get("ring") {
	case "":
	case "hour":
		s.Day = Series{Step: s.Day.Step, End: s.Day.End}
	case "day":
		s.Hour = Series{Step: s.Hour.Step, End: s.Hour.End}
	default:
		return s, fmt.Errorf("history: ring=hour or ring=day, not %q", q.Get("ring"))
	}
	return s, nil
}

// maxAnswers bounds the JSON answers kept: the queries a page makes
// without a rule (the whole, one kind, one ring) are a handful.
const maxAnswers = 8

// JSON is the answer to GET /v1/history?q (Select), compact. The same
// query within a step is answered from what was made for the first: a
// thousand rules' points are megabytes, and the console asks at every
// change, from every page open.
func (h *History) JSON(q url.Values) ([]byte, error) {
	key := q.Encode()
	cache := q.Get("rule") == ""
	if cache {
		h.making.Lock()
		defer h.making.Unlock()
		h.mu.Lock()
		b, ok := h.answers[key]
		h.mu.Unlock()
		if ok {
			return b, nil
		}
	}
	s, err := Select(h.Snapshot(), q)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if cache {
		h.mu.Lock()
		if h.answers == nil {
			h.answers = map[string][]byte{}
		}
		if len(h.answers) < maxAnswers {
			h.answers[key] = b
		}
		h.mu.Unlock()
	}
	return b, nil
}

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TakeChanged reports whether a reading counted anything since it was
// last asked (a run, a call, a queued job), and forgets it: the caller
// writes the rings only then, so an idle daemon writes nothing and its
// idle minutes come back after a restart as gaps, not zeros.
func (h *History) TakeChanged() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.changed
	h.changed = false
	return c
}
