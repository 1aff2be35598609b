package seq

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/internal/golden"
)

// TestScripts runs the datadriven scripts under testdata/scripts: each a
// story of one or more rules on a virtual clock, told as commands whose
// output is the trace of what happened — the actions that ran (step:pass:
// vehicle), the rules' counters that moved, the pending records. A script
// that fails shows its story; `go test ./host/seq -run TestScripts
// -rewrite` records the new traces to review in the diff. One worker runs
// the steps, so what comes due together runs in a known order.
//
// Commands:
//
//	rule id= [mode=single|restart|queue|parallel] [max=] [key=vehicle] [max-keys=]
//	     [cooldown=] [repeat=N every=] [cancel-on=topic] [match=field]
//	     [on-pause=hold] [debounce= maxwait=] [throttle=N/per burst= excess=drop]
//	     [retry=N backoff=] [finally=x,y] [continue=b,c]
//	     [vars=who:vehicle]                 vars: {who: "{{vehicle}}"}; a step
//	                                         named say… says its run's who
//	     [when=no:v2,fail:v3] [skip=b:v2]    the rule's condition says no, or
//	                                         fails, for those vehicles; step
//	                                         b's condition says no for v2
//	     steps=a,b+5m,c+1h!,d~2,w?t/10m[/stop]  (+after, ! durable, ~N fails its first N calls,
//	                                            ?topic/timeout a wait-for of the vehicle's event)
//	fire rule= [vehicle=] [topic=t]        a trigger
//	cancel topic= [vehicle=]               an event that may cancel runs
//	deliver rule= topic= [vehicle=]        an event offered to the rule's waiting runs
//	control do=cancel|now|drop rule= [vehicle=]  an operator's command on the
//	                                       oldest live run of the rule (and key)
//	advance by=                            the clock moves
//	gate rule= state=runnable|paused|killed   the rule's lifecycle, as the gate says it
//	restart                                a new process over the same store
//	replay [window=1h]                     the new process replays the records
//	records                                the pending records, by run order
//	whynot rule=                           the triggers it started no run for, by reason
//	reload rule= [digest=d2] [config=b] [gone=true] [pins=lost]
//	                                       the rule as loaded changes: its steps on another
//	                                       module (their actions then say name@digest), step
//	                                       b's configuration changed, or the rule removed;
//	                                       pins=lost: the modules before cannot be had
//	rule ... [on-plugin-change=pin|upgrade|drop]
func TestScripts(t *testing.T) {
	paths, _ := filepath.Glob("testdata/scripts/*.txt")
	if len(paths) == 0 {
		t.Fatal("no scripts")
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			s := &story{env: newEnv(t, 1, 100), seqs: map[string]*Sequence{}, gate: &ruleGate{state: map[string]string{}}}
			s.configure(func(c *RunnerConfig) { c.Gate, c.Resolver = s.gate, s })
			golden.RunScript(t, path, s.do)
		})
	}
}

// story is a script's world: its rules, what the trace showed last.
type story struct {
	*env
	seqs  map[string]*Sequence
	order []string // rule ids, in definition order
	gate  *ruleGate
	gone  map[string]bool      // rules removed by reload
	lost  bool                 // reload pins=lost: a pinned module cannot be had
	seen  int                  // journal entries already traced
	stats map[string]RuleStats // counters already traced
	held  map[string]int       // held steps already traced
}

// ruleGate is the rules' lifecycle as a script sets it.
type ruleGate struct {
	mu    sync.Mutex
	state map[string]string
}

func (g *ruleGate) get(rule string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.state[rule]; st != "" {
		return st
	}
	return "runnable"
}

func (g *ruleGate) Admits(rule string) bool { return g.get(rule) == "runnable" }

func (g *ruleGate) Due(rule string) (bool, string) {
	switch g.get(rule) {
	case "paused":
		return true, ""
	case "killed":
		return false, "rule killed"
	}
	return false, ""
}

func (s *story) do(b golden.Block) string {
	switch b.Cmd {
	case "rule":
		return s.defineRule(b)
	case "fire":
		seq := s.seqs[b.Arg("rule", "")]
		if seq == nil {
			return "no rule " + b.Arg("rule", "")
		}
		s.rn.Fire(Trigger{Seq: seq, Event: s.eventOf(b)})
		s.settle()
	case "cancel":
		s.rn.CancelMatching(s.eventOf(b))
		s.settle()
	case "deliver":
		n := s.rn.Deliver(b.Arg("rule", ""), s.eventOf(b), nil)
		s.settle()
		return fmt.Sprintf("offered to %d\n%s", n, s.trace())
	case "control":
		return s.control(b)
	case "advance":
		d, err := time.ParseDuration(b.Arg("by", ""))
		if err != nil {
			return err.Error()
		}
		s.advance(d)
	case "gate":
		rule := b.Arg("rule", "")
		s.gate.mu.Lock()
		s.gate.state[rule] = b.Arg("state", "runnable")
		s.gate.mu.Unlock()
		if b.Arg("state", "") == "runnable" {
			s.rn.ReleaseHeld(rule, time.Hour)
			s.settle()
		}
	case "restart":
		s.restart()
		s.stats = nil // a new process counts from zero
	case "replay":
		w, _ := time.ParseDuration(b.Arg("window", "1h"))
		var seqs []*Sequence
		for _, id := range s.order {
			seqs = append(seqs, s.seqs[id])
		}
		n := s.rn.Replay(seqs, w)
		s.settle()
		return fmt.Sprintf("replayed %d\n%s", n, s.trace())
	case "records":
		return s.records()
	case "whynot":
		return s.whyNot(b.Arg("rule", ""))
	case "reload":
		return s.reload(b)
	default:
		return "unknown command " + b.Cmd
	}
	return s.trace()
}

func (s *story) defineRule(b golden.Block) string {
	r := rules.Rule{ID: b.Arg("id", "r"), Key: b.Arg("key", "")}
	switch b.Arg("mode", "single") {
	case "single":
		r.Mode = rules.ModeSingle
	case "restart":
		r.Mode = rules.ModeRestart
	case "queue":
		r.Mode = rules.ModeQueue
	case "parallel":
		r.Mode = rules.ModeParallel
	default:
		return "unknown mode " + b.Arg("mode", "")
	}
	switch b.Arg("on-plugin-change", "pin") {
	case "upgrade":
		r.OnPluginChange = rules.PluginUpgrade
	case "drop":
		r.OnPluginChange = rules.PluginDrop
	}
	r.Max, _ = strconv.Atoi(b.Arg("max", "0"))
	r.MaxKeys, _ = strconv.Atoi(b.Arg("max-keys", "0"))
	r.Cooldown, _ = time.ParseDuration(b.Arg("cooldown", "0s"))
	r.Repeat.Passes, _ = strconv.Atoi(b.Arg("repeat", "0"))
	r.Repeat.Interval, _ = time.ParseDuration(b.Arg("every", "0s"))
	if c := b.Arg("cancel-on", ""); c != "" {
		cn := rules.Cancel{Pattern: rules.Pattern(c)}
		if m := b.Arg("match", ""); m != "" {
			cn.Match = []string{m}
		}
		r.CancelOn = []rules.Cancel{cn}
	}
	if b.Arg("on-pause", "") == "hold" {
		r.OnPause = rules.PauseTriggers{Hold: true, Max: 10}
	}
	r.Debounce.For, _ = time.ParseDuration(b.Arg("debounce", "0s"))
	r.Debounce.MaxWait, _ = time.ParseDuration(b.Arg("maxwait", "0s"))
	if th := b.Arg("throttle", ""); th != "" { // N/per
		n, per, _ := strings.Cut(th, "/")
		r.Throttle.Limit, _ = strconv.Atoi(n)
		r.Throttle.Per, _ = time.ParseDuration(per)
		r.Throttle.Burst, _ = strconv.Atoi(b.Arg("burst", "0"))
		r.Throttle.Drop = b.Arg("excess", "queue") == "drop"
	}
	if _, ok := s.seqs[r.ID]; !ok {
		s.order = append(s.order, r.ID)
	}
	seq := s.rule(r, strings.Split(b.Arg("steps", "a"), ",")...)
	if n, _ := strconv.Atoi(b.Arg("retry", "0")); n > 0 {
		// No jitter: a script's waits are exact.
		backoff, _ := time.ParseDuration(b.Arg("backoff", "1m"))
		for i := range seq.Steps {
			seq.Steps[i].Retry = rules.Retry{Attempts: n, Backoff: backoff, MaxBackoff: time.Hour, Factor: 2}
		}
	}
	if f := b.Arg("finally", ""); f != "" {
		s.withFinally(seq, strings.Split(f, ",")...)
	}
	if w := b.Arg("when", ""); w != "" {
		seq.When = scriptCondOf(w)
	}
	if v := b.Arg("vars", ""); v != "" {
		name, path, _ := strings.Cut(v, ":")
		t, err := tmpl.JSON(map[string]any{name: "{{" + path + "}}"})
		if err != nil {
			return err.Error()
		}
		seq.Vars = t
	}
	for i := range seq.Steps {
		if name := seq.Steps[i].Name; strings.HasPrefix(name, "say") {
			seq.Steps[i].Action = sayAct{j: s.j, name: name}
		}
	}
	if sk := b.Arg("skip", ""); sk != "" {
		for _, one := range strings.Split(sk, ",") {
			name, vehicle, _ := strings.Cut(one, ":")
			for i := range seq.Steps {
				if seq.Steps[i].Name == name {
					seq.Steps[i].When = scriptCond{no: map[string]bool{vehicle: true}}
				}
			}
		}
	}
	for _, name := range strings.Split(b.Arg("continue", ""), ",") {
		for i := range seq.Steps {
			if seq.Steps[i].Name == name {
				seq.Steps[i].ContinueOnError = true
			}
		}
	}
	s.seqs[r.ID] = seq
	return "ok"
}

// control carries out an operator's command on the oldest live run of a
// rule (and key): its answer, then what happened.
func (s *story) control(b golden.Block) string {
	rule, key := b.Arg("rule", ""), b.Arg("vehicle", "")
	s.rn.mu.Lock()
	var target *run
	for _, r := range s.rn.m.runs {
		if r.seq.Rule.ID == rule && (key == "" || r.key == key) && !r.Over() &&
			(target == nil || r.started < target.started || r.started == target.started && r.id < target.id) {
			target = r
		}
	}
	s.rn.mu.Unlock()
	if target == nil {
		return "no live run"
	}
	var err error
	switch b.Arg("do", "") {
	case "cancel":
		err = s.rn.Control(target.id, ControlCancel, "script")
	case "now":
		err = s.rn.Control(target.id, ControlNow, "script")
	case "drop":
		err = s.rn.Control(target.id, ControlDrop, "script")
	default:
		return "unknown control " + b.Arg("do", "")
	}
	s.settle()
	if err != nil {
		return strings.ReplaceAll(err.Error(), target.id, "RUN") + "\n" + s.trace()
	}
	return s.trace()
}

func (s *story) eventOf(b golden.Block) *bus.Event {
	js := `{"topic":"` + b.Arg("topic", "t") + `"`
	if v := b.Arg("vehicle", ""); v != "" {
		js += `,"vehicle":"` + v + `"`
	}
	return s.event(js + "}")
}

// trace is what happened since the last trace: the actions that ran, and
// each rule's counters that moved.
func (s *story) trace() string {
	var out []string
	ran := s.j.list()
	if len(ran) > s.seen {
		out = append(out, "ran "+strings.Join(ran[s.seen:], " "))
		s.seen = len(ran)
	}
	if s.stats == nil {
		s.stats, s.held = map[string]RuleStats{}, map[string]int{}
	}
	for _, id := range s.order {
		now, was := s.rn.RuleStats(id), s.stats[id]
		s.stats[id] = now
		var moved []string
		for _, c := range []struct {
			name     string
			now, was uint64
		}{{"started", now.Started, was.Started}, {"completed", now.Completed, was.Completed},
			{"failed", now.Failed, was.Failed}, {"cancelled", now.Cancelled, was.Cancelled},
			{"suppressed", now.Suppressed, was.Suppressed}, {"refused", now.Refused, was.Refused},
			{"dropped", now.Dropped, was.Dropped}, {"errors", now.Errors, was.Errors},
			{"debounced", now.Debounced, was.Debounced}, {"refused-keys", now.RefusedKeys, was.RefusedKeys}} {
			if c.now != c.was {
				moved = append(moved, fmt.Sprintf("%s+%d", c.name, c.now-c.was))
			}
		}
		if now.Active != was.Active {
			moved = append(moved, fmt.Sprintf("active=%d", now.Active))
		}
		if now.Throttled != was.Throttled {
			moved = append(moved, fmt.Sprintf("throttled=%d", now.Throttled))
		}
		if now.HeldTriggers != was.HeldTriggers {
			moved = append(moved, fmt.Sprintf("held-triggers=%d", now.HeldTriggers))
		}
		if h := s.rn.Held(id); h != s.held[id] {
			moved = append(moved, fmt.Sprintf("held-steps=%d", h))
			s.held[id] = h
		}
		if len(moved) > 0 {
			out = append(out, id+": "+strings.Join(moved, " "))
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, "\n")
}

// records lists the pending records: rule, step, key, pass and due time from
// the story's start.
func (s *story) records() string {
	recs, err := s.rn.store.List()
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range recs {
		out = append(out, fmt.Sprintf("%s %s key=%s pass=%d due=+%v", p.Rule, p.Step, p.Key, p.Iter, p.Due().Sub(t0)))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "\n")
}

// scriptCond is a condition that says no for the vehicles in no and
// fails for those in fail: yes for any other.
type scriptCond struct{ no, fail map[string]bool }

// scriptCondOf reads "no:v2,fail:v3".
func scriptCondOf(spec string) scriptCond {
	c := scriptCond{no: map[string]bool{}, fail: map[string]bool{}}
	for _, one := range strings.Split(spec, ",") {
		what, vehicle, _ := strings.Cut(one, ":")
		if what == "fail" {
			c.fail[vehicle] = true
		} else {
			c.no[vehicle] = true
		}
	}
	return c
}

func (c scriptCond) When(_ context.Context, call *Call) (bool, error) {
	v, _ := fieldOf(&bus.Event{View: call.View}, "vehicle")
	if c.fail[v] {
		return false, errors.New("the condition failed on " + v)
	}
	return !c.no[v], nil
}

// whyNot lists, by reason, how many triggers rule started no run for and
// the vehicle of the last.
func (s *story) whyNot(rule string) string {
	var out []string
	for _, w := range s.rn.WhyNot(rule) {
		last := ""
		if len(w.Last) > 0 {
			last = " last=" + w.Last[0].Key
		}
		out = append(out, fmt.Sprintf("%s: %d%s", w.Reason, w.Count, last))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "\n")
}

// Current is the rule as loaded now (the story's Resolver): nil once
// reload removed it.
func (s *story) Current(rule string) *Sequence {
	if s.gone[rule] {
		return nil
	}
	return s.seqs[rule]
}

// Pinned is step idx of seq on the module with digest: its action says
// name@digest when it runs.
func (s *story) Pinned(seq *Sequence, idx int, digest string) (*CompiledStep, error) {
	if s.lost {
		return nil, errors.New("module " + digest + " is not kept")
	}
	st := seq.Steps[idx]
	st.Digest = digest
	st.Action = &act{j: s.j, name: st.Name + "@" + digest}
	return &st, nil
}

// reload changes the rule as loaded (reload's arguments).
func (s *story) reload(b golden.Block) string {
	rule := b.Arg("rule", "")
	old := s.seqs[rule]
	if old == nil {
		return "no rule " + rule
	}
	if b.Arg("gone", "") == "true" {
		if s.gone == nil {
			s.gone = map[string]bool{}
		}
		s.gone[rule] = true
		return "removed"
	}
	s.lost = b.Arg("pins", "") == "lost"
	next := *old
	next.Steps = slices.Clone(old.Steps)
	for i := range next.Steps {
		st := &next.Steps[i]
		if d := b.Arg("digest", ""); d != "" && st.Wait == nil {
			st.Digest = d
			st.Action = &act{j: s.j, name: st.Name + "@" + d}
		}
		if st.Name == b.Arg("config", "") {
			st.Fingerprint += "+changed"
		}
	}
	s.seqs[rule] = &next
	return "reloaded"
}

// sayAct is a step that says, beside what any step's action journals,
// the who of its run's variables (vars.who in its context).
type sayAct struct {
	j    *journal
	name string
}

func (a sayAct) Act(_ context.Context, c *Call) ([]byte, error) {
	v, _ := eventField(c, "vehicle")
	who := "none"
	if cx, err := abi.ParseView(c.Context); err == nil {
		if x, ok := cx.Find(abi.ContextVars + ".who"); ok {
			if b, ok := x.Str(); ok {
				who = string(b)
			}
		}
	}
	a.j.add(fmt.Sprintf("%s:%d:%s(who=%s)", a.name, c.Info.Pass, v, who))
	return nil, nil
}
