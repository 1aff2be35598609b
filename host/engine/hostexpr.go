package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/exprcheck"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/seq"
)

// hostExpr is a string when: as the runner's Condition: the host
// evaluates the expression itself (RATIONALE "Why the host evaluates a
// string when: itself"), over the same view of the event and the run's
// context the expr plugin would be given, with the plugin's answers and
// error texts (plugins/expr_test.go holds the two to each other).
type hostExpr struct{ p *exprcheck.Program }

// compileExpr readies c, a string when:, to run.
func compileExpr(c *rules.Call) (seq.Condition, error) {
	p, err := exprcheck.Compile(c.Expr)
	if err != nil {
		return nil, fmt.Errorf("when: %w", err)
	}
	return hostExpr{p}, nil
}

func (x hostExpr) When(_ context.Context, c *seq.Call) (ok bool, err error) {
	defer func() {
		// The evaluator is the host's own code and bounded (MaxWork); a
		// fault in it fails this condition, never the daemon.
		if r := recover(); r != nil {
			ok, err = false, fmt.Errorf("when: the expression failed: %v", r)
		}
	}()
	ev, err := abi.ParseView(c.View)
	if err != nil {
		return false, fmt.Errorf("when: the event's view: %w", err)
	}
	var cx abi.View
	if len(c.Context) > 0 {
		if cx, err = abi.ParseView(c.Context); err != nil {
			return false, fmt.Errorf("when: the run's context: %w", err)
		}
	}
	if ok, err = x.p.Eval(ev, cx); err != nil {
		if m := meant(ev, err); m != "" {
			return false, fmt.Errorf("when: %w; the event has %s: did you mean it?", err, m)
		}
		return false, fmt.Errorf("when: %w", err)
	}
	return ok, nil
}

// meant is the event's field a nil field of err most likely misspells
// (levle: level), or "".
func meant(ev abi.View, err error) string {
	var ee *exprcheck.EvalError
	if !errors.As(err, &ee) || ee.Field == "" {
		return ""
	}
	var names []string
	root, _ := ev.Find("")
	ev.MembersWhile(root, func(key []byte, _ abi.Value) bool {
		if len(names) < 256 && !bytes.ContainsRune(key, '~') {
			names = append(names, string(key))
		}
		return len(names) < 256
	})
	return rules.Suggest(ee.Field, names)
}
