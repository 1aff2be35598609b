package seq

import (
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// TestDebounce: a key's triggers are held until they stop for the quiet
// period, and one run starts with the last; another key's are its own;
// max-wait bounds how long a burst that never stops holds its run back.
func TestDebounce(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.rule(rules.Rule{ID: "flap", Key: "vehicle", Debounce: rules.Debounce{For: 30 * time.Second, MaxWait: 2 * time.Minute}}, "alert")
	send := func(v, n string) {
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"` + v + `","n":"` + n + `"}`)})
		e.settle()
	}
	send("s1", "1")
	e.advance(10 * time.Second)
	send("s1", "2")
	send("s2", "1")
	e.advance(25 * time.Second) // s1's quiet period restarted at 10s
	if got := e.j.String(); got != "" {
		t.Fatalf("ran %q inside the quiet period", got)
	}
	e.advance(5 * time.Second) // 40s: s1 quiet for 30s, s2 too
	if got := e.j.String(); got != "alert:0:s1 alert:0:s2" && got != "alert:0:s2 alert:0:s1" {
		t.Fatalf("journal %q; want one run for each key", got)
	}
	if st := e.rn.RuleStats("flap"); st.Started != 2 || st.Debounced != 1 {
		t.Errorf("stats %+v; want 2 started, 1 replaced", st)
	}
	// A burst that never stops: every 20s for 3 minutes; max-wait 2m.
	e.j.got = nil
	for i := 0; i < 9; i++ {
		send("s3", "x")
		e.advance(20 * time.Second)
	}
	e.advance(time.Minute)
	if got := e.j.String(); got != "alert:0:s3 alert:0:s3" {
		t.Errorf("journal %q; want a run at max-wait and one after the burst", got)
	}
	if e.h.Len(PendingHash) != 0 {
		t.Errorf("%d records left", e.h.Len(PendingHash))
	}
}

// TestDebounceAcrossRestart: the held trigger is a record: a restart
// during the quiet period runs it once the period is over, with the last
// event.
func TestDebounceAcrossRestart(t *testing.T) {
	e := newEnv(t, 2, 100)
	rule := rules.Rule{ID: "flap", Key: "vehicle", Debounce: rules.Debounce{For: time.Minute}}
	s := e.rule(rule, "alert")
	e.fire(s, `{"topic":"t","vehicle":"s1","n":"first"}`)
	e.advance(20 * time.Second)
	e.fire(s, `{"topic":"t","vehicle":"s1","n":"last"}`)
	recs, _ := e.rn.store.List()
	if len(recs) != 1 || recs[0].Debounce == 0 || !strings.Contains(string(recs[0].Event), "last") {
		t.Fatalf("records %+v; want the last trigger's", recs)
	}
	e.restart()
	s = e.rule(rule, "alert")
	if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 1 {
		t.Fatalf("replayed %d", n)
	}
	e.advance(30 * time.Second)
	if e.j.String() != "" {
		t.Fatal("ran before its quiet period was over")
	}
	e.advance(30 * time.Second)
	if got := e.j.String(); got != "alert:0:s1" {
		t.Errorf("journal %q; want one run", got)
	}
	e.settle()
	if e.h.Len(PendingHash) != 0 {
		t.Errorf("%d records left", e.h.Len(PendingHash))
	}
}

// TestDebounceCancelled: a cancel-on event drops the key's held trigger.
func TestDebounceCancelled(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.rule(rules.Rule{ID: "flap", Key: "vehicle", Debounce: rules.Debounce{For: time.Minute},
		CancelOn: []rules.Cancel{{Pattern: "stop", Match: []string{"vehicle"}}}}, "alert")
	e.fire(s, `{"topic":"t","vehicle":"s1"}`)
	e.fire(s, `{"topic":"t","vehicle":"s2"}`)
	e.rn.CancelMatching(e.event(`{"topic":"stop","vehicle":"s1"}`))
	e.settle()
	e.advance(2 * time.Minute)
	if got := e.j.String(); got != "alert:0:s2" {
		t.Errorf("journal %q; want s2's run only", got)
	}
	if e.h.Len(PendingHash) != 0 {
		t.Errorf("%d records left", e.h.Len(PendingHash))
	}
}

// TestDebounceTwoBurstsReplayed: a process that stopped after a burst had
// ended, before its run took the trigger, while the key's next burst was
// held, leaves two records of one key: both are kept at the next start,
// the earlier admitted at once and the later held until its quiet period
// is over, in whichever order the store lists them.
func TestDebounceTwoBurstsReplayed(t *testing.T) {
	for i := 0; i < 8; i++ {
		e := newEnv(t, 2, 100)
		rule := rules.Rule{ID: "flap", Key: "vehicle", Debounce: rules.Debounce{For: time.Minute}}
		s := e.rule(rule, "alert")
		e.fire(s, `{"topic":"t","vehicle":"s1","n":"first"}`)
		recs, _ := e.rn.store.List()
		if len(recs) != 1 {
			t.Fatalf("records %+v; want one", recs)
		}
		later := recs[0]
		later.ID += "-later"
		later.Debounce += 70_000
		later.FireAt += 70_000
		later.Event = []byte(`{"topic":"t","vehicle":"s1","n":"last"}`)
		if err := e.rn.store.Put(later); err != nil {
			t.Fatal(err)
		}
		e.restart()
		e.advance(65 * time.Second) // the first burst's quiet period is over while down
		s = e.rule(rule, "alert")
		if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 2 {
			t.Fatalf("replayed %d; want both bursts", n)
		}
		e.settle()
		if got := e.j.String(); got != "alert:0:s1" {
			t.Fatalf("journal %q; want the earlier burst's run at once", got)
		}
		e.advance(time.Minute)
		if got := e.j.String(); got != "alert:0:s1" {
			t.Fatalf("journal %q; the later burst ran before its quiet period was over", got)
		}
		e.advance(10 * time.Second)
		if got := e.j.String(); got != "alert:0:s1 alert:0:s1" {
			t.Fatalf("journal %q; want the later burst's run at its due time", got)
		}
		e.settle()
		if e.h.Len(PendingHash) != 0 {
			t.Errorf("%d records left", e.h.Len(PendingHash))
		}
	}
}

// TestDebouncePreviousAcrossRestart: a debounced trigger's previous
// state is in its record, so its run after a restart reads the state
// before the trigger, as it would have without the restart.
func TestDebouncePreviousAcrossRestart(t *testing.T) {
	e := newEnv(t, 2, 100)
	rule := rules.Rule{ID: "flap", Key: "vehicle", Debounce: rules.Debounce{For: time.Minute}}
	build := func() *Sequence {
		s := e.outputs(rule, `alert||previous.watts watts`)
		s.Previous = true
		return s
	}
	ev := e.event(`{"topic":"t","vehicle":"s1","watts":3}`)
	ev.Prior = []byte(`{"vehicle":"s1","watts":120}`)
	e.rn.Fire(Trigger{Seq: build(), Event: ev})
	e.settle()
	e.restart()
	if n := e.rn.Replay([]*Sequence{build()}, time.Hour); n != 1 {
		t.Fatalf("replayed %d", n)
	}
	e.advance(time.Minute)
	if got := e.j.String(); got != "alert,previous.watts=120,watts=3" {
		t.Errorf("journal %q; want the run to read the state before its trigger", got)
	}
}
