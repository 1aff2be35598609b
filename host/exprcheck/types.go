package exprcheck

// The typer is expr-lang's checker (checker/checker.go, checker/nature)
// for the subset: a field's type is unknown, a literal's is known, and an
// operator refuses known operands it cannot take — so `true || 1 + "a"`
// is refused although it would never run, as expr-lang refuses it.

type kind uint8

const (
	kUnknown kind = iota
	kNil
	kBool
	kInt
	kFloat
	kString
	kArray
)

type typ struct {
	k    kind
	elem *typ // an array's element, when all its elements have one kind
}

func (t typ) known() bool { return t.k != kUnknown }
func (t typ) number() bool {
	return t.k == kInt || t.k == kFloat
}

func (t typ) String() string {
	return [...]string{"a field's value", "nil", "a bool", "an int", "a float", "a string", "an array"}[t.k]
}

type typer struct {
	src string
	err *Error
}

func (c *typer) errAt(n *node, msg, hint string) *Error {
	line, col := position(c.src, n.pos)
	return &Error{Line: line, Col: col, Msg: msg, Hint: hint}
}

func (c *typer) fail(n *node, msg string) typ {
	if c.err == nil {
		c.err = c.errAt(n, msg, "combine like with like: numbers with numbers, strings with strings, bools with && || !")
	}
	return typ{}
}

// comparable is Nature.ComparableTo.
func comparable(a, b typ) bool {
	return !a.known() || !b.known() || a.k == kNil || b.k == kNil || a.number() && b.number() ||
		a.k == kArray && b.k == kArray || a.k == b.k
}

// maybe is Nature.MaybeCompatible: both unknown, or one unknown and the
// other passing one of the checks.
func maybe(a, b typ, ok func(typ) bool) bool {
	return !a.known() && !b.known() || !a.known() && ok(b) || !b.known() && ok(a)
}

func isBool(t typ) bool   { return t.k == kBool }
func isNumber(t typ) bool { return t.number() }
func isInt(t typ) bool    { return t.k == kInt }
func isString(t typ) bool { return t.k == kString }
func numOrStr(t typ) bool { return t.number() || t.k == kString }

func promote(a, b typ) typ {
	if a.k == kInt && b.k == kInt {
		return typ{k: kInt}
	}
	return typ{k: kFloat}
}

func (c *typer) typeOf(n *node) typ {
	if c.err != nil {
		return typ{}
	}
	switch n.kind {
	case nLit:
		return n.lit
	case nField:
		return typ{}
	case nMember:
		base := c.typeOf(n.a)
		if base.known() {
			return c.fail(n, "only fields have members here ("+base.String()+" has none)")
		}
		return typ{}
	case nArray:
		var prev *typ
		same := true
		for i, e := range n.list {
			t := c.typeOf(e)
			if i > 0 && t.k != prev.k {
				same = false
			}
			prev = &t
		}
		if same && prev != nil && prev.known() {
			return typ{k: kArray, elem: prev}
		}
		return typ{k: kArray}
	case nCall:
		arg := c.typeOf(n.list[0])
		if n.op == "len" {
			if arg.known() && arg.k != kString && arg.k != kArray {
				return c.fail(n, "len() wants a string or an array, not "+arg.String())
			}
			return typ{k: kInt}
		}
		if arg.known() && arg.k != kString {
			return c.fail(n, n.op+"() wants a string, not "+arg.String())
		}
		return typ{k: kString}
	case nUnary:
		t := c.typeOf(n.a)
		if n.op == "!" {
			if t.known() && t.k != kBool {
				return c.fail(n, "! wants a bool, not "+t.String())
			}
			return typ{k: kBool}
		}
		if t.known() && !t.number() {
			return c.fail(n, n.op+" wants a number, not "+t.String())
		}
		return t
	case nCond:
		cond := c.typeOf(n.c)
		if cond.known() && cond.k != kBool {
			return c.fail(n.c, "the condition of ?: is "+cond.String()+", not a bool")
		}
		a, b := c.typeOf(n.a), c.typeOf(n.b)
		switch {
		case a.k == kNil && b.k != kNil:
			return b
		case a.k != kNil && b.k == kNil:
			return a
		case a.known() && a.k == b.k:
			if a.k == kArray && (a.elem == nil || b.elem == nil || a.elem.k != b.elem.k) {
				return typ{k: kArray}
			}
			return a
		}
		return typ{}
	case nBinary:
		return c.binary(n)
	}
	return typ{}
}

func (c *typer) binary(n *node) typ {
	l, r := c.typeOf(n.a), c.typeOf(n.b)
	if c.err != nil {
		return typ{}
	}
	bad := func() typ {
		if n.op == "==" || n.op == "!=" || n.op == "<" || n.op == ">" || n.op == "<=" || n.op == ">=" {
			return c.fail(n, "cannot compare "+l.String()+" "+n.op+" "+r.String())
		}
		return c.fail(n, "cannot apply "+n.op+" to "+l.String()+" and "+r.String())
	}
	switch n.op {
	case "==", "!=":
		if comparable(l, r) {
			return typ{k: kBool}
		}
	case "||", "or", "&&", "and":
		if isBool(l) && isBool(r) || maybe(l, r, isBool) {
			return typ{k: kBool}
		}
	case "<", ">", "<=", ">=":
		if l.number() && r.number() || isString(l) && isString(r) || maybe(l, r, numOrStr) {
			return typ{k: kBool}
		}
	case "-", "*":
		if l.number() && r.number() {
			return promote(l, r)
		}
		if maybe(l, r, isNumber) {
			return typ{}
		}
	case "/":
		if l.number() && r.number() || maybe(l, r, isNumber) {
			return typ{k: kFloat}
		}
	case "%":
		if isInt(l) && isInt(r) || maybe(l, r, isInt) {
			if v, ok := constInt(n.b); ok && v == 0 {
				if _, ok := constInt(n.a); ok {
					return c.fail(n, "integer divide by zero")
				}
			}
			return typ{k: kInt}
		}
	case "+":
		if l.number() && r.number() {
			return promote(l, r)
		}
		if isString(l) && isString(r) {
			return typ{k: kString}
		}
		if maybe(l, r, numOrStr) {
			return typ{}
		}
	case "in":
		switch {
		case r.k == kArray:
			if r.elem != nil && !comparable(l, *r.elem) {
				return c.fail(n, "cannot look for "+l.String()+" in an array whose elements are each "+r.elem.String())
			}
			return typ{k: kBool}
		case !l.known() && (r.k == kString || r.k == kArray):
			return typ{k: kBool}
		case !r.known():
			return typ{k: kBool}
		}
	case "contains", "startsWith", "endsWith":
		if isString(l) && isString(r) || maybe(l, r, isString) {
			return typ{k: kBool}
		}
	case "??":
		switch {
		case l.k == kNil && r.k != kNil:
			return r
		case l.k != kNil && r.k == kNil:
			return l
		case l.k == kNil && r.k == kNil:
			return l
		case l.known() && l.k == r.k:
			return l
		}
		return typ{}
	default:
		return c.fail(n, "the operator "+n.op+" is outside the subset")
	}
	return bad()
}

// constInt is an int that expr-lang's optimizer folds n to: an int literal,
// or + - * and unary - + of them.
func constInt(n *node) (int64, bool) {
	switch n.kind {
	case nLit:
		return n.intVal, n.lit.k == kInt
	case nUnary:
		v, ok := constInt(n.a)
		if n.op == "-" {
			v = -v
		}
		return v, ok && n.op != "!"
	case nBinary:
		a, ok1 := constInt(n.a)
		b, ok2 := constInt(n.b)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch n.op {
		case "+":
			return a + b, true
		case "-":
			return a - b, true
		case "*":
			return a * b, true
		case "%":
			if b != 0 {
				return a % b, true
			}
		}
	}
	return 0, false
}
