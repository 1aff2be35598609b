package seq

import (
	"context"
	"fmt"

	"github.com/ruled-dev/ruled/abi"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/sched"
)

// memHasher is a hand-written Hasher over maps.
type memHasher struct {
	mu   sync.Mutex
	m    map[string]map[string]string
	sets int
	fail bool
}

func (h *memHasher) HSet(key, field string, value any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail {
		return fmt.Errorf("store down")
	}
	if h.m == nil {
		h.m = map[string]map[string]string{}
	}
	if h.m[key] == nil {
		h.m[key] = map[string]string{}
	}
	switch v := value.(type) {
	case []byte:
		h.m[key][field] = string(v)
	case string:
		h.m[key][field] = v
	default:
		return fmt.Errorf("unexpected %T", value)
	}
	h.sets++
	return nil
}

func (h *memHasher) HGetAll(key string) (map[string]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]string{}
	for k, v := range h.m[key] {
		out[k] = v
	}
	return out, nil
}

func (h *memHasher) HDel(key string, fields ...string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail {
		return fmt.Errorf("store down")
	}
	for _, f := range fields {
		delete(h.m[key], f)
	}
	return nil
}

func (h *memHasher) records() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m[PendingHash])
}

// nopLog discards; logLines records.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(level, msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprint(level, " ", msg, " ", args))
}
func (l *logLines) Info(msg string, args ...any)  { l.add("INFO", msg, args...) }
func (l *logLines) Warn(msg string, args ...any)  { l.add("WARN", msg, args...) }
func (l *logLines) Error(msg string, args ...any) { l.add("ERROR", msg, args...) }
func (l *logLines) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// count is how many lines contain sub.
func (l *logLines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// snapshot is the lines so far.
func (l *logLines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

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
	if a.fail {
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
	h    *memHasher
	rn   *Runner
	// wiring is what configure said, applied to every runner built.
	wiring []func(*RunnerConfig)
	log    *logLines
	j      *journal
	dec    bus.Decoder
}

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, workers, capacity int) *env {
	t.Helper()
	e := &env{t: t, clk: sched.NewVirtual(t0), h: &memHasher{}, log: &logLines{}, j: &journal{}}
	e.pool = pool.New(pool.Config{Workers: workers, Capacity: capacity})
	e.dec.Now = e.clk.Now
	e.rn = e.newRunner()
	t.Cleanup(func() { e.rn.Stop(); e.pool.Stop() })
	return e
}

// newRunner builds the env's runner over its pool, clock and store, wired
// as configure said.
func (e *env) newRunner() *Runner {
	cfg := RunnerConfig{Pool: e.pool, Scheduler: e.clk, Store: NewPendingStore(e.h, e.log), Log: e.log}
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

// settle waits until the pool has nothing queued or running.
func (e *env) settle() {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if st := e.pool.Stats(); st.Queued == 0 && st.Busy == 0 {
			// Twice, to let a completion callback's submit land.
			time.Sleep(200 * time.Microsecond)
			if st := e.pool.Stats(); st.Queued == 0 && st.Busy == 0 {
				return
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	e.t.Fatalf("pool never settled: %+v", e.pool.Stats())
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
		s.Steps = append(s.Steps, CompiledStep{Name: name, Action: &act{j: e.j, name: name},
			After: st.After, Durable: st.Durable, Fingerprint: st.Fingerprint(), Digest: "d1"})
	}
	return s
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
