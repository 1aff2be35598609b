package seq

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/rules"
)

// owing is an Action that journals "<name>:<vehicle>" and owes a write
// (Call.Owed) that lands when gate closes: the vehicle "broken"'s fails.
type owing struct {
	j    *journal
	name string
	gate chan struct{}
	// waiting hears of each owed write that has begun to wait for gate.
	waiting chan struct{}
}

func (a *owing) Act(_ context.Context, c *Call) ([]byte, error) {
	v, _ := eventField(c, "vehicle")
	a.j.add(a.name + ":" + v)
	if c.Owed == nil {
		return nil, errors.New("the call takes no owed writes")
	}
	*c.Owed = append(*c.Owed, func() error {
		if a.waiting != nil {
			a.waiting <- struct{}{}
		}
		<-a.gate
		if v == "broken" {
			return errors.New("the store could not write it")
		}
		return nil
	})
	return nil, nil
}

// TestOwedWritesAreWaitedAside: a step whose action owes a write (a
// publish into the MQTT outbox) is not done — its next step does not
// run, its run does not end — until the write lands, and its worker
// runs other runs' steps meanwhile (issue 39: their writes share one
// commit); a write that fails fails the step.
func TestOwedWritesAreWaitedAside(t *testing.T) {
	e := newEnv(t, 1, 100)
	s := e.rule(rules.Rule{ID: "r", Mode: rules.ModeParallel}, "a", "b")
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	defer release() // on a failure too: the settling cleanup waits for the writes
	waiting := make(chan struct{}, 3)
	s.Steps[0].Action = &owing{j: e.j, name: "a", gate: gate, waiting: waiting}
	for _, v := range []string{"v1", "broken", "v2"} {
		e.rn.Fire(Trigger{Seq: s, Event: e.event(`{"topic":"t","vehicle":"` + v + `"}`)})
	}
	for range 3 { // three writes wait at once: each aside, not on the one worker
		select {
		case <-waiting:
		case <-time.After(10 * time.Second):
			t.Fatalf("journal %q: the one worker did not go on to the next runs while a write was owed", e.j)
		}
	}
	if got := e.j.String(); strings.Contains(got, "b:") {
		t.Fatalf("journal %q: a step ran after one whose write had not landed", got)
	}
	if n := e.rn.Counts().Aside; n != 3 {
		t.Errorf("%d steps waiting aside; want 3", n)
	}
	if st := e.rn.RuleStats("r"); st.Completed != 0 {
		t.Errorf("stats %+v: a run ended before its write landed", st)
	}
	release()
	e.settle()
	got := e.j.String()
	if !strings.Contains(got, "b:0:v1") || !strings.Contains(got, "b:0:v2") || strings.Contains(got, "b:0:broken") {
		t.Errorf("journal %q; want b for v1 and v2, none for the failed write", got)
	}
	if st := e.rn.RuleStats("r"); st.Completed != 2 || st.Failed != 1 {
		t.Errorf("stats %+v; want 2 completed, 1 failed", st)
	}
}
