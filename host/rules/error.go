package rules

import (
	"cmp"
	"fmt"
	"slices"
)

// Error is one problem in a rule file, at the place a person has to edit.
// A file with errors still yields its valid rules: a daemon boots with those
// and reports the rest, rather than running nothing because of one typo.
type Error struct {
	Pos Pos
	// Rule is the id of the rule the problem is in, when it is known.
	Rule string
	Msg  string
	// Hint says how to fix it, when there is something to say.
	Hint string
}

// Error formats the problem the way compilers do, "file:line:col: msg
// (hint: ...)", so editors and CI logs can jump to it.
func (e *Error) Error() string {
	s := e.Pos.String() + ": " + e.Msg
	if e.Hint != "" {
		s += " (hint: " + e.Hint + ")"
	}
	return s
}

// String is "file:line:col", or less when the position is only a file (a
// file that cannot be read) or a line (a YAML syntax error).
func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// SortErrors orders errors by file, line and column, keeping the order of
// errors at the same place.
func SortErrors(errs []*Error) {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Pos.File, b.Pos.File), cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col))
	})
}
