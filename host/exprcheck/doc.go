// Package exprcheck owns the language of `when:` expressions: the subset
// of expr-lang (https://expr-lang.org) that rule conditions are written in
// and both the host (a string when:) and the expr plugin (plugins/expr,
// AssemblyScript; {do: expr.expr}) evaluate.
//
// Check parses an expression as expr-lang's parser does (its precedence
// climbing, for the subset's tokens), refuses anything outside the subset
// with its position and a sentence on what to write instead, and types it
// as expr-lang's checker does (a literal's type known, a field's not), so
// an expression expr-lang would refuse (`1 + "a"`, `battery + 1` as a
// condition) is refused here, before a rule loads: the guest then only has
// to agree with expr-lang's runtime. It is a port, not expr-lang itself:
// linking expr-lang's checker into the daemon cost 11.6 MB of binary
// (RATIONALE). Tests hold it to expr-lang v1.17.8: FuzzCheck here, and the
// differential tests in plugins/.
//
// Compile and Program.Eval evaluate a string when: on the host, as the
// expr plugin evaluates {do: expr.expr}: a port of its evaluator (same
// answers, same error words; the differential tests in plugins/ hold the
// two and expr-lang to each other), bounded by MaxWork.
//
// It refuses knowing where an expression came from: the rule parser turns
// the position within the expression into the file's line and column.
package exprcheck
