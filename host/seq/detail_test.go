package seq

import (
	"context"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/runlog"
)

// effector is an Action that says it published, as the wasm host
// functions do, and answers an object.
type effector struct{}

func (effector) Act(_ context.Context, c *Call) ([]byte, error) {
	if c.Effects != nil {
		*c.Effects = append(*c.Effects, "published out.s1 {}")
	}
	return []byte(`{"ok":true}`), nil
}

func mustTmpl(t *testing.T, v any) *tmpl.Template {
	t.Helper()
	tp, err := tmpl.JSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// TestNodeDetail: with the log on, the trigger node keeps the event, the
// condition node what its paths held, a step its config as rendered for
// its call (with the run's context), its effects and its output; each
// past the log's bound is only measured, and a skipped step shows no
// input, as its call did not happen.
func TestNodeDetail(t *testing.T) {
	tests := []struct {
		name, event string
		bound       int
		want        []string // kind name: input | values | effects | detail
	}{
		{"kept", `{"topic":"t","vehicle":"s1","go":"true"}`, 0, []string{
			`trigger t: {"topic":"t","vehicle":"s1","go":"true"} |  | [] | `,
			`condition :  | {"go":"true","vehicle":"s1"} | [] | `,
			`step one: {"msg":"hi s1"} |  | [published out.s1 {}] | `,
			`step two: {"prev":true} | {"vehicle":"s1"} | [published out.s1 {}] | `,
		}},
		{"past the bound", `{"topic":"t","vehicle":"s1","go":"true","pad":"` + strings.Repeat("x", 80) + `"}`, 40, []string{
			`trigger t:  |  | [] | event of 129 bytes, not kept: {"topic":"t","vehicle":"s1","go":"true","pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`,
			`condition :  | {"go":"true","vehicle":"s1"} | [] | `,
			`step one: {"msg":"hi s1"} |  | [published out.s1 {}] | `,
			`step two: {"prev":true} | {"vehicle":"s1"} | [published out.s1 {}] | `,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, 100)
			tr := &recTracer{}
			e.configure(func(c *RunnerConfig) { c.Tracer, c.LogValue = tr, tc.bound })
			s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "one", "two")
			s.When, s.WhenDo = &cond{field: "go"}, "p.go"
			s.WhenValues = mustTmpl(t, map[string]any{"go": "{{go}}", "vehicle": "{{vehicle}}"})
			s.Steps[0].Action, s.Steps[1].Action = effector{}, effector{}
			s.Steps[0].Input = mustTmpl(t, map[string]any{"msg": "hi {{vehicle}}"})
			s.Steps[1].Input = mustTmpl(t, map[string]any{"prev": "{{steps.one.ok}}"})
			s.Steps[1].When, s.Steps[1].WhenValues = &cond{field: "go"}, mustTmpl(t, map[string]any{"vehicle": "{{vehicle}}"})
			e.fire(s, tc.event)
			var got []string
			for _, n := range tr.nodes() {
				line := n.Kind + " " + n.Name + ": " + string(n.Input) + " | " + string(n.Values) + " | " +
					strings.Join(append([]string{"["}, strings.Join(n.Effects, ", ")+"]"), "") + " | " + n.Detail
				got = append(got, line)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("nodes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestNodeDetailSkipped: a step whose condition said no shows what its
// condition saw, and no input.
func TestNodeDetailSkipped(t *testing.T) {
	e := newEnv(t, 2, 100)
	tr := &recTracer{}
	e.configure(func(c *RunnerConfig) { c.Tracer = tr })
	s := e.rule(rules.Rule{ID: "r", Key: "vehicle"}, "one")
	s.Steps[0].Action = effector{}
	s.Steps[0].Input = mustTmpl(t, map[string]any{"msg": "hi {{vehicle}}"})
	s.Steps[0].When, s.Steps[0].WhenValues = &cond{field: "go"}, mustTmpl(t, map[string]any{"go": "{{go}}"})
	e.fire(s, `{"topic":"t","vehicle":"s1","go":"no"}`)
	for _, n := range tr.nodes() {
		if n.Kind != runlog.KindStep {
			continue
		}
		if n.Outcome != runlog.Skipped || n.Input != nil || string(n.Values) != `{"go":"no"}` || n.Effects != nil {
			t.Errorf("skipped step node %+v", n)
		}
	}
}
