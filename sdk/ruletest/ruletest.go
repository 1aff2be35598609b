package ruletest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/config"
	"github.com/ruled-dev/ruled/host/daemon"
	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/sun"
	"github.com/ruled-dev/ruled/internal/syncbuf"
)

// DefaultStart is where the virtual clock starts unless told.
var DefaultStart = time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)

// T is what the harness needs of a test: *testing.T and *testing.B are
// one, and so is `ruled test`'s scenario runner. Fatalf must not return
// (testing's ends the goroutine; the runner's panics and recovers).
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
	Failed() bool
}

// Options say what to run.
type Options struct {
	// Rules is a directory of rule files. Required.
	Rules string
	// Plugins maps a plugin's name (as rules call it) to a .wasm file, or
	// to a Go plugin package's directory (built with BuildGo, cached).
	// Relative paths are from the current directory: a test's package.
	Plugins map[string]string
	// Grants are the capabilities each plugin gets (publish, kv, fire, http).
	Grants map[string][]abi.Capability
	// Start is the virtual clock's start. default: DefaultStart.
	Start time.Time
	// Log receives the daemon's log. default: kept, and printed when the
	// test fails.
	Log io.Writer
	// ReplayWindow is the daemon's --replay-window: a waiting step more
	// than this past due when the daemon starts (Down) is dropped.
	// default: the daemon's (1h).
	ReplayWindow time.Duration
	// Location is where the daemon is, for the rules' sun schedules and
	// sun.<field> (its location: settings); nil: nowhere.
	Location *sun.Location
	// HTTP are the answers to plugins' outbound requests, which go to the
	// harness's stub, never to the network: the first whose URL prefixes
	// the request's answers it; none: 200 with an empty body. Every
	// request is recorded (Requests).
	HTTP []Answer
}

// Answer is the stub's answer to the requests whose URL starts with URL.
type Answer struct {
	URL    string
	Status int // default 200
	Body   string
}

// Request is an outbound HTTP request a plugin made.
type Request struct {
	abi.HTTPRequest
	Plugin string
	At     time.Time // on the virtual clock
}

// Event is an event the daemon published (a plugin's publish, or a
// trigger the test sent).
type Event struct {
	Topic string
	Raw   string
	At    time.Time // on the virtual clock
	Sent  bool      // the test published it (Publish); false: a rule did
}

// Harness is one daemon under test.
type Harness struct {
	t     T
	opts  Options
	clk   *sched.Virtual
	data  string
	rules string
	plugs string
	d     *daemon.Daemon
	stop  func()
	logs  *syncbuf.Buffer

	mu       sync.Mutex
	seen     []Event
	mine     map[string]bool // ids of the events the test published
	actions  []Action
	requests []Request
	answers  []Answer // the stub's (Options.HTTP, SetHTTP)
	notes    []note   // the test's own steps and what it saw, for Timeline
}

// Action is one call of an action: which step of which run, the config,
// the event, the idempotency key, and what it returned.
type Action struct {
	observe.ActionCall
	At time.Time // on the virtual clock
}

type note struct {
	at   time.Time
	text string
}

// New starts the daemon on a copy of the rules and plugins, over a fresh
// embedded store, on a virtual clock. It stops with the test.
func New(t T, opts Options) *Harness {
	t.Helper()
	if opts.Start.IsZero() {
		opts.Start = DefaultStart
	}
	dir := t.TempDir()
	h := &Harness{t: t, opts: opts, clk: sched.NewVirtual(opts.Start), data: filepath.Join(dir, "data"),
		rules: filepath.Join(dir, "rules"), plugs: filepath.Join(dir, "plugins"), logs: &syncbuf.Buffer{},
		mine: map[string]bool{}, answers: opts.HTTP}
	copyRules(t, opts.Rules, h.rules)
	if err := os.MkdirAll(h.plugs, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	for name, src := range opts.Plugins {
		h.writePlugin(name, src)
	}
	// Share the tests' compilation cache: a second harness starts in
	// milliseconds instead of compiling every plugin again.
	os.MkdirAll(filepath.Join(h.data, "cache"), 0o755)
	os.MkdirAll(CacheDir("wazero"), 0o755)
	os.Symlink(CacheDir("wazero"), filepath.Join(h.data, "cache", "wazero"))
	h.start()
	t.Cleanup(func() {
		if t.Failed() && opts.Log == nil {
			t.Logf("daemon log:\n%s", h.logs.String())
		}
		h.stopDaemon()
	})
	return h
}

func (h *Harness) writePlugin(name, src string) {
	h.t.Helper()
	path := src
	if !strings.HasSuffix(src, ".wasm") {
		var err error
		if path, err = BuildGo(src); err != nil {
			h.t.Fatalf("%v", err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatalf("ruletest: plugin %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(h.plugs, name+".wasm"), b, 0o644); err != nil {
		h.t.Fatalf("%v", err)
	}
}

func (h *Harness) start() {
	h.t.Helper()
	plugins := map[string]daemon.PluginConfig{}
	for name, caps := range h.opts.Grants {
		plugins[name] = daemon.PluginConfig{Grant: caps}
	}
	var out io.Writer = h.logs
	if h.opts.Log != nil {
		out = io.MultiWriter(h.logs, h.opts.Log)
	}
	// Watching from the moment the bus opens: a step replayed at the start
	// (a finally step of a run dropped then) publishes before Start returns.
	watch := func(e *bus.Event) {
		h.mu.Lock()
		h.seen = append(h.seen, Event{Topic: e.Topic, Raw: string(e.Raw), At: h.clk.Now(), Sent: h.mine[e.ID]})
		if !h.mine[e.ID] {
			h.notes = append(h.notes, note{h.clk.Now(), "« published " + e.Topic + " " + string(e.Raw)})
		}
		h.mu.Unlock()
	}
	cfg := daemon.Config{RulesDir: h.rules, PluginsDir: h.plugs, DataDir: h.data, Clock: h.clk,
		Plugins: plugins, RulesRefresh: -1, ObserveAction: h.observe, ReplayWindow: h.opts.ReplayWindow, HTTP: stub{h},
		SeeEvents: watch}
	if l := h.opts.Location; l != nil {
		cfg.Location = config.Location{Latitude: l.Latitude, Longitude: l.Longitude, Elevation: l.Elevation, HasLatitude: true, HasLongitude: true}
	}
	d, err := daemon.New(cfg, hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Debug}))
	if err != nil {
		h.t.Fatalf("%v", err)
	}
	if err := d.Start(context.Background()); err != nil {
		h.t.Fatalf("%v", err)
	}
	h.d, h.stop = d, func() {}
	h.checkLoaded()
	// Steps Replay found past due are parked for now: fire them, as a
	// real clock would at once.
	h.clk.Advance(0)
	h.Settle()
}

// checkLoaded fails the test when a plugin or a rule did not load: a test
// of rules that are not there would only see nothing happen ("0 matching
// events") and leave its author to guess why.
func (h *Harness) checkLoaded() {
	h.t.Helper()
	st := h.d.Status()
	for _, p := range st.Failed {
		msg := p.Error
		name := strings.TrimSuffix(filepath.Base(p.File), ".wasm")
		if i := strings.Index(msg, ": add --grant"); i >= 0 {
			// The daemon says how an operator grants it; a test grants
			// it in its own words.
			msg = msg[:i]
			capability := "capability"
			if _, rest, ok := strings.Cut(msg, `needs the "`); ok {
				capability, _, _ = strings.Cut(rest, `"`)
			}
			msg += fmt.Sprintf(" (grant it: grants: {%s: [%s]} in a scenario file, Options.Grants in Go)", name, capability)
		}
		h.t.Errorf("ruletest: plugin %s did not load: %s", name, msg)
	}
	for _, p := range st.Invalid {
		at := p.At
		if rel, err := filepath.Rel(h.rules, at); err == nil && !strings.HasPrefix(rel, "..") {
			at = filepath.Join(h.opts.Rules, rel) // the author's file, not the harness's copy
		}
		msg := at + ": " + p.Error
		if _, rest, ok := strings.Cut(p.Error, " did not load: "); ok && rest != "" {
			msg = at + ": " + strings.SplitN(p.Error, ":", 2)[0] + " (said above)"
		}
		if p.Hint != "" {
			msg += " (hint: " + p.Hint + ")"
		}
		h.t.Errorf("ruletest: rule not loaded: %s", msg)
	}
}

func (h *Harness) stopDaemon() {
	if h.d == nil {
		return
	}
	h.stop()
	h.d.Stop()
	h.d = nil
}

// Log is the daemon's log so far, across restarts.
func (h *Harness) Log() string { return h.logs.String() }

// Daemon is the daemon under test, for what the harness does not wrap.
func (h *Harness) Daemon() *daemon.Daemon { return h.d }

// Now is the virtual clock's time.
func (h *Harness) Now() time.Time { return h.clk.Now() }

// Publish sends an event (JSON with a "topic") as if it arrived on the
// bus, and returns once everything it set off has run.
func (h *Harness) Publish(event string) {
	h.t.Helper()
	e, err := h.d.Decoder().Decode([]byte(event))
	if err != nil {
		h.t.Fatalf("ruletest: event %s: %v", event, err)
	}
	h.mu.Lock()
	h.mine[e.ID] = true
	h.mu.Unlock()
	h.note("» publish " + e.Topic + " " + string(e.Raw))
	if err := h.d.Publish(context.Background(), e); err != nil {
		h.t.Fatalf("%v", err)
	}
	h.Settle()
}

// Advance moves the virtual clock by d, firing what comes due in order
// and letting each fire's work finish before the clock moves on.
func (h *Harness) Advance(d time.Duration) {
	h.t.Helper()
	h.AdvanceTo(h.clk.Now().Add(d))
}

// AdvanceTo moves the virtual clock to t (see Advance).
func (h *Harness) AdvanceTo(t time.Time) {
	h.t.Helper()
	for {
		h.Settle()
		next, ok := h.clk.Next()
		if !ok || h.clk.Now().Add(next).After(t) {
			break
		}
		h.clk.Advance(next)
	}
	if rest := t.Sub(h.clk.Now()); rest > 0 {
		h.clk.Advance(rest)
	}
	h.Settle()
}

// Settle waits until the daemon's workers are idle and nothing is queued:
// what has been set off has run. It waits in real time, briefly; the
// virtual clock does not move.
func (h *Harness) Settle() {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	quiet := 0
	for quiet < 3 {
		if h.d.Idle() {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			st := h.d.Status()
			h.t.Fatalf("ruletest: the daemon did not settle in 30s (queued %d, busy %d)", st.Pool.Queued, st.Pool.Busy)
		}
		time.Sleep(time.Millisecond)
	}
}

// Restart stops the daemon as a power cut would leave it — durable steps'
// records and rule states stay in the store — and starts it again on the
// same clock, rules and plugins: waiting steps replay.
func (h *Harness) Restart() {
	h.t.Helper()
	h.note("» restart")
	h.stopDaemon()
	h.start()
}

// Down stops the daemon as a power cut would, lets d pass on the clock
// with no process running — a step due meanwhile comes due while nothing
// runs it —, and starts it again: waiting steps replay, those past due
// within the replay window (Options.ReplayWindow) at once, older ones
// dropped with their reason.
func (h *Harness) Down(d time.Duration) {
	h.t.Helper()
	h.note("» down for " + d.String())
	h.stopDaemon()
	h.clk.Advance(d)
	h.start()
}

// SetClock sets the wall clock to t, forward or back, as NTP or an
// operator would on a device: timers keep their own (monotonic) time, so
// a step waiting 10 minutes still waits 10 minutes.
func (h *Harness) SetClock(t time.Time) {
	h.t.Helper()
	h.note("» the clock is set to " + t.UTC().Format(time.RFC3339))
	h.clk.SetWall(t)
	h.Settle()
}

// ReplacePlugin swaps a plugin's module while the daemon runs (a .wasm
// file or a Go package directory, as in Options.Plugins): steps already
// waiting keep the module they were scheduled with.
func (h *Harness) ReplacePlugin(name, src string) {
	h.t.Helper()
	h.note("» replace plugin " + name + " with " + src)
	h.writePlugin(name, src)
	h.d.ReloadFiles(filepath.Join(h.plugs, name+".wasm"))
	h.Settle()
}

// ReplaceRules swaps the rule files for those in dir while the daemon
// runs.
func (h *Harness) ReplaceRules(dir string) {
	h.t.Helper()
	h.note("» replace rules with " + dir)
	old, _ := filepath.Glob(filepath.Join(h.rules, "*"))
	for _, f := range old {
		os.Remove(f)
	}
	copyRules(h.t, dir, h.rules)
	now, _ := filepath.Glob(filepath.Join(h.rules, "*"))
	h.d.ReloadFiles(append(old, now...)...)
	h.Settle()
}

// Published returns the events published on topics starting with
// prefix, in order.
func (h *Harness) Published(prefix string) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for _, e := range h.seen {
		if strings.HasPrefix(e.Topic, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// ExpectPublished fails the test unless exactly n events were published on
// topics starting with prefix.
func (h *Harness) ExpectPublished(prefix string, n int) []Event {
	h.t.Helper()
	got := h.Published(prefix)
	if len(got) != n {
		var topics []string
		for _, e := range h.Published("") {
			topics = append(topics, e.At.Format("15:04:05")+" "+e.Topic)
		}
		h.fail("ruletest: %d events published on %s*; want %d.", len(got), prefix, n)
	}
	return got
}

// State is a rule's lifecycle state (runnable, paused, sleeping, …).
func (h *Harness) State(rule string) string {
	h.t.Helper()
	return h.rule(rule).State
}

// Window is a window's value for a key, as rules read it (count, sum,
// avg …; docs/rules.md, Windows), failing the test when no window of that
// name is defined.
func (h *Harness) Window(name, key string) map[string]any {
	h.t.Helper()
	b, ok := h.d.Window(name, key)
	if !ok {
		h.t.Fatalf("ruletest: no window %q is defined", name)
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		h.t.Fatalf("ruletest: window %s: %v", name, err)
	}
	return m
}

// Stats are a rule's run counters (started, completed, suppressed, …)
// since the daemon last started: a Restart sets them back to zero.
func (h *Harness) Stats(rule string) seq.RuleStats {
	h.t.Helper()
	return h.rule(rule).Stats
}

func (h *Harness) rule(id string) status.RuleStatus {
	h.t.Helper()
	for _, r := range h.d.Rules() {
		if r.ID == id {
			return r
		}
	}
	h.t.Fatalf("ruletest: no rule %q", id)
	return status.RuleStatus{}
}

// Command applies an operator's command to a rule (pause, resume, sleep,
// kill, reset), failing the test if it is refused.
func (h *Harness) Command(rule string, c status.Command) {
	h.t.Helper()
	h.note("» " + c.Command + " " + rule)
	if _, err := h.d.Command(rule, c); err != nil {
		h.t.Fatalf("%v", err)
	}
	h.Settle()
}

// Runs lists a rule's runs in the execution log, newest first.
func (h *Harness) Runs(rule string) []runlog.Run {
	h.t.Helper()
	runs, err := h.d.Runs(runlog.Filter{Rule: rule, Limit: 1000})
	if err != nil {
		h.t.Fatalf("%v", err)
	}
	return runs
}

// Tree renders a run's execution tree in runlog.Render's stable form (no
// times or ids), for comparing with what a test expects.
func (h *Harness) Tree(run string) string {
	h.t.Helper()
	rows, err := h.d.RunTree(run)
	if err != nil {
		h.t.Fatalf("%v", err)
	}
	var b strings.Builder
	runlog.Render(&b, rows, true)
	return b.String()
}

func copyRules(t T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	files, err := filepath.Glob(filepath.Join(from, "*.y*ml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("ruletest: no rule files in %s (%v)", from, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatalf("%v", err)
		}
	}
}

// stub answers plugins' outbound requests for the harness (Options.HTTP)
// and records them.
type stub struct{ h *Harness }

func (s stub) Do(_ context.Context, plugin string, req abi.HTTPRequest) (abi.HTTPResponse, error) {
	h := s.h
	req.Body = bytes.Clone(req.Body)
	h.mu.Lock()
	h.requests = append(h.requests, Request{HTTPRequest: req, Plugin: plugin, At: h.clk.Now()})
	h.notes = append(h.notes, note{h.clk.Now(), "« http " + cmp.Or(req.Method, "GET") + " " + req.URL + " " + string(req.Body)})
	answers := h.answers
	h.mu.Unlock()
	for _, a := range answers {
		if strings.HasPrefix(req.URL, a.URL) {
			return abi.HTTPResponse{Status: cmp.Or(a.Status, 200), Body: []byte(a.Body)}, nil
		}
	}
	return abi.HTTPResponse{Status: 200}, nil
}

// SetHTTP replaces the stub's answers (Options.HTTP) from now on: an
// endpoint that comes back, or goes away.
func (h *Harness) SetHTTP(answers []Answer) {
	h.mu.Lock()
	h.answers = slices.Clone(answers)
	h.mu.Unlock()
}

// Requests are the outbound HTTP requests plugins made so far, in order,
// across restarts.
func (h *Harness) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}
