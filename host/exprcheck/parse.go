package exprcheck

import (
	"slices"
	"strconv"
	"strings"

	"github.com/ruled-dev/ruled/internal/suggest"
)

// The parser follows expr-lang's (parser/parser.go): precedence climbing
// with its table, `not in` and its kin, comparison chains (a < b < c is
// a < b && b < c), `??` that does not mix with other operators unwrapped,
// the ternary at precedence 0, and postfix members and indexes.

type nodeKind uint8

const (
	nLit nodeKind = iota
	nField
	nMember
	nUnary
	nBinary
	nCond
	nArray
	nCall
)

type node struct {
	kind     nodeKind
	op       string // operator, field name, function name
	lit      typ    // a literal's type
	intVal   int64  // an int literal's value
	fltVal   float64
	strVal   string
	boolVal  bool
	pos      int
	a, b, c  *node
	list     []*node
	optional bool
}

type parser struct {
	src  string
	toks []token
	i    int
	err  *Error
	// nesting is how deeply expression recurses (parentheses, unary
	// operators, arrays, calls, ternaries): bounded at MaxDepth, as the
	// guest's parser is.
	nesting int
}

func (p *parser) cur() token { return p.toks[p.i] }

func (p *parser) next() {
	if p.i < len(p.toks)-1 {
		p.i++
	}
}

func (p *parser) is(s string) bool { t := p.cur(); return t.kind == tOp && t.s == s }

func (p *parser) failf(pos int, hint, format string, args ...any) *node {
	if p.err == nil {
		p.err = errorAt(p.src, pos, hint, format, args...)
	}
	return &node{}
}

func (p *parser) expect(s string) {
	if p.is(s) {
		p.next()
		return
	}
	p.failf(p.cur().pos, example, "unexpected token %s, want %q", p.cur().describe(), s)
}

var precedence = map[string]int{
	"or": 10, "||": 10, "and": 15, "&&": 15,
	"==": 20, "!=": 20, "<": 20, ">": 20, ">=": 20, "<=": 20, "in": 20, "matches": 20,
	"contains": 20, "startsWith": 20, "endsWith": 20,
	"..": 25, "+": 30, "-": 30, "*": 60, "/": 60, "%": 60, "**": 100, "^": 100, "??": 500, "|": 0,
}

func isComparison(op string) bool { return op == "<" || op == ">" || op == "<=" || op == ">=" }

func (p *parser) expression(prec int) *node {
	if p.err != nil {
		return &node{}
	}
	if p.nesting >= MaxDepth {
		return p.failf(p.cur().pos, "split the condition, or write a condition plugin", "the expression nests deeper than %d", MaxDepth)
	}
	p.nesting++
	defer func() { p.nesting-- }()
	if prec == 0 && p.is("let") {
		return p.failf(p.cur().pos, "write the value itself where it is used", "let is outside the subset")
	}
	if prec == 0 && p.is("if") {
		return p.failf(p.cur().pos, "write cond ? a : b", "if is outside the subset")
	}
	left := p.primary()
	prevOp := ""
	for p.cur().kind == tOp && p.err == nil {
		opTok := p.cur()
		negate := false
		if opTok.s == "not" {
			save := p.i
			p.next()
			switch s := p.cur().s; {
			case p.cur().kind == tOp && (s == "in" || s == "contains" || s == "startsWith" || s == "endsWith" || s == "matches"):
				if precedence[s] < prec {
					p.i = save
					return p.finish(prec, left)
				}
				negate, opTok = true, p.cur()
			default:
				return p.failf(p.cur().pos, example, "unexpected token %s", p.cur().describe())
			}
		}
		pr, ok := precedence[opTok.s]
		if !ok || pr < prec {
			break
		}
		p.next()
		switch opTok.s {
		case "matches":
			return p.failf(opTok.pos, noRegexp, "the operator matches is outside the subset")
		case "|", "..", "**", "^":
			return p.failf(opTok.pos, subset, "the operator %s is outside the subset", opTok.s)
		}
		if prevOp == "??" && opTok.s != "??" {
			return p.failf(opTok.pos, "wrap one of them in parentheses",
				"Operator (%s) and coalesce expressions (??) cannot be mixed. Wrap either by parentheses.", opTok.s)
		}
		if isComparison(opTok.s) {
			left = p.comparison(left, opTok, pr)
		} else {
			right := p.expression(pr + 1)
			left = &node{kind: nBinary, op: opTok.s, a: left, b: right, pos: opTok.pos}
			if negate {
				left = &node{kind: nUnary, op: "!", a: left, pos: opTok.pos}
			}
		}
		prevOp = opTok.s
	}
	return p.finish(prec, left)
}

func (p *parser) finish(prec int, n *node) *node {
	if prec != 0 {
		return n
	}
	for p.is("?") && p.err == nil {
		pos := p.cur().pos
		p.next()
		if p.is(":") {
			return p.failf(pos, "write c ? c : other", "the ?: shorthand is outside the subset")
		}
		a := p.expression(0)
		p.expect(":")
		b := p.expression(0)
		n = &node{kind: nCond, c: n, a: a, b: b, pos: pos}
	}
	return n
}

func (p *parser) comparison(left *node, op token, prec int) *node {
	var root *node
	for {
		right := p.expression(prec + 1)
		cmp := &node{kind: nBinary, op: op.s, a: left, b: right, pos: op.pos}
		if root == nil {
			root = cmp
		} else {
			root = &node{kind: nBinary, op: "&&", a: root, b: cmp, pos: op.pos}
		}
		left = right
		op = p.cur()
		if !(op.kind == tOp && isComparison(op.s) && p.err == nil) {
			return root
		}
		p.next()
	}
}

func (p *parser) primary() *node {
	t := p.cur()
	if t.kind == tOp && (t.s == "!" || t.s == "not" || t.s == "-" || t.s == "+") {
		p.next()
		pr := 50
		if t.s == "-" || t.s == "+" {
			pr = 90
		}
		op := t.s
		if op == "not" {
			op = "!"
		}
		return p.postfix(&node{kind: nUnary, op: op, a: p.expression(pr), pos: t.pos})
	}
	if p.is("(") {
		p.next()
		e := p.expression(0)
		p.expect(")")
		return p.postfix(e)
	}
	return p.secondary()
}

func (p *parser) secondary() *node {
	t := p.cur()
	var n *node
	switch t.kind {
	case tIdent:
		p.next()
		switch {
		case t.s == "true" || t.s == "false":
			return &node{kind: nLit, lit: typ{k: kBool}, boolVal: t.s == "true", pos: t.pos}
		case t.s == "nil":
			return &node{kind: nLit, lit: typ{k: kNil}, pos: t.pos}
		case p.is("("):
			n = p.call(t)
		case builtins[t.s]:
			return p.failf(t.pos, "write $env."+t.s+" for a field of that name", "%s is a function of expr-lang, not a field", t.s)
		default:
			n = &node{kind: nField, op: t.s, pos: t.pos}
		}
	case tNum:
		p.next()
		s := strings.ReplaceAll(t.s, "_", "")
		if strings.ContainsAny(s, ".eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return p.failf(t.pos, "", "the number %s is not a float64", s)
			}
			n = &node{kind: nLit, lit: typ{k: kFloat}, fltVal: f, pos: t.pos}
		} else {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return p.failf(t.pos, "write a float (1e20) for a number that large", "the number %s does not fit in an int (at most 9223372036854775807)", s)
			}
			n = &node{kind: nLit, lit: typ{k: kInt}, intVal: v, pos: t.pos}
		}
	case tStr:
		p.next()
		n = &node{kind: nLit, lit: typ{k: kString}, strVal: t.s, pos: t.pos}
	default:
		if !p.is("[") {
			if p.is("{") {
				return p.failf(t.pos, subset, "map literals are outside the subset")
			}
			if p.is("#") || p.is(".") {
				return p.failf(t.pos, subset, "predicates (all, any, filter, map …) are outside the subset")
			}
			if nx := p.i + 1; t.kind == tOp && nx < len(p.toks) && p.toks[nx].kind == tOp && p.toks[nx].s == "(" {
				// contains(name, "x"): an operator written as a function.
				switch t.s {
				case "contains", "startsWith", "endsWith":
					return p.failf(t.pos, `write it between its operands: name `+t.s+` "x"`, "%s is an operator, not a function", t.s)
				case "in":
					return p.failf(t.pos, `write it between its operands: level in [1, 2]`, "in is an operator, not a function")
				case "matches":
					return p.failf(t.pos, noRegexp, "matches is outside the subset")
				}
			}
			return p.failf(t.pos, example, "unexpected token %s", t.describe())
		}
		p.next()
		n = &node{kind: nArray, pos: t.pos}
		for !p.is("]") && p.err == nil {
			if len(n.list) > 0 {
				p.expect(",")
				if p.is("]") {
					break
				}
			}
			e := p.expression(0)
			if !literal(e) && p.err == nil {
				return p.failf(e.pos, "compare one by one: a == x || a == y", "an array literal may hold only literals here")
			}
			n.list = append(n.list, e)
		}
		p.expect("]")
	}
	return p.postfix(n)
}

// noRegexp is the hint for matches: what the subset has instead.
const noRegexp = "a regular expression is outside the subset; contains, startsWith and endsWith are in it, and a condition plugin can do more"

// functionSynonyms are other languages' names for the subset's functions.
var functionSynonyms = map[string]string{"size": "len", "length": "len", "count": "len", "strlen": "len",
	"tolower": "lower", "lowercase": "lower", "toupper": "upper", "uppercase": "upper", "strip": "trim"}

// Functions are the functions of the subset, each taking one argument.
var Functions = []string{"len", "lower", "upper", "trim"}

func (p *parser) call(name token) *node {
	if !slices.Contains(Functions, name.s) {
		if builtins[name.s] {
			return p.failf(name.pos, subset, "%s() is outside the subset", name.s)
		}
		hint := subset
		if m, ok := functionSynonyms[strings.ToLower(name.s)]; ok {
			hint = "did you mean " + m + "?"
		} else if m := suggest.Word(name.s, Functions); m != "" {
			hint = "did you mean " + m + "?"
		}
		return p.failf(name.pos, hint, "calling a function other than len, lower, upper or trim is outside the subset")
	}
	p.expect("(")
	n := &node{kind: nCall, op: name.s, pos: name.pos}
	for !p.is(")") && p.err == nil {
		if len(n.list) > 0 {
			p.expect(",")
		}
		if p.is("#") || p.is("{") {
			return p.failf(p.cur().pos, subset, "predicates (all, any, filter, map …) are outside the subset")
		}
		n.list = append(n.list, p.expression(0))
	}
	p.expect(")")
	if len(n.list) != 1 && p.err == nil {
		return p.failf(name.pos, "", "%s() takes one argument here", name.s)
	}
	return n
}

func (p *parser) postfix(n *node) *node {
	for p.cur().kind == tOp && p.err == nil {
		t := p.cur()
		switch t.s {
		case ".", "?.":
			p.next()
			if t.s == "?." && p.is("[") {
				return p.failf(t.pos, "write a?.b, or a[0] after checking a != nil", "?.[ is outside the subset")
			}
			name := p.cur()
			if name.kind != tIdent && !(name.kind == tOp && isWord(name.s)) {
				return p.failf(name.pos, "", "expected name")
			}
			p.next()
			if p.is("(") {
				return p.failf(name.pos, subset, "methods are outside the subset")
			}
			n = &node{kind: nMember, a: n, op: name.s, optional: t.s == "?.", pos: name.pos}
		case "[":
			p.next()
			if p.is(":") {
				return p.failf(t.pos, subset, "slices (a[1:2]) are outside the subset")
			}
			idx := p.expression(0)
			if p.is(":") {
				return p.failf(t.pos, subset, "slices (a[1:2]) are outside the subset")
			}
			p.expect("]")
			if p.err != nil {
				return n
			}
			if !(idx.kind == nLit && (idx.lit.k == kString || idx.lit.k == kInt)) &&
				!(idx.kind == nUnary && idx.op == "-" && idx.a.kind == nLit && idx.a.lit.k == kInt) {
				return p.failf(idx.pos, subset, "an index other than a string or an integer literal is outside the subset")
			}
			n = &node{kind: nMember, a: n, b: idx, pos: t.pos}
		default:
			return n
		}
	}
	return n
}

func isWord(s string) bool {
	for i, r := range s {
		if !isIdentStart(r) && !(i > 0 && isIdentRune(r)) {
			return false
		}
	}
	return s != ""
}

func literal(n *node) bool {
	switch n.kind {
	case nLit:
		return true
	case nUnary:
		return (n.op == "-" || n.op == "+") && n.a.kind == nLit && (n.a.lit.k == kInt || n.a.lit.k == kFloat)
	case nArray:
		for _, e := range n.list {
			if !literal(e) {
				return false
			}
		}
		return true
	}
	return false
}

// builtins are expr-lang's builtin functions (v1.17.8): as a bare name each
// is the function, not a field.
var builtins = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`all none any one filter map find findIndex findLast findLastIndex
		count sum groupBy sortBy reduce len type abs ceil floor round int float string trim trimPrefix
		trimSuffix upper lower split splitAfter replace repeat join indexOf lastIndexOf hasPrefix
		hasSuffix max min mean median toJSON fromJSON toBase64 fromBase64 now duration date timezone
		first last get take keys values toPairs fromPairs reverse uniq concat flatten sort bitand bitor
		bitxor bitnand bitshl bitshr bitushr bitnot`) {
		builtins[n] = true
	}
}
