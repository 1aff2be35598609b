// Command expr is the first-party plugin for conditions written as
// expressions, evaluated inside the guest with expr-lang
// (https://expr-lang.org).
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o expr.wasm ./plugins/expr
//
// Condition `expr`, config:
//
//	expr: a boolean expression over the event's fields, such as
//	      `battery < 20 && vehicle startsWith "s-"` (required)
//
// The expression is compiled once per config. Each call hands the program
// only the top-level fields it names, decoded from the event's view, so an
// event with a hundred fields costs what the two it reads cost. A field the
// event lacks is nil. `type` is expr's builtin type(): write `$env.type` for
// a field named type (using $env hands the program every field).
package main

import (
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/ruled-dev/ruled/abi"
	ruled "github.com/ruled-dev/ruled/sdk/go"
)

func main() {}

func init() {
	ruled.Plugin("expr", "1.0.0")
	ruled.Condition("expr", configure).
		Doc("a boolean expression over the event's fields (expr-lang)").
		Example(`{"expr":"battery < 20 && !charging"}`)
}

func configure(cfg ruled.Config) (ruled.WhenFunc, error) {
	src, err := cfg.RequireString("expr")
	if err != nil {
		return nil, err
	}
	roots, whole, err := identifiers(src)
	if err != nil {
		return nil, ruled.NewError("expr: " + err.Error())
	}
	program, err := expr.Compile(src, expr.AsBool(), expr.AllowUndefinedVariables())
	if err != nil {
		return nil, ruled.NewError("expr: " + err.Error())
	}
	var machine vm.VM
	env := make(map[string]any, len(roots))
	return func(ev ruled.Event) (bool, error) {
		clear(env)
		if whole {
			if all, ok := ev.Decode(""); ok {
				if m, ok := all.(map[string]any); ok {
					env = m
				}
			}
		} else {
			for _, r := range roots {
				if v, ok := ev.Decode(abi.PathKey(r)); ok {
					env[r] = v
				}
			}
		}
		out, err := machine.Run(program, env)
		if err != nil {
			return false, ruled.NewError("expr: " + err.Error())
		}
		b, _ := out.(bool) // expr.AsBool makes the program fail otherwise
		return b, nil
	}, nil
}

// identifiers lists the top-level names an expression reads, and whether it
// reads $env (all of them).
func identifiers(src string) (roots []string, whole bool, err error) {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, false, err
	}
	seen := map[string]bool{}
	v := visitor(func(n *ast.Node) {
		if id, ok := (*n).(*ast.IdentifierNode); ok {
			if id.Value == "$env" {
				whole = true
			} else if !seen[id.Value] {
				seen[id.Value] = true
				roots = append(roots, id.Value)
			}
		}
	})
	ast.Walk(&tree.Node, v)
	return roots, whole, nil
}

type visitor func(*ast.Node)

func (f visitor) Visit(n *ast.Node) { f(n) }
