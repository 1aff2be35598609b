package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq"
)

// TestHostExprNamesWhatWasMeant: a field the event lacks, compared, fails
// the condition naming it, and the event's field it most likely misspells.
func TestHostExprNamesWhatWasMeant(t *testing.T) {
	for _, tc := range []struct{ expr, event, want string }{
		{`levle < 20`, `{"device":"d3","level":15}`, "levle is nil: the event lacks it, or it is null; give it a default: levle ?? …); the event has level: did you mean it?"},
		{`pressure < 20`, `{"device":"d3","level":15}`, "give it a default: pressure ?? …)"},
		{`level < 20`, `{"level":"x"}`, "when: cannot compare a string < an int"},
	} {
		w, err := compileExpr(&rules.Call{Expr: tc.expr})
		if err != nil {
			t.Fatal(err)
		}
		view, err := abi.AppendJSONView(nil, []byte(tc.event), false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.When(context.Background(), &seq.Call{View: view})
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) && !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s over %s: %v; want it to end %q", tc.expr, tc.event, err, tc.want)
		}
		if tc.expr == `pressure < 20` && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%s: %v; nothing to suggest", tc.expr, err)
		}
	}
}
