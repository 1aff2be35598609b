package schedule

import (
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/cronspec"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/sun"
	"github.com/ruled-dev/ruled/internal/testkit"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// env is a scheduler on a virtual clock over a store that outlives it,
// with checks run at once and every occurrence recorded.
type env struct {
	t     *testing.T
	clk   *sched.Virtual
	h     *testkit.Hasher
	log   *testkit.Log
	s     *Scheduler
	mu    sync.Mutex
	fired []string // "<rule> <due as offset from t0>"
	ids   map[string]bool
	hold  bool // keep done for later
	dones []func()
	live  map[string]bool
	owns  bool
	busy  bool // the rule has a run live (Config.Idle)
}

func newEnv(t *testing.T) *env {
	e := &env{t: t, clk: sched.NewVirtual(t0), h: &testkit.Hasher{}, log: &testkit.Log{}, ids: map[string]bool{}, live: map[string]bool{}, owns: true}
	e.s = e.scheduler()
	return e
}

func (e *env) scheduler() *Scheduler {
	return New(Config{Store: e.h, Clock: e.clk, Window: time.Hour, Log: e.log,
		Submit: func(_ string, f func()) { f() },
		Live:   func(id string) bool { return e.live[id] },
		Owns:   func(string) bool { return e.owns },
		Idle:   func(string) bool { return !e.busy },
		Fire: func(o Occurrence, done func()) {
			e.mu.Lock()
			e.fired = append(e.fired, o.Rule+" "+o.Due.Sub(t0).String())
			e.ids[o.RunID] = true
			if e.hold {
				e.dones = append(e.dones, done)
				e.mu.Unlock()
				return
			}
			e.mu.Unlock()
			done()
		}})
}

// restart is a new process over the same store, down for d first.
func (e *env) restart(d time.Duration, entries ...Entry) {
	e.s.Stop()
	e.clk.Advance(d) // nothing of the stopped scheduler fires
	e.s = e.scheduler()
	e.s.Set(entries)
	e.s.Start()
}

func (e *env) got() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := strings.Join(e.fired, ", ")
	e.fired = nil
	return s
}

func every(rule string, d time.Duration, missed rules.Missed, within time.Duration) Entry {
	return Entry{Rule: rule, Schedule: &rules.Schedule{Every: d, Missed: missed, Within: within}}
}

func cron(t *testing.T, rule, spec, zone string) Entry {
	sp, err := cronspec.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	return Entry{Rule: rule, Schedule: &rules.Schedule{Cron: sp, Zone: loc, TZ: zone}}
}

func (e *env) last(field string) time.Duration {
	all, _ := e.h.HGetAll(Hash)
	var r record
	json.Unmarshal([]byte(all[field]), &r)
	return time.UnixMilli(r.Last).Sub(t0)
}

func TestEvery(t *testing.T) {
	e := newEnv(t)
	e.s.Set([]Entry{every("r", 15*time.Minute, rules.MissedOnce, 0)})
	e.s.Start()
	if e.h.Sets() != 1 || e.last("r/0") != 0 {
		t.Fatalf("a new schedule's record: %d writes, last %v; want one, now", e.h.Sets(), e.last("r/0"))
	}
	e.clk.Advance(time.Hour)
	if got := e.got(); got != "r 15m0s, r 30m0s, r 45m0s, r 1h0m0s" {
		t.Errorf("fired %q", got)
	}
	if e.last("r/0") != time.Hour || e.h.Sets() != 5 {
		t.Errorf("last %v after %d writes; want 1h after 5 (one an occurrence)", e.last("r/0"), e.h.Sets())
	}
	// Between occurrences nothing is written, read or woken.
	sets := e.h.Sets()
	e.clk.Advance(14 * time.Minute)
	if e.h.Sets() != sets || e.clk.Len() != 1 {
		t.Errorf("between occurrences: %d writes, %d timers; want none and one", e.h.Sets()-sets, e.clk.Len())
	}
}

// TestMissed: a three-hour outage of a half-hourly schedule, under each
// policy.
func TestMissed(t *testing.T) {
	tests := []struct {
		missed rules.Missed
		within time.Duration
		want   string
	}{
		{rules.MissedSkip, 0, ""},
		{rules.MissedOnce, 0, "r 4h0m0s"},
		{rules.MissedAll, 0, "r 3h30m0s, r 4h0m0s"}, // within the 1h window
		{rules.MissedAll, 6 * time.Hour, "r 1h30m0s, r 2h0m0s, r 2h30m0s, r 3h0m0s, r 3h30m0s, r 4h0m0s"},
		{rules.MissedOnce, 10 * time.Minute, ""}, // the latest was 10 minutes late: past its window
	}
	for _, tc := range tests {
		t.Run(tc.missed.String()+" "+tc.within.String(), func(t *testing.T) {
			e := newEnv(t)
			en := every("r", 30*time.Minute, tc.missed, tc.within)
			e.s.Set([]Entry{en})
			e.s.Start()
			e.clk.Advance(70 * time.Minute)
			if got := e.got(); got != "r 30m0s, r 1h0m0s" {
				t.Fatalf("before the outage: %q", got)
			}
			if tc.within == 10*time.Minute {
				e.restart(3*time.Hour-10*time.Minute+20*time.Minute, en) // back at 4h20m
			} else {
				e.restart(3*time.Hour, en) // down from 1h10m to 4h10m
			}
			if got := e.got(); got != tc.want {
				t.Errorf("at the restart: fired %q; want %q", got, tc.want)
			}
			back := 4*time.Hour + 10*time.Minute
			if tc.within == 10*time.Minute {
				back = 4*time.Hour + 20*time.Minute
			}
			if l := e.last("r/0"); l != 4*time.Hour {
				t.Errorf("last %v; want 4h: every occurrence until %v handled", l, back)
			}
			e.clk.Advance(30 * time.Minute)
			if got := e.got(); got != "r 4h30m0s" {
				t.Errorf("after the restart: %q; want the next on time", got)
			}
		})
	}
}

// TestMissedFrequent: an every: 2s schedule down for 5 s, 20 s and 70 s,
// under each policy. An occurrence is on time within a tenth of its
// period (graceOf), so skip and once act on a frequent schedule too
// (issue 37, 7: with a grace of a minute, a 20 s outage ran all 10
// occurrences under skip).
func TestMissedFrequent(t *testing.T) {
	const p = 2 * time.Second
	span := func(from, to time.Duration) string {
		var s []string
		for d := from; d <= to; d += p {
			s = append(s, "r "+d.String())
		}
		return strings.Join(s, ", ")
	}
	tests := []struct {
		down   time.Duration // from 3s
		missed rules.Missed
		want   string
	}{
		{5 * time.Second, rules.MissedSkip, "r 8s"}, // back at 8s: 8s is due now
		{5 * time.Second, rules.MissedOnce, "r 8s"},
		{5 * time.Second, rules.MissedAll, "r 4s, r 6s, r 8s"},
		{20 * time.Second, rules.MissedSkip, ""}, // back at 23s: 22s is a second late
		{20 * time.Second, rules.MissedOnce, "r 22s"},
		{20 * time.Second, rules.MissedAll, span(4*time.Second, 22*time.Second)},
		{70 * time.Second, rules.MissedSkip, ""},
		{70 * time.Second, rules.MissedOnce, "r 1m12s"},
		{70 * time.Second, rules.MissedAll, span(4*time.Second, 72*time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.down.String()+" "+tc.missed.String(), func(t *testing.T) {
			e := newEnv(t)
			en := every("r", p, tc.missed, 0)
			e.s.Set([]Entry{en})
			e.s.Start()
			e.clk.Advance(3 * time.Second)
			if got := e.got(); got != "r 2s" {
				t.Fatalf("before the outage: %q", got)
			}
			e.restart(tc.down, en)
			if got := e.got(); got != tc.want {
				t.Errorf("at the restart: fired %q; want %q", got, tc.want)
			}
			next := (3*time.Second + tc.down + p) / p * p
			e.clk.Advance(next - 3*time.Second - tc.down)
			if got := e.got(); got != "r "+next.String() {
				t.Errorf("after the restart: %q; want the next on time, r %v", got, next)
			}
		})
	}
}

// TestClockSetBack: an occurrence ran; the clock is set back an hour.
// Nothing runs twice, and the next occurrence runs when the clock reads
// its time.
func TestClockSetBack(t *testing.T) {
	e := newEnv(t)
	e.s.Set([]Entry{every("r", time.Hour, rules.MissedAll, 0)})
	e.s.Start()
	e.clk.Advance(time.Hour + time.Minute) // 1h ran
	e.clk.SetWall(e.clk.Now().Add(-time.Hour))
	e.clk.Advance(2 * time.Hour) // the wall clock reads 2h01 at the end
	if got := e.got(); got != "r 1h0m0s, r 2h0m0s" {
		t.Errorf("fired %q; want 1h once, then 2h when the clock read it", got)
	}
}

// TestClockForward: the clock jumps forward three hours between two
// occurrences of an hourly schedule: what it passed over runs as
// missed: says (once: the latest).
func TestClockForward(t *testing.T) {
	e := newEnv(t)
	e.s.Set([]Entry{every("r", time.Hour, rules.MissedOnce, 0)})
	e.s.Start()
	e.clk.Advance(70 * time.Minute)
	e.clk.SetWall(e.clk.Now().Add(3 * time.Hour)) // 4h10 on the wall
	e.clk.Advance(50 * time.Minute)               // the 2h timer: the wall reads 5h
	if got := e.got(); got != "r 1h0m0s, r 5h0m0s" {
		t.Errorf("fired %q", got)
	}
}

// TestBootBehind: a device without a real-time clock starts in 1970:
// nothing fires until the clock has passed the last occurrence run, and
// then the schedule goes on from there.
func TestBootBehind(t *testing.T) {
	e := newEnv(t)
	en := every("r", time.Hour, rules.MissedOnce, 0)
	e.s.Set([]Entry{en})
	e.s.Start()
	e.clk.Advance(90 * time.Minute)
	e.got()
	e.s.Stop()
	real := e.clk.Now()
	e.clk.SetWall(time.Unix(0, 0))
	e.s = e.scheduler()
	e.s.Set([]Entry{en})
	e.s.Start()
	e.clk.Advance(5 * time.Minute)
	if got := e.got(); got != "" || e.log.Count("the clock reads before the last occurrence") != 1 {
		t.Fatalf("fired %q in 1970; log %q", got, e.log.Lines())
	}
	e.clk.SetWall(real.Add(5 * time.Minute)) // NTP: 1h35
	e.clk.Advance(time.Minute)               // the poll sees it
	e.clk.Advance(25 * time.Minute)
	if got := e.got(); got != "r 2h0m0s" {
		t.Errorf("fired %q; want 2h once the clock is right", got)
	}
}

// TestTakenBeforeWritten: the record moves only once the occurrence's
// run has taken it; a restart before then fires it again under the same
// run id, and not at all if that run was replayed.
func TestTakenBeforeWritten(t *testing.T) {
	e := newEnv(t)
	en := every("r", time.Hour, rules.MissedOnce, 0)
	e.s.Set([]Entry{en})
	e.s.Start()
	e.hold = true
	e.clk.Advance(time.Hour)
	if e.got() != "r 1h0m0s" || e.last("r/0") != 0 {
		t.Fatalf("last %v before the run took it; want 0", e.last("r/0"))
	}
	var first string
	for id := range e.ids {
		first = id
	}
	e.restart(time.Minute, en) // the run never took it
	if got := e.got(); got != "r 1h0m0s" || len(e.ids) != 1 {
		t.Fatalf("fired %q under %d ids; want 1h again, the same id", got, len(e.ids))
	}
	e.dones[len(e.dones)-1]()
	if e.last("r/0") != time.Hour {
		t.Errorf("last %v once taken; want 1h", e.last("r/0"))
	}
	// A run replayed from its record is the occurrence taken.
	e.hold = false
	e.h = &testkit.Hasher{}
	e.live[first] = true
	e.restart(0, en)
	if got := e.got(); got != "" {
		t.Errorf("a replayed occurrence fired again: %q", got)
	}
}

// TestCronInZone: a nightly schedule in Berlin across the spring change,
// and the event it fires carries its due time in that zone.
func TestCronInZone(t *testing.T) {
	e := newEnv(t)
	e.clk.SetWall(time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC))
	var events []string
	s := New(Config{Store: e.h, Clock: e.clk, Log: e.log, Submit: func(_ string, f func()) { f() },
		Fire: func(o Occurrence, done func()) { events = append(events, string(o.Event.Raw)+" "+o.RunID[:12]); done() }})
	s.Set([]Entry{cron(t, "night", "30 2 * * *", "Europe/Berlin")})
	s.Start()
	e.clk.Advance(48 * time.Hour)
	want := []string{
		`{"due":"2026-03-29T03:00:00+02:00","late_ms":0,"rule":"night","schedule":"30 2 * * * Europe/Berlin","topic":"ruled.schedule"}`,
		`{"due":"2026-03-30T02:30:00+02:00","late_ms":0,"rule":"night","schedule":"30 2 * * * Europe/Berlin","topic":"ruled.schedule"}`,
	}
	if len(events) != 2 || !strings.HasPrefix(events[0], want[0]) || !strings.HasPrefix(events[1], want[1]) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}

// TestSetKeepsAndForgets: a reload keeps an unchanged schedule's state,
// starts a changed one anew, and removes a removed one's record; a
// schedule another member owns fires nothing here.
func TestSetKeepsAndForgets(t *testing.T) {
	e := newEnv(t)
	a, b := every("a", time.Hour, rules.MissedOnce, 0), every("b", time.Hour, rules.MissedOnce, 0)
	e.s.Set([]Entry{a, b})
	e.s.Start()
	e.clk.Advance(time.Hour)
	e.got()
	e.s.Set([]Entry{a, every("b", 2*time.Hour, rules.MissedOnce, 0)})
	if e.last("a/0") != time.Hour || e.last("b/0") != time.Hour {
		t.Errorf("after the reload: a %v, b %v; want 1h for a, and b started now (1h)", e.last("a/0"), e.last("b/0"))
	}
	e.s.Set([]Entry{a})
	if all, _ := e.h.HGetAll(Hash); len(all) != 1 {
		t.Errorf("records %v; want a's only", all)
	}
	e.owns = false
	e.clk.Advance(3 * time.Hour)
	if got := e.got(); got != "" {
		t.Errorf("another member's schedule fired here: %q", got)
	}
}

// TestIdleCost: 10,000 idle schedules cost a small struct and a timer
// each, and between occurrences nothing reads or writes the store.
func TestIdleCost(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 schedules")
	}
	const n = 10_000
	e := newEnv(t)
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = cron(t, "r"+strconv.Itoa(i), "0 3 * * *", "Europe/Berlin")
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	e.s.Set(entries)
	e.s.Start()
	sets := e.h.Sets()
	e.clk.Advance(time.Hour) // 01:00 Berlin: nothing due
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%d idle nightly schedules: %.0f bytes each beyond their rules (the store's records included: %d bytes a record in this fake)",
		n, per, len(`{"key":"0 3 * * * Europe/Berlin","last":1764547200000}`))
	if e.h.Sets() != sets || e.clk.Len() != n {
		t.Errorf("an idle hour: %d writes, %d timers; want none and one a schedule", e.h.Sets()-sets, e.clk.Len())
	}
	if per > 2048 {
		t.Errorf("%.0f bytes a schedule; want at most 2 KiB", per)
	}
}

// TestCatchUpWaitsForIdle: after an outage the missed occurrences wait,
// one by one, until the rule has no run live (the one replayed at the
// start), told by RuleEnded; an occurrence on time does not wait.
func TestCatchUpWaitsForIdle(t *testing.T) {
	e := newEnv(t)
	en := every("r", 30*time.Minute, rules.MissedAll, 6*time.Hour)
	e.s.Set([]Entry{en})
	e.s.Start()
	e.clk.Advance(40 * time.Minute)
	e.got()
	e.busy = true // a run replayed at the start is live
	e.restart(time.Hour, en)
	if got := e.got(); got != "" {
		t.Fatalf("fired %q while the rule had a run live", got)
	}
	e.busy = false
	e.s.RuleEnded("r")
	if got := e.got(); got != "r 1h0m0s, r 1h30m0s" {
		t.Errorf("fired %q once idle; want the missed ones in order", got)
	}
	if e.last("r/0") != 90*time.Minute {
		t.Errorf("last %v; want 1h30m", e.last("r/0"))
	}
	// The catch-up's last run is still live at 2h: the occurrence due then
	// joins the catch-up and waits for it.
	e.busy = true
	e.clk.Advance(20 * time.Minute)
	if got := e.got(); got != "" {
		t.Errorf("at 2h, the catch-up's last run live: fired %q; want it to wait", got)
	}
	e.busy = false
	e.s.RuleEnded("r")
	if got := e.got(); got != "r 2h0m0s" {
		t.Errorf("once idle: %q; want 2h", got)
	}
	// Past the catch-up, an occurrence on time does not wait: the mode decides.
	e.busy = true
	e.clk.Advance(30 * time.Minute)
	if got := e.got(); got != "r 2h30m0s" {
		t.Errorf("on time: %q; want it fired whatever the rule runs", got)
	}
}

// TestClockForwardNoticed: with MaxWait (a device's minute), a clock set
// forward two days at 03:05 is noticed within the minute, and the nightly
// occurrence it passed over five minutes ago runs (missed: once).
func TestClockForwardNoticed(t *testing.T) {
	e := newEnv(t)
	e.clk.SetWall(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))
	var fired []string
	s := New(Config{Store: e.h, Clock: e.clk, Log: e.log, Window: 30 * time.Minute, MaxWait: time.Minute,
		Submit: func(_ string, f func()) { f() },
		Fire:   func(o Occurrence, done func()) { fired = append(fired, o.Due.Format("01-02 15:04")); done() }})
	s.Set([]Entry{cron(t, "night", "0 3 * * *", "UTC")})
	s.Start()
	e.clk.Advance(65 * time.Minute) // 03:05: the 12-01 occurrence ran
	e.clk.SetWall(e.clk.Now().Add(48 * time.Hour))
	e.clk.Advance(time.Minute)
	if strings.Join(fired, ",") != "12-01 03:00,12-03 03:00" {
		t.Errorf("fired %q; want 12-03 03:00 within a minute of the jump", fired)
	}
	if e.h.Sets() != 3 { // the new schedule, 12-01, 12-03
		t.Errorf("%d writes; the minute's looks write nothing", e.h.Sets())
	}
}

// TestSun: a sun schedule comes due at the sun's event at its location,
// each day, and an outage over one is caught up as missed: says; one
// with no location, or at a pole in a season without its event, never
// comes due and looks again a day later, not every minute (two virtual
// days: two wakes, not 2,880).
func TestSun(t *testing.T) {
	berlin := &sun.Location{Latitude: 52.52, Longitude: 13.405}
	e := newEnv(t)
	set := &rules.Schedule{Sun: sun.Sunset, Offset: -30 * time.Minute}
	e.s.Set([]Entry{{Rule: "porch", Schedule: set, Sun: berlin}})
	e.s.Start()
	e.clk.Advance(48 * time.Hour)
	var want []string
	for at := t0; len(want) < 2; {
		at = set.Next(at, berlin)
		want = append(want, "porch "+at.Sub(t0).String())
	}
	if got := e.got(); got != strings.Join(want, ", ") {
		t.Errorf("two days of half an hour before sunset: %q; want %q", got, strings.Join(want, ", "))
	}
	next := set.Next(e.clk.Now(), berlin)
	e.restart(next.Sub(e.clk.Now())+10*time.Minute, Entry{Rule: "porch", Schedule: set, Sun: berlin})
	if got, want := e.got(), "porch "+next.Sub(t0).String(); got != want {
		t.Errorf("after an outage over one, back 10 minutes later: %q; want %q, once", got, want)
	}

	for _, c := range []struct {
		name string
		at   *sun.Location
	}{{"no location", nil}, {"a polar summer's sunset", &sun.Location{Latitude: 89, Longitude: 0}}} {
		e := newEnv(t)
		e.clk = sched.NewVirtual(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
		e.s = e.scheduler()
		e.s.Set([]Entry{{Rule: "dark", Schedule: &rules.Schedule{Sun: sun.Sunset}, Sun: c.at}})
		e.s.Start()
		before := e.clk.Fired()
		e.clk.Advance(48 * time.Hour)
		if got, woke := e.got(), e.clk.Fired()-before; got != "" || woke > 2 {
			t.Errorf("%s: fired %q, woke %d times in 48 hours; want none, looking a day apart", c.name, got, woke)
		}
		if sets := e.h.Sets(); sets > 3 {
			t.Errorf("%s: %d writes in two days; want the first", c.name, sets)
		}
	}
}
