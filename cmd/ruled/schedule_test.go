package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/redistest"
)

var dueRE = regexp.MustCompile(`TICK (\S+) late=(\d+)`)

// ticks lists the due times the logs' "TICK <due> late=<ms>" lines name,
// in order, with how late each ran.
func ticks(logs ...string) (dues []time.Time, late map[time.Time]int) {
	late = map[time.Time]int{}
	for _, l := range logs {
		for _, m := range dueRE.FindAllStringSubmatch(l, -1) {
			at, err := time.Parse(time.RFC3339, m[1])
			if err != nil {
				continue
			}
			dues = append(dues, at)
			if ms, _ := strconv.Atoi(m[2]); ms > 1000 { // past a timer's latency: missed while down
				late[at]++
			}
		}
	}
	return dues, late
}

// TestKill9Schedule: a schedule every 2s, SIGKILLed and started again 5s
// later. The occurrences missed meanwhile run at the start (missed: all),
// late, and every occurrence from the first to the last runs — none
// dropped, none twice but the one a kill may catch between its run and
// its record (at least once, the same run id and so the same idempotency
// key). Nothing is written between occurrences.
func TestKill9Schedule(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	stores(t, func(t *testing.T, storeArgs func() []string) {
		rules, plugins := fixture(t, `
- id: tick
  on: {every: 2s, missed: all, within: 1h}
  steps:
    - do: log.log
      with: {message: "TICK {{due}} late={{late_ms}}"}
`)
		data := t.TempDir()
		args := append([]string{"--rules", rules, "--plugins", plugins}, storeArgs()...)
		a := startRuled(t, data, args...)
		a.waitLogWithin("TICK ", 2, 20*time.Second)
		a.kill()
		aDues, _ := ticks(a.out.String())
		time.Sleep(5 * time.Second) // two or three occurrences fall while it is down
		b := startRuled(t, data, args...)
		b.waitLogWithin("TICK ", 4, 20*time.Second)
		time.Sleep(300 * time.Millisecond)
		dues, late := ticks(a.out.String(), b.out.String())
		slices.SortFunc(dues, func(x, y time.Time) int { return x.Compare(y) })
		twice := 0
		for i := 1; i < len(dues); i++ {
			switch gap := dues[i].Sub(dues[i-1]); gap {
			case 0:
				twice++
				if !dues[i].Equal(aDues[len(aDues)-1]) {
					t.Errorf("%v ran twice, and it was not the occurrence the kill caught", dues[i])
				}
			case 2 * time.Second:
			default:
				t.Errorf("a gap of %v after %v: an occurrence dropped (ran: %v)", gap, dues[i-1], dues)
			}
		}
		if twice > 1 {
			t.Errorf("%d occurrences ran twice; at most the one the kill caught may", twice)
		}
		if len(late) < 2 {
			t.Errorf("%d occurrences ran late at the restart; want the two or three missed while down\n%s", len(late), b.out.String())
		}
		if !strings.Contains(b.out.String(), "TICK ") {
			t.Fatal("the restart ran nothing")
		}
		t.Logf("%d occurrences, %d late at the restart, %d twice", len(dues), len(late), twice)
	})
}

// TestFleetSchedule: three fleet members share one Redis; a schedule
// every second runs each occurrence once across them — on the member
// holding the rule's shard, which may change while members join — and
// none is missed.
func TestFleetSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	srv := redistest.Start(t)
	rules, plugins := fixture(t, `
- id: tick
  on: {every: 1s}
  steps:
    - do: log.log
      with: {message: "TICK {{due}} late={{late_ms}}"}
`)
	args := []string{"--rules", rules, "--plugins", plugins, "--redis", srv.URL(), "--shards", "4", "--workers", "2"}
	var procs []*proc
	for range 3 {
		procs = append(procs, startRuled(t, t.TempDir(), args...))
	}
	time.Sleep(6 * time.Second)
	var outs []string
	member := map[time.Time]int{}
	for i, p := range procs {
		outs = append(outs, p.out.String())
		mine, _ := ticks(p.out.String())
		for _, d := range mine {
			member[d] = i
		}
	}
	dues, _ := ticks(outs...)
	slices.SortFunc(dues, func(x, y time.Time) int { return x.Compare(y) })
	if len(dues) < 4 {
		t.Fatalf("%d occurrences in 6s; want about 6", len(dues))
	}
	for i := 1; i < len(dues); i++ {
		if gap := dues[i].Sub(dues[i-1]); gap != time.Second {
			t.Errorf("after %v: a gap of %v (0: run on two members; more: missed)", dues[i-1], gap)
		}
	}
	// Members joining move shards at first; once they settle, one runs it.
	last := dues[len(dues)-3:]
	if member[last[0]] != member[last[1]] || member[last[1]] != member[last[2]] {
		t.Errorf("the last occurrences ran on members %d, %d, %d; want the one holding the shard",
			member[last[0]], member[last[1]], member[last[2]])
	}
}
