package seq

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/rules"
)

// answer is an Action that returns a fixed result and journals what it saw
// at its paths, through the lookup every guest uses (abi.CallInput.Find).
type answer struct {
	j      *journal
	name   string
	result string
	looks  []string
}

func (a *answer) Act(_ context.Context, c *Call) ([]byte, error) {
	in, err := abi.ParseCallInput(abi.AppendCallInput(nil, &c.Info, c.View, c.Context))
	if err != nil {
		return nil, err
	}
	saw := []string{a.name}
	for _, p := range a.looks {
		d, ok := in.Decode(p)
		if !ok {
			saw = append(saw, p+"=-")
			continue
		}
		b, _ := json.Marshal(d)
		saw = append(saw, p+"="+string(b))
	}
	a.j.add(strings.Join(saw, ","))
	return []byte(a.result), nil
}

// outputs builds a rule of answer steps: specs as "name|result|path path…"
// with the step's after in the rule's Steps.
func (e *env) outputs(r rules.Rule, specs ...string) *Sequence {
	names := make([]string, len(specs))
	for i, sp := range specs {
		names[i] = strings.SplitN(sp, "|", 2)[0]
	}
	s := e.rule(r, names...)
	for i, sp := range specs {
		f := strings.SplitN(sp, "|", 3)
		a := &answer{j: e.j, name: s.Steps[i].Name, result: f[1]}
		if len(f) > 2 && f[2] != "" {
			a.looks = strings.Fields(f[2])
		}
		s.Steps[i].Action = a
	}
	return s
}

// TestStepOutputs: what a step returns is its later steps' steps.<name>;
// a result that is not a JSON object is {"result": …}; the event's own
// steps field is never read as one; an empty result leaves no output.
func TestStepOutputs(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.outputs(rules.Rule{ID: "depot"},
		`ask|{"slot":"b7","price":3.5}|steps.ask.slot`,
		`note|booked|steps.ask steps.walked`,
		`quiet||steps.note.result vehicle`,
		`last|[1,2]|steps.quiet steps.last`)
	e.fire(s, `{"topic":"t","vehicle":"s1","steps":{"walked":1200}}`)
	want := `ask,steps.ask.slot=- ` +
		`note,steps.ask={"price":3.5,"slot":"b7"},steps.walked=- ` +
		`quiet,steps.note.result="booked",vehicle="s1" ` +
		`last,steps.quiet=-,steps.last=-`
	if got := e.j.String(); got != want {
		t.Errorf("journal\n%s\nwant\n%s", got, want)
	}
}

// TestStepOutputsReplayed: a durable step replayed after a restart sees
// the outputs its run had when it was scheduled — they are in its record —
// not what the step would return now.
func TestStepOutputsReplayed(t *testing.T) {
	e := newEnv(t, 2, 100)
	rule := rules.Rule{ID: "depot"}
	mk := func(slot string) *Sequence {
		s := e.outputs(rule, `ask|{"slot":"`+slot+`"}|`, `book|{"booking":42}|steps.ask.slot`, `confirm||steps.book.booking steps.ask.slot`)
		s.Steps[1].After, s.Steps[1].Durable = time.Hour, true
		s.Rule.Steps[1].After, s.Rule.Steps[1].Durable = time.Hour, true
		s.Steps[1].Fingerprint = s.Rule.Steps[1].Fingerprint()
		return s
	}
	e.fire(mk("b7"), `{"topic":"t","vehicle":"s1"}`)
	recs, _ := e.rn.store.List()
	if len(recs) != 1 || string(recs[0].Steps) != `{"ask":{"slot":"b7"}}` {
		t.Fatalf("records %+v; want book's with ask's output", recs)
	}
	e.restart()
	e.j.got = nil
	s := mk("c9") // the depot would answer otherwise now; ask does not run again
	if n := e.rn.Replay([]*Sequence{s}, time.Hour); n != 1 {
		t.Fatalf("replayed %d", n)
	}
	e.advance(time.Hour)
	if got, want := e.j.String(), `book,steps.ask.slot="b7" confirm,steps.book.booking=42,steps.ask.slot="b7"`; got != want {
		t.Errorf("journal\n%s\nwant\n%s", got, want)
	}
	e.settle()
	if e.h.Len(PendingHash) != 0 {
		t.Errorf("%d records left", e.h.Len(PendingHash))
	}
}

// TestStepOutputTooLarge: a result past the bound fails its step, with an
// error that names the bound, and is not retried.
func TestStepOutputTooLarge(t *testing.T) {
	e := newEnv(t, 2, 100)
	e.configure(func(c *RunnerConfig) { c.MaxOutput = 64 })
	s := e.outputs(rules.Rule{ID: "big"}, `ask|{"blob":"`+strings.Repeat("x", 100)+`"}|`, `after||steps.ask`)
	s.Steps[0].Retry = rules.Retry{Attempts: 3, Backoff: time.Second}
	e.fire(s, `{"topic":"t"}`)
	e.advance(time.Minute)
	if got := e.j.String(); got != "ask" {
		t.Errorf("journal %q; want ask once, not retried, and nothing after", got)
	}
	st := e.rn.RuleStats("big")
	if st.Failed != 1 || st.Errors != 1 {
		t.Errorf("stats %+v; want one failed run", st)
	}
	var oe *OutputError
	if err := (&OutputError{Size: 120, Limit: 64}); !errors.As(error(err), &oe) || !strings.Contains(err.Error(), "max-step-output") {
		t.Errorf("error %q names no bound", err)
	}
}

// TestStepOutputsPerPass: a repeat pass sees its own steps' outputs, not
// the pass before's.
func TestStepOutputsPerPass(t *testing.T) {
	e := newEnv(t, 2, 100)
	s := e.outputs(rules.Rule{ID: "twice", Repeat: rules.Repeat{Passes: 2}}, `first||steps.second.n`, `second|{"n":1}|`)
	e.fire(s, `{"topic":"t"}`)
	if got := e.j.String(); got != "first,steps.second.n=- second first,steps.second.n=- second" {
		t.Errorf("journal %q", got)
	}
}

func TestOutputOf(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{``, ``, ``},
		{"  \n", ``, ``},
		{`{"a":1}`, `{"a":1}`, ``},
		{`"x"`, `{"result":"x"}`, ``},
		{`12.5`, `{"result":12.5}`, ``},
		{`[1]`, `{"result":[1]}`, ``},
		{`alerts.s1`, `{"result":"alerts.s1"}`, ``},
		{`{"a":1,"a":2}`, `{"result":"{\"a\":1,\"a\":2}"}`, ``},
		{"\xff", "{\"result\":\"\ufffd\"}", ``},
		{`{"k":"` + strings.Repeat("v", 40) + `"}`, ``, `over the limit of 32`},
	} {
		got, err := outputOf([]byte(c.in), 32)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("outputOf(%q) = %s, %v; want %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("outputOf(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

// TestVars: a rule's variables are worked out from the trigger when its
// run starts and read by every step as vars.<name>, beside the steps'
// outputs; a replayed run has the ones it started with.
func TestVars(t *testing.T) {
	e := newEnv(t, 2, 100)
	mk := func(label string) *Sequence {
		s := e.outputs(rules.Rule{ID: "valve"}, `open|{"ok":true}|vars.zone vars.limit vars.label`, `close||vars.label steps.open.ok vars.none`)
		s.Steps[1].After, s.Steps[1].Durable = time.Hour, true
		s.Rule.Steps[1].After, s.Rule.Steps[1].Durable = time.Hour, true
		s.Steps[1].Fingerprint = s.Rule.Steps[1].Fingerprint()
		v, err := tmpl.JSON(map[string]any{"zone": "{{data.zone}}", "limit": int64(20), "label": label})
		if err != nil {
			t.Fatal(err)
		}
		s.Vars = v
		return s
	}
	e.fire(mk("valve {{data.zone}}"), `{"topic":"t","data":{"zone":7}}`)
	if got, want := e.j.String(), `open,vars.zone=7,vars.limit=20,vars.label="valve 7"`; got != want {
		t.Errorf("journal\n%s\nwant\n%s", got, want)
	}
	e.restart()
	e.j.got = nil
	if n := e.rn.Replay([]*Sequence{mk("changed")}, time.Hour); n != 1 {
		t.Fatalf("replayed %d", n)
	}
	e.advance(time.Hour)
	if got, want := e.j.String(), `close,vars.label="valve 7",steps.open.ok=true,vars.none=-`; got != want {
		t.Errorf("journal\n%s\nwant\n%s", got, want)
	}
}

// TestVarsBounded: a rule's vars that name a large field many times are
// bounded as a step's output is: rendering stops past the bound, and the
// run's first step fails, for good, with the bound in its error (issue
// 38: a 200 KB event became a 40 MB variable). A small event runs.
func TestVarsBounded(t *testing.T) {
	e := newEnv(t, 2, 100)
	e.configure(func(c *RunnerConfig) { c.MaxOutput = 4096 })
	s := e.outputs(rules.Rule{ID: "copy"}, `use||vars.all`)
	v, err := tmpl.JSON(map[string]any{"all": strings.Repeat("{{pad}}", 200)})
	if err != nil {
		t.Fatal(err)
	}
	s.Vars = v
	e.fire(s, `{"topic":"t","id":"small","pad":"x"}`)
	e.fire(s, `{"topic":"t","id":"big","pad":"`+strings.Repeat("y", 200<<10)+`"}`)
	if got := e.j.String(); !strings.HasPrefix(got, "use,vars.all=") || strings.Count(got, "use") != 1 {
		t.Errorf("journal %q; want the small event's step only", got)
	}
	st := e.rn.RuleStats("copy")
	if st.Failed != 1 || st.Completed != 1 {
		t.Errorf("stats %+v; want one run completed, one failed", st)
	}
	if !e.log.Has("the rule's vars came out over 4096 bytes") {
		t.Errorf("no warning names the vars' bound:\n%s", e.log.String())
	}
}
