package exprcheck

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is an expression outside the subset, or one expr-lang refuses, at
// Line and Col (from 1, in runes) within the expression.
type Error struct {
	Line, Col int
	Msg       string
	// Hint says what to write instead, when there is something to say.
	Hint string
}

func (e *Error) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

const (
	example = "a condition such as battery < 20 && !charging"
	subset  = "the subset is: literals, fields (a.b, a?.b, a[0], a[\"k\"], $env.x), ! not - +, " +
		"* / % + -, comparisons, in, contains, startsWith, endsWith, && and || or, ??, c ? a : b, " +
		"array literals of literals, and len, lower, upper, trim"
)

// MaxLength and MaxDepth bound an expression: its bytes, and how deeply
// its operators nest ((a + b) * c is 2 deep; a chain a || b || c, however
// long, 2; a + b + c 3, as + is left-associative and nests). The guest walks the tree recursively on a
// bounded stack; the bounds keep every condition a rule can hold far
// inside it, and a hundred-level condition is a mistake to point at.
const (
	MaxLength = 4096
	MaxDepth  = 64
)

// Check reports whether src is a condition of the subset that expr-lang
// (v1.17.8, with AsBool and AllowUndefinedVariables, as the Go expr
// plugin compiled it) compiles; the error is an *Error.
func Check(src string) error {
	_, err := checked(src)
	return err
}

// checked is Check returning src's tree once it passed (Compile, Refs and
// Paths walk it): parsed once, typing only reads it.
func checked(src string) (*node, error) {
	if len(src) > MaxLength {
		return nil, &Error{Line: 1, Col: 1, Msg: fmt.Sprintf("the expression is %d bytes; at most %d", len(src), MaxLength),
			Hint: "split the condition into steps' own when:, or write a condition plugin"}
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	n := p.expression(0)
	if p.err == nil && p.cur().kind != tEOF {
		hint := example
		if p.is("=") {
			hint = "compare with ==: level == 20"
		}
		p.failf(p.cur().pos, hint, "unexpected token %s", p.cur().describe())
	}
	if p.err != nil {
		return nil, p.err
	}
	if d := depth(n); d > MaxDepth {
		return nil, errorAt(src, n.pos, "split the condition, or write a condition plugin", "the expression nests %d deep; at most %d", d, MaxDepth)
	}
	c := &typer{src: src}
	t := c.typeOf(n)
	if c.err != nil {
		return nil, c.err
	}
	if t.known() && t.k != kBool {
		return nil, c.errAt(n, "the condition is "+t.String()+", not a bool", example)
	}
	return n, nil
}

// position turns a rune offset into a line and a column, both from 1.
func position(src string, offset int) (line, col int) {
	line, col = 1, 1
	i := 0
	for _, r := range src {
		if i == offset {
			break
		}
		i++
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func errorAt(src string, pos int, hint, format string, args ...any) *Error {
	line, col := position(src, pos)
	return &Error{Line: line, Col: col, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// ---- lexer, as expr-lang's (parser/lexer) for the subset's tokens

type tokKind uint8

const (
	tEOF tokKind = iota
	tNum
	tStr
	tIdent
	tOp
)

type token struct {
	kind tokKind
	s    string // the text; a string literal's value
	pos  int    // rune offset
}

func (t token) describe() string {
	if t.kind == tEOF {
		return "EOF"
	}
	return strconv.Quote(t.s)
}

var wordOps = map[string]bool{"and": true, "or": true, "not": true, "in": true, "contains": true,
	"startsWith": true, "endsWith": true, "matches": true, "let": true, "if": true, "else": true}

var ops2 = []string{"==", "!=", "<=", ">=", "&&", "||", "??", "?.", "**", "..", "::"}

const ops1 = "!<>+-*/%?:.,()[]{}|#^=;"

// isIdentStart and isIdentRune are expr-lang's lexer's: letters, _ and $,
// then digits too.
func isIdentStart(r rune) bool { return r == '_' || r == '$' || unicode.IsLetter(r) }

func isIdentRune(r rune) bool { return isIdentStart(r) || unicode.IsDigit(r) }

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

func lex(src string) ([]token, *Error) {
	rs := []rune(src)
	var out []token
	for i := 0; i < len(rs); {
		r := rs[i]
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			i++
			continue
		}
		t := token{pos: i}
		switch {
		case isDigit(r) || r == '.' && i+1 < len(rs) && isDigit(rs[i+1]):
			j := i
			for j < len(rs) && (isDigit(rs[j]) || rs[j] == '_') {
				j++
			}
			if j+1 < len(rs) && rs[j] == '.' && isDigit(rs[j+1]) {
				j++
				for j < len(rs) && (isDigit(rs[j]) || rs[j] == '_') {
					j++
				}
			} else if j < len(rs) && rs[j] == '.' && !(j+1 < len(rs) && rs[j+1] == '.') {
				j++
			}
			if j < len(rs) && (rs[j] == 'e' || rs[j] == 'E') {
				k := j + 1
				if k < len(rs) && (rs[k] == '+' || rs[k] == '-') {
					k++
				}
				if k < len(rs) && isDigit(rs[k]) {
					for j = k; j < len(rs) && isDigit(rs[j]); j++ {
					}
				}
			}
			if j < len(rs) && isIdentRune(rs[j]) {
				return nil, errorAt(src, i, "write numbers in decimal", "a number in this form is outside the subset")
			}
			t.kind, t.s = tNum, string(rs[i:j])
			i = j
		case r == '"' || r == '\'':
			s, end, err := unquote(src, rs, i)
			if err != nil {
				return nil, err
			}
			t.kind, t.s = tStr, s
			i = end
		case r == '`':
			j := i + 1
			for j < len(rs) && rs[j] != '`' {
				j++
			}
			if j >= len(rs) {
				return nil, errorAt(src, i, "", "literal not terminated")
			}
			t.kind, t.s = tStr, string(rs[i+1:j])
			i = j + 1
		case isIdentStart(r):
			j := i + 1
			for j < len(rs) && isIdentRune(rs[j]) {
				j++
			}
			t.s = string(rs[i:j])
			t.kind = tIdent
			if wordOps[t.s] {
				t.kind = tOp
			}
			i = j
		default:
			t.kind = tOp
			two := ""
			if i+1 < len(rs) {
				two = string(rs[i : i+2])
			}
			switch {
			case slices.Contains(ops2, two):
				t.s = two
			case strings.ContainsRune(ops1, r):
				t.s = string(r)
			default:
				return nil, errorAt(src, i, "", "unrecognized character: %q", r)
			}
			i += utf8.RuneCountInString(t.s)
		}
		out = append(out, t)
	}
	return append(out, token{kind: tEOF, pos: len(rs)}), nil
}

// unquote reads a quoted literal with Go's escapes, as expr-lang does.
func unquote(src string, rs []rune, start int) (string, int, *Error) {
	q := rs[start]
	var sb strings.Builder
	bad := func(i int, msg string) (string, int, *Error) { return "", 0, errorAt(src, i, "", "%s", msg) }
	for i := start + 1; i < len(rs); {
		r := rs[i]
		switch {
		case r == q:
			return sb.String(), i + 1, nil
		case r == '\n':
			return bad(start, "literal not terminated")
		case r != '\\':
			sb.WriteRune(r)
			i++
			continue
		}
		if i+1 >= len(rs) {
			break
		}
		e := rs[i+1]
		i += 2
		switch e {
		case 'a':
			sb.WriteByte(7)
		case 'b':
			sb.WriteByte(8)
		case 'f':
			sb.WriteByte(12)
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'v':
			sb.WriteByte(11)
		case '\\':
			sb.WriteByte('\\')
		case '"', '\'':
			if e != q { // Go's rule: \' only between ', \" only between "
				return bad(i-2, "invalid char escape")
			}
			sb.WriteRune(e)
		case 'x', 'u', 'U':
			n := map[rune]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n > len(rs) {
				return bad(i, "invalid char escape")
			}
			v, err := strconv.ParseUint(string(rs[i:i+n]), 16, 32)
			if err != nil {
				return bad(i, "invalid char escape")
			}
			i += n
			switch {
			case e == 'x' && v >= 0x80:
				return bad(i-n-2, `a \x escape above 7f is outside the subset`)
			case v > utf8.MaxRune || v >= 0xD800 && v < 0xE000:
				return bad(i-n-2, "invalid char escape")
			}
			sb.WriteRune(rune(v))
		default:
			if e < '0' || e > '7' || i+2 > len(rs) {
				return bad(i-2, "invalid char escape")
			}
			v, err := strconv.ParseUint(string(rs[i-1:i+2]), 8, 32)
			if err != nil {
				return bad(i-2, "invalid char escape")
			}
			if v >= 0x80 {
				return bad(i-2, "an octal escape above 177 is outside the subset")
			}
			i += 2
			sb.WriteByte(byte(v))
		}
	}
	return bad(start, "literal not terminated")
}

// depth is how deeply n's operators nest: a leaf is 1, and a chain of one
// of && and ||, a || b || c, one level over its deepest operand (the guest
// walks a chain in a loop).
func depth(n *node) int {
	if and, ok := logic(n); ok {
		d := 0
		cur := n
		for a, ok := logic(cur); ok && a == and; a, ok = logic(cur) {
			d = max(d, depth(cur.b))
			cur = cur.a
		}
		return max(d, depth(cur)) + 1
	}
	d := 0
	for _, c := range append([]*node{n.a, n.b, n.c}, n.list...) {
		if c != nil {
			d = max(d, depth(c))
		}
	}
	return d + 1
}

// logic says whether n is a && (and) or a || node.
func logic(n *node) (and, ok bool) {
	if n.kind != nBinary {
		return false, false
	}
	switch n.op {
	case "&&", "and":
		return true, true
	case "||", "or":
		return false, true
	}
	return false, false
}

// Ref is a field's member an expression reads by name: root.member, as in
// pos.lat or steps.ask.slot (root pos, member lat), at the root's Line
// and Col.
type Ref struct {
	Root, Member string
	// Sub is the name read below Member (states.out.avg: avg), "" when
	// the chain ends there or goes on by an index.
	Sub       string
	Line, Col int
}

// Refs returns every root.member an expression of the subset reads, in
// the order they appear; the error is Check's. host/rules uses them to
// check that steps.<name> names an earlier step and vars.<name> a
// variable.
func Refs(src string) ([]Ref, error) {
	root, err := checked(src)
	if err != nil {
		return nil, err
	}
	var refs []Ref
	at := map[*node]int{} // a ref's member node → its index in refs
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if n.kind == nMember && n.b == nil && n.a != nil && n.a.kind == nField {
			line, col := position(src, n.a.pos)
			at[n] = len(refs)
			refs = append(refs, Ref{Root: n.a.op, Member: n.op, Line: line, Col: col})
		}
		walk(n.a)
		if n.kind == nMember && n.b == nil && n.a != nil {
			if i, ok := at[n.a]; ok {
				refs[i].Sub = n.op
			}
		}
		walk(n.b)
		walk(n.c)
		for _, m := range n.list {
			walk(m)
		}
	}
	walk(root)
	slices.SortStableFunc(refs, func(a, b Ref) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return refs, nil
}

// Paths returns the field paths an expression of the subset reads, each
// once, in the order they first appear: the longest chain of names from a
// field, as a template writes it (battery, pos.lat, steps.ask.slot). A
// chain cut by an index (a[0].b) or a call gives the part before it. The
// execution log and `ruled log why` show what each had, so that a
// condition that said no says what it saw; the error is Check's.
func Paths(src string) ([]string, error) {
	root, err := checked(src)
	if err != nil {
		return nil, err
	}
	var paths []string
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if c, ok := chain(n); ok {
			if !slices.Contains(paths, c) {
				paths = append(paths, c)
			}
			return
		}
		walk(n.a)
		walk(n.b)
		walk(n.c)
		for _, m := range n.list {
			walk(m)
		}
	}
	walk(root)
	return paths, nil
}

// chain is n as a dotted path of names, when it is one.
func chain(n *node) (string, bool) {
	switch {
	case n.kind == nField && !strings.HasPrefix(n.op, "$"):
		return n.op, true
	case n.kind == nMember && n.b == nil && n.a != nil:
		if c, ok := chain(n.a); ok {
			return c + "." + n.op, true
		}
	}
	return "", false
}

// NilOperand is a chain of names an ordering comparison or arithmetic
// takes as an operand (previous.watts in previous.watts > 100), at its
// root's Line and Col.
type NilOperand struct {
	Path      string
	Line, Col int
}

// MaybeNil returns the chains rooted at one of roots that an expression
// of the subset compares by order (< <= > >=) or computes with (+ - * /
// % and a sign), where a missing value fails: nil < 1 is an error in
// expr-lang, so the condition fails, while nil == 1 is false and nil ??
// 0 is 0. host/rules warns of them for the roots a rule reads whose value
// may be missing (states., previous., sun.); the error is Check's.
func MaybeNil(src string, roots ...string) ([]NilOperand, error) {
	root, err := checked(src)
	if err != nil {
		return nil, err
	}
	var out []NilOperand
	note := func(n *node) {
		c, ok := chain(n)
		if !ok {
			return
		}
		first, _, _ := strings.Cut(c, ".")
		if !slices.Contains(roots, first) || !strings.Contains(c, ".") {
			return
		}
		at := n
		for at.kind == nMember {
			at = at.a
		}
		line, col := position(src, at.pos)
		out = append(out, NilOperand{Path: c, Line: line, Col: col})
	}
	visit(root, func(n *node) bool {
		switch {
		case n.kind == nBinary && slices.Contains([]string{"<", "<=", ">", ">=", "+", "-", "*", "/", "%"}, n.op):
			note(n.a)
			note(n.b)
		case n.kind == nUnary && (n.op == "-" || n.op == "+"):
			note(n.a)
		}
		return true
	})
	return out, nil
}

// visit calls f on n and, while f says so, on everything below it, in
// order.
func visit(n *node, f func(*node) bool) {
	if n == nil || !f(n) {
		return
	}
	visit(n.a, f)
	visit(n.b, f)
	visit(n.c, f)
	for _, m := range n.list {
		visit(m, f)
	}
}
