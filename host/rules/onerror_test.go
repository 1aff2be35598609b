package rules

import (
	"strings"
	"testing"
	"time"
)

func TestOnError(t *testing.T) {
	rs, errs := ParseFile("f.yaml", []byte(`
- id: r
  on: t
  on-error: {max: 3, within: 1h, sleep: 30s}
  steps:
    - do: p.a
`), nil)
	if len(errs) != 0 || len(rs) != 1 {
		t.Fatalf("errs %v", errs)
	}
	if got, want := rs[0].OnError, (ErrorBudget{Max: 3, Within: time.Hour, Sleep: 30 * time.Second}); got != want {
		t.Errorf("OnError = %+v; want %+v", got, want)
	}
	_, errs = ParseFile("f.yaml", []byte(`
- id: r
  on: t
  on-error: {maximum: 3, sleep: 30}
  steps:
    - do: p.a
`), nil)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	joined := strings.Join(msgs, "\n")
	if !strings.Contains(joined, `f.yaml:4:14: unknown key "maximum"`) || !strings.Contains(joined, "f.yaml:4:33: sleep: 30 has no unit") {
		t.Errorf("errors:\n%s", joined)
	}
}
