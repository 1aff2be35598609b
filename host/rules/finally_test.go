package rules

import (
	"strings"
	"testing"
)

func TestFinally(t *testing.T) {
	rs, errs := ParseFile("f.yaml", []byte(`
- id: valve
  on: flow.start
  steps:
    - {name: open, do: p.a}
  finally:
    - {name: safe, do: p.a, with: {x: 1}, when: "zone == 'a'"}
    - do: p.b
`), nil)
	if len(errs) != 0 || len(rs) != 1 {
		t.Fatalf("errs %v", errs)
	}
	f := rs[0].Finally
	if len(f) != 2 || f[0].Name != "safe" || f[1].Name != "finally-1" || f[0].When == nil || string(f[0].Do.With) != `{"x":1}` {
		t.Errorf("finally = %+v", f)
	}
	tests := []struct{ name, finally, err string }{
		{"after", "    - {do: p.a, after: 1m}", `f.yaml:6:17: after: a finally step does not take it (hint: finally steps run at once when the run ends, each whatever the one before did; a finally step takes name, do, with, when)`},
		{"retry", "    - {do: p.a, retry: 3}", `f.yaml:6:17: retry: a finally step does not take it`},
		{"durable", "    - {do: p.a, durable: true}", `durable: a finally step does not take it`},
		{"a step's name", "    - {name: open, do: p.a}", `f.yaml:6:14: step name "open" is already used (hint: step open has it; a finally step's name is unique among the rule's steps and finally steps)`},
		{"twice", "    - {name: x, do: p.a}\n    - {name: x, do: p.a}", `f.yaml:7:14: step name "x" is already used (hint: finally step 0 has it`},
		{"no do", "    - {name: x}", `f.yaml:6:7: finally step has no do`},
		{"an explicit name an unnamed one takes", "    - {name: finally-1, do: p.a}\n    - {do: p.b}",
			`f.yaml:7:7: this unnamed finally step is called "finally-1", and so is finally step 0 (hint: give one of them another name`},
		{"a step named as an unnamed finally step", "    - {do: p.b}",
			`f.yaml:6:7: this unnamed finally step is called "finally-0", and so is step finally-0`},
		{"a typo", "    - {do: p.a, wehn: x}", `unknown key "wehn" in a finally step (hint: did you mean when?)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first := "open"
			if strings.HasPrefix(tc.name, "a step named") {
				first = "finally-0"
			}
			_, errs := ParseFile("f.yaml", []byte("- id: r\n  on: t\n  steps:\n    - {name: "+first+", do: p.a}\n  finally:\n"+tc.finally+"\n"), nil)
			if joined := errText(errs); !strings.Contains(joined, tc.err) {
				t.Errorf("errors %q; want %q", joined, tc.err)
			}
		})
	}
	_, errs = ParseFile("f.yaml", []byte("- id: r\n  on: t\n  steps: [{do: p.a}]\n  finally: []\n"), nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "f.yaml:4:12: finally is an empty list") {
		t.Errorf("an empty finally: %v", errs)
	}
}
