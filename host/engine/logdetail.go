package engine

import (
	"encoding/json"

	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/exprcheck"
	"github.com/ruled-dev/ruled/host/rules"
)

// What the execution log shows of a call beside its outcome, compiled
// once with the rule so that a run pays only for rendering, and only
// while the log is on (seq.Runner renders them).

// inputOf is a step's config as its call sees it: the same templates the
// plugin renders, over the same event and run context. nil for a step
// configured with nothing.
func inputOf(c *rules.Call) *tmpl.Template {
	if c == nil || len(c.With) == 0 || string(c.With) == "{}" {
		return nil
	}
	var v any
	if json.Unmarshal(c.With, &v) != nil {
		return nil
	}
	t, err := tmpl.JSON(v)
	if err != nil {
		return nil // the plugin refused it at configure time, or will
	}
	return t
}

// valuesOf renders, for an expression condition, an object of every
// path it reads with the value the call saw there (null when missing):
// what a condition that said no saw. nil for a condition plugin of
// another kind, whose reads the host cannot know (its config is its
// input: inputOf).
func valuesOf(c *rules.Call) *tmpl.Template {
	if c == nil || c.Plugin != "expr" || c.Function != "expr" {
		return nil
	}
	src := c.Expr // a string when: says it; {do: expr.expr} in its config
	if src == "" {
		var cfg struct {
			Expr string `json:"expr"`
		}
		if json.Unmarshal(c.With, &cfg) != nil {
			return nil
		}
		src = cfg.Expr
	}
	paths, err := exprcheck.Paths(src)
	if err != nil || len(paths) == 0 {
		return nil
	}
	obj := make(map[string]any, len(paths))
	for _, p := range paths {
		obj[p] = "{{" + p + "}}"
	}
	t, err := tmpl.JSON(obj)
	if err != nil {
		return nil
	}
	return t
}
