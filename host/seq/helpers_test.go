package seq

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// journal records what actions did, in order.
type journal struct {
	mu  sync.Mutex
	got []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	j.got = append(j.got, s)
	j.mu.Unlock()
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.got...)
}

func (j *journal) String() string { return strings.Join(j.list(), " ") }

// act is an Action that journals "<step>:<pass>:<vehicle>" and can block
// until released, to hold a step on a worker.
type act struct {
	j       *journal
	name    string
	gate    chan struct{} // nil: do not block
	entered chan struct{}
	fail    bool
	fails   atomic.Int64 // fails this many calls more (a script's ~N)
}

func (a *act) Act(_ context.Context, c *Call) ([]byte, error) {
	if a.entered != nil {
		select { // only the first entry is awaited
		case a.entered <- struct{}{}:
		default:
		}
	}
	if a.gate != nil {
		<-a.gate
	}
	v := ""
	if e, err := eventField(c, "vehicle"); err == nil {
		v = e
	}
	a.j.add(fmt.Sprintf("%s:%d:%s", a.name, c.Info.Pass, v))
	if a.fail || a.fails.Add(-1) >= 0 {
		return nil, fmt.Errorf("%s failed", a.name)
	}
	return nil, nil
}

// cond is a Condition answering a field's truth.
type cond struct {
	field string
	calls int
	mu    sync.Mutex
}

func (c *cond) When(_ context.Context, call *Call) (bool, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	v, err := eventField(call, c.field)
	if err != nil {
		return false, fmt.Errorf("no %s", c.field)
	}
	return v == "true", nil
}

func eventField(c *Call, path string) (string, error) {
	e := &bus.Event{View: c.View}
	return fieldOf(e, path)
}

// env is a runner on a virtual clock with a real pool.
type env struct {
	t    *testing.T
	clk  *sched.Virtual
	pool *pool.Pool
	h    *testkit.Hasher
	rn   *Runner
	// wiring is what configure said, applied to every runner built.
	wiring []func(*RunnerConfig)
	log    *testkit.Log
	j      *journal
	dec    bus.Decoder
}

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, workers, capacity int) *env {
	t.Helper()
	e := &env{t: t, clk: sched.NewVirtual(t0), h: &testkit.Hasher{}, log: &testkit.Log{}, j: &journal{}}
	e.pool = pool.New(pool.Config{Workers: workers, Capacity: capacity})
	e.dec.Now = e.clk.Now
	e.rn = e.newRunner()
	t.Cleanup(func() { e.rn.Stop(); e.pool.Stop() })
	return e
}

// newRunner builds the env's runner over its pool, clock and store, wired
// as configure said.
func (e *env) newRunner() *Runner {
	cfg := RunnerConfig{Pool: e.pool, Scheduler: e.clk, Store: NewPendingStore(e.h, Placement{}, e.log), Log: e.log}
	for _, f := range e.wiring {
		f(&cfg)
	}
	return NewRunner(cfg)
}

// configure wires the runner as f says, now (before anything fired: the
// runner is built again) and after every restart.
func (e *env) configure(f func(*RunnerConfig)) {
	e.wiring = append(e.wiring, f)
	e.rn.Stop()
	e.rn = e.newRunner()
}

// restart simulates a new process over the same store and clock.
func (e *env) restart() {
	e.rn.Stop()
	e.pool.Stop()
	e.pool = pool.New(pool.Config{Workers: 2})
	e.rn = e.newRunner()
}

func (e *env) event(js string) *bus.Event {
	e.t.Helper()
	ev, err := e.dec.Decode([]byte(js))
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

// settle waits until everything the runner set off has run (Quiet).
func (e *env) settle() {
	e.t.Helper()
	e.quiet(0)
}

// quiet waits until at most n of the runner's jobs and writes are in
// flight: the steps a test holds on workers.
func (e *env) quiet(n int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.rn.Quiet(ctx, n); err != nil {
		e.t.Fatalf("the runner never settled to %d in flight: %d (pool %+v)", n, e.rn.Counts().InFlight, e.pool.Stats())
	}
}

func (e *env) fire(s *Sequence, js string) {
	e.rn.Fire(Trigger{Seq: s, Event: e.event(js)})
	e.settle()
}

func (e *env) advance(d time.Duration) {
	e.clk.Advance(d)
	e.settle()
}

// rule builds a Sequence: steps given as "name" or "name+5m" (after) or
// "name+5m!" (durable).
func (e *env) rule(r rules.Rule, steps ...string) *Sequence {
	rr := r
	if rr.Max == 0 {
		rr.Max = 10
	}
	if rr.Repeat.Passes == 0 {
		rr.Repeat.Passes = 1
	}
	s := &Sequence{Rule: &rr}
	for i, spec := range steps {
		spec, failing, _ := strings.Cut(spec, "~")
		if name, w, ok := strings.Cut(spec, "?"); ok { // a wait-for: name?topic/timeout[/stop]
			rr.Steps = append(rr.Steps, e.waitStep(s, name, i, w))
			continue
		}
		name, rest, _ := strings.Cut(spec, "+")
		st := rules.Step{Name: name, Index: i, Do: rules.Call{Plugin: "p", Function: name, With: []byte("{}")}}
		if rest != "" {
			st.Durable = strings.HasSuffix(rest, "!")
			d, err := time.ParseDuration(strings.TrimSuffix(rest, "!"))
			if err != nil {
				e.t.Fatal(err)
			}
			st.After = d
		}
		rr.Steps = append(rr.Steps, st)
		a := &act{j: e.j, name: name}
		if n, err := strconv.Atoi(failing); err == nil {
			a.fails.Store(int64(n))
		}
		s.Steps = append(s.Steps, CompiledStep{Name: name, Action: a,
			After: st.After, Durable: st.Durable, Fingerprint: st.Fingerprint(), Digest: "d1"})
	}
	return s
}

// waitStep appends to s a wait-for step from "topic/timeout[/stop]": it
// waits for an event of the topic and the run's vehicle, up to timeout,
// then goes on (or, with /stop — on-timeout: stop — ends the run), and returns its rule step.
func (e *env) waitStep(s *Sequence, name string, i int, spec string) rules.Step {
	parts := strings.Split(spec, "/")
	timeout, err := time.ParseDuration(parts[len(parts)-1])
	stop := false
	if len(parts) == 3 && parts[2] == "stop" {
		timeout, err = time.ParseDuration(parts[1])
		stop = true
	}
	if err != nil || len(parts) < 2 {
		e.t.Fatalf("wait-for %q: want topic/timeout[/stop]", spec)
	}
	w := &rules.Wait{Pattern: rules.Pattern(parts[0]), Match: []string{"vehicle"}, Timeout: timeout, Continue: !stop}
	st := rules.Step{Name: name, Index: i, Wait: w}
	s.Steps = append(s.Steps, CompiledStep{Name: name, Do: "wait-for " + parts[0], Fingerprint: st.Fingerprint(),
		Wait: &Wait{Pattern: w.Pattern, Match: w.Match, Timeout: w.Timeout, Continue: w.Continue}})
	return st
}

func sortedKeys(m map[string]uint64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// fieldOf returns the value at path in an event as text.
func fieldOf(e *bus.Event, path string) (string, error) {
	v, err := abi.ParseView(e.View)
	if err != nil {
		return "", err
	}
	x, ok := v.Find(path)
	if !ok {
		return "", fmt.Errorf("no %s", path)
	}
	if x.Kind() == abi.ValueBool {
		b, _ := x.Bool()
		return fmt.Sprint(b), nil
	}
	if b, ok := x.Str(); ok {
		return string(b), nil
	}
	if f, ok := x.Float(); ok {
		return fmt.Sprint(f), nil
	}
	return "", fmt.Errorf("%s is a %v", path, x.Kind())
}
