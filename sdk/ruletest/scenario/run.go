package scenario

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/sdk/ruletest"
)

// Result is how a scenario went.
type Result struct {
	Scenario  *Scenario
	Failures  []string // "file:line: what", details indented below
	Notes     []string // what passed steps found worth saying (a replay's figures)
	Published []string // what the rules published: "+offset topic payload"
	Timeline  string   // what happened, when it failed
	Log       string   // the daemon's log
	Wall      time.Duration
	Virtual   time.Duration // how far the clock moved
}

// Passed reports whether every expectation held.
func (r *Result) Passed() bool { return len(r.Failures) == 0 }

// fatal stops a scenario: the runner's Fatalf panics with it and Run
// recovers it.
type fatal struct{}

// runT is the ruletest.T a scenario runs under.
type runT struct {
	res      *Result
	file     string
	line     int
	base     string
	cleanups []func()
}

func (t *runT) Helper() {}
func (t *runT) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, t.file+":") {
		msg = fmt.Sprintf("%s:%d: %s", t.file, t.line, msg)
	}
	t.res.Failures = append(t.res.Failures, msg)
}
func (t *runT) Fatalf(format string, args ...any) { t.Errorf(format, args...); panic(fatal{}) }
func (t *runT) Logf(string, ...any)               {}
func (t *runT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *runT) Failed() bool                      { return len(t.res.Failures) > 0 }
func (t *runT) TempDir() string {
	d, err := os.MkdirTemp(t.base, "t")
	if err != nil {
		t.Fatalf("%v", err)
	}
	return d
}

// Run runs s on a fresh daemon and a virtual clock. A scenario's failure
// is in the Result; Run returns once the daemon has stopped and its files
// are gone.
func Run(s *Scenario) (res *Result) {
	res = &Result{Scenario: s}
	t := &runT{res: res, file: s.File, line: s.Line}
	began := time.Now()
	var h *ruletest.Harness
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(fatal); !ok {
				t.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}
		if h != nil {
			res.Virtual = h.Now().Sub(start(s))
			res.Log = h.Log()
			for _, e := range outputs(h) {
				res.Published = append(res.Published, fmt.Sprintf("+%s %s %s", e.At.Sub(start(s)), e.Topic, e.Raw))
			}
			if !res.Passed() {
				res.Timeline = h.Timeline()
			}
		}
		for i := len(t.cleanups) - 1; i >= 0; i-- {
			t.cleanups[i]()
		}
		if t.base != "" {
			os.RemoveAll(t.base)
		}
		res.Wall = time.Since(began)
	}()
	base, err := os.MkdirTemp("", "ruled-test-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.base = base
	h = ruletest.New(t, ruletest.Options{Rules: s.Rules, Plugins: s.Plugins, Grants: s.Grants, Start: s.Start,
		ReplayWindow: s.ReplayWindow, Location: s.Location, HTTP: s.HTTP, Log: io.Discard})
	for i := range s.Steps {
		st := &s.Steps[i]
		t.line = st.Line
		if st.At != nil {
			at := start(s).Add(*st.At)
			if at.Before(h.Now()) {
				t.Fatalf("at %v is in the past: the clock is at %v", *st.At, h.Now().Sub(start(s)))
			}
			h.AdvanceTo(at)
		}
		step(t, h, s, st)
	}
	return res
}

func start(s *Scenario) time.Time {
	if s.Start.IsZero() {
		return ruletest.DefaultStart
	}
	return s.Start
}

func step(t *runT, h *ruletest.Harness, s *Scenario, st *Step) {
	switch st.Kind {
	case "publish":
		for _, e := range st.Events {
			h.Publish(string(e))
		}
	case "advance":
		h.Advance(st.Advance)
	case "restart":
		h.Restart()
	case "down":
		h.Down(st.Down)
	case "set-clock":
		h.SetClock(h.Now().Add(st.Jump))
	case "replace-plugin":
		names := make([]string, 0, len(st.Plugins))
		for n := range st.Plugins {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			h.ReplacePlugin(n, st.Plugins[n])
		}
	case "replace-rules":
		h.ReplaceRules(st.Rules)
	case "http":
		h.SetHTTP(st.HTTP)
	case "command":
		h.Command(st.Command.Rule, status.Command{Command: st.Command.Do, For: st.Command.For, Until: st.Command.Until})
	case "replay":
		replay(t, h, st)
	case "expect":
		expect(t, h, s, &st.Expect)
	}
}

// outputs are the events the rules published (not the test).
func outputs(h *ruletest.Harness) []ruletest.Event {
	var out []ruletest.Event
	for _, e := range h.Published("") {
		if !e.Sent {
			out = append(out, e)
		}
	}
	return out
}

func expect(t *runT, h *ruletest.Harness, s *Scenario, e *Expect) {
	t0 := start(s)
	since := func(at time.Time) string { return "+" + at.Sub(t0).String() }
	for _, pe := range e.Published {
		var onTopic, got []ruletest.Event
		for _, ev := range outputs(h) {
			if !topicMatches(pe.Topic, ev.Topic) {
				continue
			}
			onTopic = append(onTopic, ev)
			if pe.At != nil && !ev.At.Equal(t0.Add(*pe.At)) {
				continue
			}
			if pe.Payload != nil && !subset(pe.Payload, decode([]byte(ev.Raw))) {
				continue
			}
			got = append(got, ev)
		}
		if (pe.Count == nil && len(got) > 0) || (pe.Count != nil && len(got) == *pe.Count) {
			continue
		}
		want := "at least 1"
		if pe.Count != nil {
			want = fmt.Sprint(*pe.Count)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s:%d: published %s: %d matching events; want %s\n", t.file, pe.Line, pe.Topic, len(got), want)
		fmt.Fprintf(&b, "    expected: topic %s", pe.Topic)
		if pe.Payload != nil {
			fmt.Fprintf(&b, ", payload with %s", show(pe.Payload))
		}
		if pe.At != nil {
			fmt.Fprintf(&b, ", at +%s", *pe.At)
		}
		fmt.Fprintf(&b, "\n    actual, everything the rules published on %s:", pe.Topic)
		if len(onTopic) == 0 {
			b.WriteString(" nothing")
		}
		for _, ev := range onTopic {
			fmt.Fprintf(&b, "\n      %10s  %s %s", since(ev.At), ev.Topic, ev.Raw)
		}
		t.res.Failures = append(t.res.Failures, b.String())
	}
	for _, re := range e.Requests {
		expectRequests(t, h, s, re)
	}
	for _, ae := range e.Actions {
		var got []ruletest.Action
		for _, a := range h.Actions("") {
			if (ae.Do != "" && a.Do != ae.Do) || (ae.Step != "" && a.Step != ae.Step) || (ae.Rule != "" && a.Rule != ae.Rule) {
				continue
			}
			if ae.Config != nil && !subset(ae.Config, decode(a.Config)) {
				continue
			}
			if ae.Event != nil && !subset(ae.Event, decode(a.Event)) {
				continue
			}
			got = append(got, a)
		}
		what := strings.TrimSpace(strings.Join([]string{ae.Rule, ae.Step, ae.Do}, " "))
		var problem string
		switch {
		case ae.Count == nil && len(got) == 0:
			problem = "no matching call; want at least 1"
		case ae.Count != nil && len(got) != *ae.Count:
			problem = fmt.Sprintf("%d matching calls; want %d", len(got), *ae.Count)
		case ae.Keys != "":
			keys := map[string]bool{}
			for _, a := range got {
				keys[a.Key] = true
			}
			if ae.Keys == "same" && len(keys) > 1 || ae.Keys == "distinct" && len(keys) != len(got) {
				problem = fmt.Sprintf("%d calls with %d idempotency keys; want the keys %s", len(got), len(keys), ae.Keys)
			}
		}
		if problem == "" {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s:%d: actions %s: %s\n    expected:", t.file, ae.Line, what, problem)
		if ae.Config != nil {
			fmt.Fprintf(&b, " config with %s", show(ae.Config))
		}
		if ae.Event != nil {
			fmt.Fprintf(&b, " event with %s", show(ae.Event))
		}
		b.WriteString("\n    actual, every action call:")
		all := h.Actions("")
		if len(all) == 0 {
			b.WriteString(" none")
		}
		for _, a := range all {
			fmt.Fprintf(&b, "\n      %10s  %s/%s %s config %s key %s event %s", since(a.At), a.Rule, a.Step, a.Do, a.Config, a.Key, a.Event)
		}
		t.res.Failures = append(t.res.Failures, b.String())
	}
	for _, we := range e.Windows {
		got := h.Window(we.Window, we.Key)
		for _, agg := range sortedKeys(we.Want) {
			want, has := we.Want[agg], false
			g, ok := got[agg]
			switch w := want.(type) {
			case nil:
				has = !ok || g == nil
			case float64:
				gf, isNum := g.(float64)
				has = ok && isNum && math.Abs(gf-w) <= 1e-9*math.Max(1, math.Abs(w))
			}
			if !has {
				b, _ := json.Marshal(got)
				t.Errorf("%s:%d: window %s key %q: %s is %v; want %v (the window: %s)", t.file, we.Line, we.Window, we.Key, agg, g, want, b)
			}
		}
	}
	for _, rule := range sortedKeys(e.States) {
		if got := h.State(rule); got != e.States[rule] {
			t.Errorf("state of %s: %s; want %s", rule, got, e.States[rule])
		}
	}
	for _, rule := range sortedKeys(e.Runs) {
		got := map[string]int{}
		for _, r := range h.Runs(rule) {
			got[r.Outcome]++
		}
		want := e.Runs[rule]
		outcomes := sortedKeys(got)
		for o := range want {
			if !slices.Contains(outcomes, o) {
				outcomes = append(outcomes, o)
			}
		}
		sort.Strings(outcomes)
		var diff []string
		for _, o := range outcomes {
			if got[o] != want[o] {
				diff = append(diff, fmt.Sprintf("%s %d, want %d", o, got[o], want[o]))
			}
		}
		if len(diff) > 0 {
			t.Errorf("runs of %s: %s", rule, strings.Join(diff, "; "))
		}
	}
	for _, rule := range sortedKeys(e.Stats) {
		st := h.Stats(rule)
		got := map[string]int{"started": int(st.Started), "completed": int(st.Completed), "failed": int(st.Failed),
			"cancelled": int(st.Cancelled), "errors": int(st.Errors), "suppressed": int(st.Suppressed),
			"refused": int(st.Refused), "dropped": int(st.Dropped), "active": st.Active,
			"debounced": int(st.Debounced), "throttled": st.Throttled}
		var diff []string
		for _, c := range sortedKeys(e.Stats[rule]) {
			if got[c] != e.Stats[rule][c] {
				diff = append(diff, fmt.Sprintf("%s %d, want %d", c, got[c], e.Stats[rule][c]))
			}
		}
		if len(diff) > 0 {
			t.Errorf("stats of %s: %s", rule, strings.Join(diff, "; "))
		}
	}
	for _, te := range e.Trees {
		id := ""
		for _, r := range h.Runs(te.Rule) {
			if te.Outcome == "" || r.Outcome == te.Outcome {
				id = r.ID
				break
			}
		}
		if id == "" {
			t.res.Failures = append(t.res.Failures, fmt.Sprintf("%s:%d: tree: %s has no run that ended %q", t.file, te.Line, te.Rule, te.Outcome))
			continue
		}
		got := h.Tree(id)
		if !treeMatches(te.Is, got) {
			t.res.Failures = append(t.res.Failures, fmt.Sprintf("%s:%d: tree of %s's run:\n    expected:\n%s    actual:\n%s",
				t.file, te.Line, te.Rule, indent(te.Is, "      "), indent(got, "      ")))
		}
	}
}

func replay(t *runT, h *ruletest.Harness, st *Step) {
	c, err := ReadCaptureFile(st.Replay.Capture)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if c.Dropped > 0 {
		t.Errorf("replay: the capture lost %d events while recording; it cannot be compared", c.Dropped)
		return
	}
	t0, base := h.Now(), c.Start()
	in := 0
	for _, e := range c.Events {
		if e.By == "" {
			h.AdvanceTo(t0.Add(e.At.Sub(base)))
			h.Publish(string(e.Event))
			in++
		}
	}
	h.AdvanceTo(t0.Add(c.End.Sub(base)))
	type out struct {
		at   time.Duration
		line string
		by   string
	}
	key := func(topic string, raw []byte) string { return topic + " " + canonical(raw, st.Replay.Ignore) }
	then := map[string][]out{}
	for _, e := range c.Events {
		if e.By != "" {
			var ev struct{ Topic string }
			json.Unmarshal(e.Event, &ev)
			k := key(ev.Topic, e.Event)
			then[k] = append(then[k], out{e.At.Sub(base), k, e.By})
		}
	}
	var gone, added []out
	same := 0
	for _, e := range outputs(h) {
		if e.At.Before(t0) {
			continue
		}
		k := key(e.Topic, []byte(e.Raw))
		if len(then[k]) > 0 {
			then[k] = then[k][1:]
			same++
			continue
		}
		added = append(added, out{e.At.Sub(t0), k, ""})
	}
	for _, l := range then {
		gone = append(gone, l...)
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].at < gone[j].at })
	span := c.End.Sub(base)
	if len(gone) == 0 && len(added) == 0 {
		t.res.Notes = append(t.res.Notes, fmt.Sprintf("%s:%d: replay of %s: %d events in over %v; the rules published the same %d events",
			t.file, st.Line, filepath.Base(st.Replay.Capture), in, span, same))
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: replay of %s (%d events in over %v): the rules published differently than when it was captured\n",
		t.file, st.Line, filepath.Base(st.Replay.Capture), in, span)
	b.WriteString("    - published then, not now; + now, not then:")
	for _, o := range gone {
		fmt.Fprintf(&b, "\n    - %10s  %s  (by %s)", "+"+o.at.String(), o.line, o.by)
	}
	for _, o := range added {
		fmt.Fprintf(&b, "\n    + %10s  %s", "+"+o.at.String(), o.line)
	}
	fmt.Fprintf(&b, "\n    %d published the same", same)
	t.res.Failures = append(t.res.Failures, b.String())
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// treeMatches compares a rendered tree with an expected one line by line
// and word by word, ignoring the spaces that only align columns but not a
// line's indent; an expected word "*" stands for any one word (an event
// id, a time).
func treeMatches(want, got string) bool {
	w, g := treeLines(want), treeLines(got)
	if len(w) != len(g) {
		return false
	}
	for i := range w {
		if w[i].depth != g[i].depth || len(w[i].words) != len(g[i].words) {
			return false
		}
		for j, word := range w[i].words {
			if word != "*" && word != g[i].words[j] {
				return false
			}
		}
	}
	return true
}

type treeLine struct {
	depth int
	words []string
}

func treeLines(s string) []treeLine {
	var out []treeLine
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, treeLine{len(l) - len(strings.TrimLeft(l, " ")), f})
		}
	}
	return out
}

func indent(s, by string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(by + l + "\n")
	}
	return b.String()
}

// expectRequests checks one expectation of outbound requests, and says
// what was sent to that URL when it fails.
func expectRequests(t *runT, h *ruletest.Harness, s *Scenario, re Request) {
	t0 := start(s)
	var toURL, got []ruletest.Request
	for _, r := range h.Requests() {
		if !topicMatches(re.URL, r.URL) {
			continue
		}
		toURL = append(toURL, r)
		if re.Method != "" && re.Method != cmp.Or(r.Method, "GET") || re.At != nil && !r.At.Equal(t0.Add(*re.At)) {
			continue
		}
		if !headersHave(r.Header, re.Headers) {
			continue
		}
		if want, ok := re.Body.(string); ok && want != string(r.Body) || !ok && re.Body != nil && !subset(re.Body, decode(r.Body)) {
			continue
		}
		got = append(got, r)
	}
	if (re.Count == nil && len(got) > 0) || (re.Count != nil && len(got) == *re.Count) {
		return
	}
	want := "at least 1"
	if re.Count != nil {
		want = fmt.Sprint(*re.Count)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: requests %s: %d matching; want %s\n", t.file, re.Line, re.URL, len(got), want)
	fmt.Fprintf(&b, "    expected: %s %s", cmp.Or(re.Method, "any method"), re.URL)
	if len(re.Headers) > 0 {
		fmt.Fprintf(&b, ", headers %s", show(re.Headers))
	}
	if body, exact := re.Body.(string); exact {
		fmt.Fprintf(&b, ", body exactly %q", body)
	} else if re.Body != nil {
		fmt.Fprintf(&b, ", body with %s", show(re.Body))
	}
	if re.At != nil {
		fmt.Fprintf(&b, ", at +%s", *re.At)
	}
	fmt.Fprintf(&b, "\n    actual, every request to %s:", re.URL)
	if len(toURL) == 0 {
		b.WriteString(" none")
	}
	for _, r := range toURL {
		fmt.Fprintf(&b, "\n      %10s  %s %s %s", "+"+r.At.Sub(t0).String(), cmp.Or(r.Method, "GET"), r.URL, r.Body)
		for _, h := range r.Header {
			fmt.Fprintf(&b, "\n                  %s: %s", h[0], h[1])
		}
	}
	t.res.Failures = append(t.res.Failures, b.String())
}

// headersHave reports whether h has every header of want, names compared
// without case.
func headersHave(h [][2]string, want map[string]string) bool {
	for name, v := range want {
		found := false
		for _, kv := range h {
			found = found || strings.EqualFold(kv[0], name) && kv[1] == v
		}
		if !found {
			return false
		}
	}
	return true
}
