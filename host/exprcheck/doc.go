// Package exprcheck owns the language of `when:` expressions: the subset
// of expr-lang (https://expr-lang.org) that rule conditions are written in
// and the expr plugin (plugins/expr, AssemblyScript) evaluates.
//
// Check parses an expression with expr-lang's own parser, refuses any node
// outside the subset with its position and a sentence on what to write
// instead, and compiles it with expr-lang's checker as a boolean over
// unknown fields, so an expression that expr-lang would refuse (`1 + "a"`,
// `battery + 1` as a condition) is refused here, before a rule loads: the
// guest then only has to agree with expr-lang's runtime, which the
// differential test in plugins/ holds it to.
//
// It refuses evaluating anything (the guest's), and knowing where an
// expression came from: the rule parser turns the position within the
// expression into the file's line and column.
package exprcheck
