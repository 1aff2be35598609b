package exprcheck

import (
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
	"weak"

	"github.com/ruled-dev/ruled/abi"
)

// The host evaluates a string when: itself (RATIONALE "Why the host
// evaluates a string when: itself"). The evaluator below is a port of the
// expr plugin's (plugins/expr/index.ts): the same tree (field chains, ?.
// chains, context paths), the same folding of literals, the same values
// (an int literal told from an event's int64, a string's byte), the same
// errors word for word. plugins/expr_test.go runs random expressions of
// the subset over random events here, in the plugin and in expr-lang, and
// wants the same answers from all three.

// Program is a checked expression, ready to run over events.
// It is immutable: one Program serves concurrent calls.
type Program struct {
	root *enode
}

// Compile checks src (Check) and readies it to run. Rules that say the
// same expression share one Program while any of them holds it: ten
// thousand rules with one condition cost one tree (~1.5 KB for
// `battery < 20 && !charging`), as they shared one plugin handle before.
func Compile(src string) (*Program, error) {
	programs.Lock()
	p := programs.m[src].Value()
	programs.Unlock()
	if p != nil {
		return p, nil
	}
	n, err := checked(src)
	if err != nil {
		return nil, err
	}
	p = &Program{root: fold(build(n))}
	programs.Lock()
	if programs.m == nil {
		programs.m = map[string]weak.Pointer[Program]{}
	}
	programs.m[src] = weak.Make(p)
	programs.Unlock()
	runtime.AddCleanup(p, forget, src)
	return p, nil
}

// programs are the Programs compiled and still held, by source: weak
// pointers, so a Program no rule holds any more goes, and its entry with it.
var programs struct {
	sync.Mutex
	m map[string]weak.Pointer[Program]
}

// forget drops src's entry once its Program is gone (unless a new one
// took its place).
func forget(src string) {
	programs.Lock()
	defer programs.Unlock()
	if programs.m[src].Value() == nil {
		delete(programs.m, src)
	}
}

// MaxWork bounds what one evaluation may do: a node visited, an element or
// member compared, 256 bytes of a string searched or mapped each count
// one. An expression is at most MaxLength bytes and an event is bounded,
// but `a == b` on two large arrays, written a thousand times, could
// otherwise keep a worker for seconds; the plugin had its fuel for that.
// Conditions that users write do a few dozen.
const MaxWork = 1 << 20

// ErrWork is the error of an evaluation past MaxWork.
var ErrWork = errors.New("the condition did more work than a condition may (" + strconv.Itoa(MaxWork) + " steps); compare fewer or smaller values")

// EvalError is an evaluation's failure: an operand of the wrong type, an
// index out of range. Its text is the expr plugin's.
type EvalError struct {
	Msg string
	// Field is an event's field (a name at its root) the error found
	// nil: most often misspelt, so a caller may say which field the event
	// has that was meant. "" for other errors.
	Field string
}

func (e *EvalError) Error() string { return e.Msg }

// Eval runs p over an event's view and its run's context (abi.CallInput:
// the outputs of its steps, its variables, the states it reads). A path
// below steps., vars., states., previous. or sun. is read from the
// context only, never from the event, as the SDKs read it. A nil result
// is false (expr-lang's AsBool); any other non-bool is an error.
func (p *Program) Eval(event, context abi.View) (bool, error) {
	e := evaluator{ev: event, cx: context, work: MaxWork}
	v := e.run(p.root)
	if e.err != nil {
		return false, e.err
	}
	switch v.k {
	case vNil:
		return false, nil
	case vBool:
		return v.b, nil
	}
	return false, &EvalError{Msg: "the condition is " + typeName(v) + ", not a bool"}
}

// ---- values

type vkind uint8

const (
	vNil vkind = iota
	vBool
	vInt
	vFloat
	vStr
	vArr  // an array literal
	vVArr // an array of the event (or context), named by its path
	vVMap // an object of the event (or context), named by its path
)

type value struct {
	k vkind
	b bool
	// lit marks an int of Go's int (a literal, len, %) rather than an
	// event's int64: reflect.DeepEqual tells them apart inside objects.
	lit bool
	// byte marks a string's byte (s[0]): Go's uint8, which - negates
	// modulo 256.
	byte bool
	i    int64
	f    float64
	s    string
	arr  []value
	path string
}

var (
	theNil   = value{}
	theTrue  = value{k: vBool, b: true}
	theFalse = value{k: vBool}
)

func boolV(b bool) value {
	if b {
		return theTrue
	}
	return theFalse
}

func intV(i int64, lit bool) value { return value{k: vInt, i: i, lit: lit} }
func floatV(f float64) value       { return value{k: vFloat, f: f} }
func strV(s string) value          { return value{k: vStr, s: s} }

func isNum(v value) bool { return v.k == vInt || v.k == vFloat }

func num(v value) float64 {
	if v.k == vInt {
		return float64(v.i)
	}
	return v.f
}

// typeName is a value's type as an error names it.
func typeName(v value) string {
	switch v.k {
	case vNil:
		return "nil"
	case vBool:
		return "a bool"
	case vInt:
		if v.byte {
			return "a byte"
		}
		return "an int"
	case vFloat:
		return "a float"
	case vStr:
		return "a string"
	case vVMap:
		return "an object"
	}
	return "an array"
}

// ---- the tree the evaluator walks

type etype uint8

const (
	eLit etype = iota
	eField
	eEnv
	eMember
	eUnary
	eBinary
	eCond
	eArray
	eCall
	eChain // a member chain that began with ?. (or continues one): nil when it met nil
)

type enode struct {
	t  etype
	op string
	// val is a literal's value, or a member's key (a string or an int).
	val value
	// path is a field's path (its name escaped).
	path    string
	a, b, c *enode
	list    []*enode
	// optional is a ?. member.
	optional bool
	// ctx is the whole path of a chain of names and literal indexes rooted
	// at steps, vars, states, previous or sun (steps.ask.slot), read from
	// the run's context as a whole: the event has no steps field to walk
	// down from.
	ctx string
	// static is a member's whole path when its chain is names only, from a
	// field or $env (pos.lat: "pos.lat"): found in the view, it is the
	// value a walk down the chain would reach, with no path built per call.
	// None of the names is a number, so what holds them is an object.
	static string
	// name is how the expression writes a field or member (pos.lat,
	// tags[0]), for an error to name a nil operand; "" for anything else.
	name string
	// spine is a && or || chain's nodes from the top down (see spine),
	// worked out once when the tree is folded.
	spine []*enode
}

var contextRoots = map[string]bool{"steps": true, "vars": true, "states": true, "previous": true, "sun": true}

// ctxPath is the context path of member key of base, or "".
func ctxPath(base *enode, key string) string {
	if base.t == eField && contextRoots[base.op] {
		return base.op + "." + key
	}
	if base.t == eMember && base.ctx != "" {
		return base.ctx + "." + key
	}
	return ""
}

// staticPath is the whole path of member key of base when base is a
// field, $env or a member with a static path, and key is not a number.
func staticPath(base *enode, key string) string {
	if strings.Trim(key, "0123456789") == "" {
		return ""
	}
	switch {
	case base.t == eEnv:
		return key
	case base.t == eField:
		return base.path + "." + key
	case base.t == eMember && base.static != "":
		// $env.steps.ask walks down from the event's steps; a whole path
		// below steps. would be read from the run's context instead.
		if p := base.static + "." + key; !inContext(p) {
			return p
		}
	}
	return ""
}

// build turns the checker's tree into the evaluator's, as the plugin's
// parser builds it: a ?. member starts a chain that the members after it
// continue and an index ends.
func build(n *node) *enode {
	switch n.kind {
	case nLit:
		return &enode{t: eLit, val: litValue(n)}
	case nField:
		if n.op == "$env" {
			return &enode{t: eEnv}
		}
		return &enode{t: eField, op: n.op, path: abi.PathKey(n.op), name: n.op}
	case nMember:
		base := build(n.a)
		if n.b == nil { // .name or ?.name
			isChain := base.t == eChain
			m := &enode{t: eMember, val: strV(n.op), optional: n.optional}
			m.a = base
			if isChain {
				m.a = base.a
			}
			m.ctx = ctxPath(m.a, abi.PathKey(n.op))
			m.static = staticPath(m.a, abi.PathKey(n.op))
			if m.a.name != "" {
				m.name = m.a.name + "." + n.op
				if n.optional {
					m.name = m.a.name + "?." + n.op
				}
			}
			if isChain || n.optional {
				return &enode{t: eChain, a: m, name: m.name}
			}
			return m
		}
		m := &enode{t: eMember, a: base}
		if n.b.kind == nLit {
			m.val = litValue(n.b)
		} else { // -int
			m.val = intV(-n.b.a.intVal, true)
		}
		if m.val.k == vStr {
			m.ctx = ctxPath(base, abi.PathKey(m.val.s))
		} else if m.val.i >= 0 {
			m.ctx = ctxPath(base, strconv.FormatInt(m.val.i, 10))
		}
		if base.name != "" {
			if m.val.k == vStr {
				m.name = base.name + "[" + strconv.Quote(m.val.s) + "]"
			} else {
				m.name = base.name + "[" + strconv.FormatInt(m.val.i, 10) + "]"
			}
		}
		return m
	case nUnary:
		return &enode{t: eUnary, op: n.op, a: build(n.a)}
	case nBinary:
		return &enode{t: eBinary, op: n.op, a: build(n.a), b: build(n.b)}
	case nCond:
		return &enode{t: eCond, c: build(n.c), a: build(n.a), b: build(n.b)}
	case nArray, nCall:
		e := &enode{t: eArray, op: n.op}
		if n.kind == nCall {
			e.t = eCall
		}
		for _, x := range n.list {
			e.list = append(e.list, build(x))
		}
		return e
	}
	return &enode{t: eLit}
}

func litValue(n *node) value {
	switch n.lit.k {
	case kBool:
		return boolV(n.boolVal)
	case kInt:
		return intV(n.intVal, true)
	case kFloat:
		return floatV(n.fltVal)
	case kString:
		return strV(n.strVal)
	}
	return theNil
}

// ---- folding

// expr-lang's optimizer folds literals before anything runs, and some
// folds change what a condition does: `x || true` is true without reading
// x (which might have failed), `x && true` is x. So the evaluator folds as
// it does (optimizer/fold.go), children first: arithmetic on number
// literals, + on strings, == on ints, strings or bools, ! and - on a
// literal, and the boolean operators with a literal side.

func isLogic(n *enode, and bool) bool {
	if n.t != eBinary {
		return false
	}
	if and {
		return n.op == "&&" || n.op == "and"
	}
	return n.op == "||" || n.op == "or"
}

// spine is a chain of one of && and || from the top down: a || b || c is
// ((a || b) || c), as deep as it is long, so it is walked in a loop.
// The leftmost operand is the last node's a.
func spine(n *enode, and bool) []*enode {
	var out []*enode
	for cur := n; isLogic(cur, and); cur = cur.a {
		out = append(out, cur)
	}
	return out
}

func lit(v value) *enode { return &enode{t: eLit, val: v} }

func fold(n *enode) *enode {
	if isLogic(n, true) || isLogic(n, false) {
		and := isLogic(n, true)
		sp := spine(n, and)
		acc := fold(sp[len(sp)-1].a)
		for i := len(sp) - 1; i >= 0; i-- {
			s := sp[i]
			s.a = acc
			s.b = fold(s.b)
			acc = foldLogic(s, and)
		}
		if isLogic(acc, and) {
			acc.spine = spine(acc, and)
		}
		return acc
	}
	if n.a != nil {
		n.a = fold(n.a)
	}
	if n.b != nil && n.t != eMember {
		n.b = fold(n.b)
	}
	if n.c != nil {
		n.c = fold(n.c)
	}
	for i, x := range n.list {
		n.list[i] = fold(x)
	}
	switch n.t {
	case eUnary:
		a := n.a
		if a.t != eLit {
			return n
		}
		switch {
		case n.op == "!" && a.val.k == vBool:
			return lit(boolV(!a.val.b))
		case (n.op == "-" || n.op == "+") && a.val.k == vInt:
			if n.op == "-" {
				return lit(intV(-a.val.i, true))
			}
			return lit(intV(a.val.i, true))
		case (n.op == "-" || n.op == "+") && a.val.k == vFloat:
			if n.op == "-" {
				return lit(floatV(-a.val.f))
			}
			return lit(floatV(a.val.f))
		}
		return n
	case eBinary:
	default:
		return n
	}
	if n.a.t != eLit || n.b.t != eLit {
		return n
	}
	x, y := n.a.val, n.b.val
	nums, ints := isNum(x) && isNum(y), x.k == vInt && y.k == vInt
	switch op := n.op; {
	case op == "+" && x.k == vStr && y.k == vStr:
		return lit(strV(x.s + y.s))
	case (op == "+" || op == "-" || op == "*") && nums:
		if ints {
			return lit(intV(arith(op, x.i, y.i), true))
		}
		return lit(floatV(arith(op, num(x), num(y))))
	case op == "/" && nums:
		return lit(floatV(num(x) / num(y)))
	case op == "%" && ints && y.i != 0:
		if y.i == -1 {
			return lit(intV(0, true))
		}
		return lit(intV(x.i%y.i, true))
	case op == "==" && ints:
		return lit(boolV(x.i == y.i))
	case op == "==" && x.k == vStr && y.k == vStr:
		return lit(boolV(x.s == y.s))
	case op == "==" && x.k == vBool && y.k == vBool:
		return lit(boolV(x.b == y.b))
	}
	return n
}

// foldLogic is fold's rule for a && or || whose operands are folded.
func foldLogic(n *enode, and bool) *enode {
	a, b := n.a, n.b
	ab, bb := a.t == eLit && a.val.k == vBool, b.t == eLit && b.val.k == vBool
	switch {
	case ab && a.val.b == and: // true and x, false or x
		return b
	case bb && b.val.b == and: // x and true, x or false
		return a
	case ab || bb:
		return lit(boolV(!and))
	}
	return n
}

// arith is + - or * on two ints (wrapping, as Go's int64) or two floats.
func arith[T int64 | float64](op string, x, y T) T {
	switch op {
	case "+":
		return x + y
	case "-":
		return x - y
	}
	return x * y
}

// ---- evaluation

type evaluator struct {
	ev, cx abi.View
	err    error
	// chainNil is set by a ?. on nil: the rest of its chain is nil.
	chainNil bool
	// nilField is the root field an error is about to name as nil.
	nilField string
	work     int
}

func (e *evaluator) fail(msg string) value {
	if e.err == nil {
		e.err = &EvalError{Msg: msg, Field: e.nilField}
	}
	return theNil
}

// spend takes n units of work, and fails the evaluation past MaxWork.
func (e *evaluator) spend(n int) bool {
	e.work -= n
	if e.work < 0 {
		if e.err == nil {
			e.err = ErrWork
		}
		return false
	}
	return true
}

// inContext reports whether a path is one a run's context holds: below
// steps., vars., states., previous. or sun. (as the SDKs' views route it).
func inContext(path string) bool {
	for _, r := range [...]string{"steps.", "vars.", "states.", "previous.", "sun."} {
		if len(path) > len(r) && strings.HasPrefix(path, r) {
			return true
		}
	}
	return false
}

func (e *evaluator) view(path string) abi.View {
	if inContext(path) {
		return e.cx
	}
	return e.ev
}

func (e *evaluator) find(path string) (abi.Value, bool) { return e.view(path).Find(path) }

// fromView is the value at path.
func (e *evaluator) fromView(path string) value {
	x, ok := e.find(path)
	if !ok {
		return theNil
	}
	return e.valueOf(x, path)
}

// valueOf is the value of x, the entry at path.
func (e *evaluator) valueOf(x abi.Value, path string) value {
	switch x.Kind() {
	case abi.ValueBool:
		b, _ := x.Bool()
		return boolV(b)
	case abi.ValueInt:
		i, _ := x.Int()
		return intV(i, false)
	case abi.ValueFloat:
		f, _ := x.Float()
		return floatV(f)
	case abi.ValueString:
		s, _ := x.Str()
		e.spend(len(s) >> 8)
		// The string is read in place: the view outlives the evaluation,
		// and no value outlives it (an answer is a bool, an error names
		// types, not values).
		return strV(unsafe.String(unsafe.SliceData(s), len(s)))
	case abi.ValueObject:
		return value{k: vVMap, path: path}
	case abi.ValueArray:
		return value{k: vVArr, path: path}
	}
	return theNil
}

// count is the member count of the container at path.
func (e *evaluator) count(path string) int {
	x, _ := e.find(path)
	n, _ := x.Count()
	return n
}

func child(path, step string) string {
	if path == "" {
		return step
	}
	return path + "." + step
}

func (e *evaluator) run(n *enode) value {
	if e.err != nil || !e.spend(1) {
		return theNil
	}
	switch n.t {
	case eLit:
		return n.val
	case eField:
		return e.fromView(n.path)
	case eEnv:
		return value{k: vVMap}
	case eChain:
		v := e.run(n.a)
		if e.chainNil {
			e.chainNil = false
			return theNil
		}
		return v
	case eMember:
		return e.member(n)
	case eUnary:
		return e.unary(n)
	case eBinary:
		return e.binary(n)
	case eCond:
		c := e.run(n.c)
		if e.err != nil {
			return theNil
		}
		if c.k != vBool {
			return e.fail("the condition of ?: is " + typeName(c) + ", not a bool")
		}
		if c.b {
			return e.run(n.a)
		}
		return e.run(n.b)
	case eArray:
		a := make([]value, len(n.list))
		for i, x := range n.list {
			a[i] = e.run(x)
		}
		return value{k: vArr, arr: a}
	case eCall:
		return e.call(n.op, e.run(n.list[0]))
	}
	return e.fail("unknown node")
}

func keyText(key value) string {
	if key.k == vStr {
		return "." + key.s
	}
	return "[" + strconv.FormatInt(key.i, 10) + "]"
}

func (e *evaluator) member(n *enode) value {
	// steps.x.y, vars.x, states.x.y and previous.y are the run's
	// context's, whole, or nil: never walked down from an event's field.
	if n.ctx != "" {
		return e.fromView(n.ctx)
	}
	if n.static != "" {
		if x, ok := e.find(n.static); ok {
			return e.valueOf(x, n.static)
		}
	}
	from := e.run(n.a)
	if e.err != nil || e.chainNil {
		return theNil
	}
	key := n.val
	switch from.k {
	case vNil:
		if n.optional {
			e.chainNil = true
			return theNil
		}
		return e.fail("cannot read " + keyText(key) + " of nil (a?.b reads nil as nil)" + e.nilNamed(n.a, from))
	case vVMap:
		if key.k != vStr {
			return e.fail("an object's member is named by a string, not an int")
		}
		return e.fromView(child(from.path, abi.PathKey(key.s)))
	case vVArr, vArr, vStr:
		if key.k != vInt {
			return e.fail("cannot read ." + key.s + " of " + typeName(from) + " (an index is an int)")
		}
		var l int64
		switch from.k {
		case vVArr:
			l = int64(e.count(from.path))
		case vArr:
			l = int64(len(from.arr))
		default:
			l = int64(len(from.s))
		}
		i := key.i
		if i < 0 {
			i += l
		}
		if i < 0 || i >= l {
			return e.fail("index out of range: " + strconv.FormatInt(i, 10) + " (array length is " + strconv.FormatInt(l, 10) + ")")
		}
		switch from.k {
		case vVArr:
			return e.fromView(child(from.path, strconv.FormatInt(i, 10)))
		case vArr:
			return from.arr[i]
		}
		b := intV(int64(from.s[i]), false)
		b.byte = true
		return b
	}
	return e.fail("cannot read " + keyText(key) + " of " + typeName(from))
}

func (e *evaluator) unary(n *enode) value {
	v := e.run(n.a)
	if e.err != nil {
		return theNil
	}
	switch {
	case n.op == "+": // expr-lang compiles unary + to nothing
		return v
	case n.op == "!":
		if v.k != vBool {
			return e.fail("! wants a bool, not " + typeName(v) + e.nilNamed(n.a, v))
		}
		return boolV(!v.b)
	case v.k == vInt && v.byte:
		b := intV((-v.i)&0xFF, false)
		b.byte = true
		return b
	case v.k == vInt:
		return intV(-v.i, v.lit)
	case v.k == vFloat:
		return floatV(-v.f)
	}
	return e.fail("- wants a number, not " + typeName(v) + e.nilNamed(n.a, v))
}

func (e *evaluator) binary(n *enode) value {
	op := n.op
	if isLogic(n, true) || isLogic(n, false) {
		// ((a && b) && c): a, then each right operand while the value so
		// far is true (&&) or false (||); the last one's value is the result.
		and := isLogic(n, true)
		sp := n.spine
		vn := sp[len(sp)-1].a
		v := e.run(vn)
		for i := len(sp) - 1; i >= 0; i-- {
			if e.err != nil {
				return theNil
			}
			if v.k != vBool {
				return e.fail(sp[i].op + " wants bools, not " + typeName(v) + e.nilNamed(vn, v))
			}
			if and != v.b {
				return v
			}
			vn = sp[i].b
			v = e.run(vn)
		}
		return v
	}
	if op == "??" {
		l := e.run(n.a)
		if e.err != nil {
			return theNil
		}
		if l.k != vNil {
			return l
		}
		return e.run(n.b)
	}
	l := e.run(n.a)
	r := e.run(n.b)
	if e.err != nil {
		return theNil
	}
	switch op {
	case "==":
		return boolV(e.equal(l, r))
	case "!=":
		return boolV(!e.equal(l, r))
	case "<", ">", "<=", ">=":
		var c int
		switch {
		case isNum(l) && isNum(r):
			if l.k == vInt && r.k == vInt {
				c = cmp3(l.i < r.i, l.i > r.i)
			} else {
				x, y := num(l), num(r)
				if math.IsNaN(x) || math.IsNaN(y) {
					return theFalse
				}
				c = cmp3(x < y, x > y)
			}
		case l.k == vStr && r.k == vStr:
			e.spend(min(len(l.s), len(r.s)) >> 8)
			c = strings.Compare(l.s, r.s) // Go's order: UTF-8 bytes
		default:
			return e.fail("cannot compare " + typeName(l) + " " + op + " " + typeName(r) + e.nilNamed2(n, l, r))
		}
		switch op {
		case "<":
			return boolV(c < 0)
		case ">":
			return boolV(c > 0)
		case "<=":
			return boolV(c <= 0)
		}
		return boolV(c >= 0)
	case "+", "-", "*":
		if op == "+" && l.k == vStr && r.k == vStr {
			e.spend((len(l.s) + len(r.s)) >> 8)
			return strV(l.s + r.s)
		}
		if !isNum(l) || !isNum(r) {
			return e.fail("cannot apply " + op + " to " + typeName(l) + " and " + typeName(r) + e.nilNamed2(n, l, r))
		}
		if l.k == vInt && r.k == vInt {
			return intV(arith(op, l.i, r.i), l.lit && r.lit)
		}
		return floatV(arith(op, num(l), num(r)))
	case "/":
		if !isNum(l) || !isNum(r) {
			return e.fail("cannot apply / to " + typeName(l) + " and " + typeName(r) + e.nilNamed2(n, l, r))
		}
		return floatV(num(l) / num(r))
	case "%":
		if l.k != vInt || r.k != vInt {
			return e.fail("% wants two ints, not " + typeName(l) + " and " + typeName(r) + e.nilNamed2(n, l, r))
		}
		if r.i == 0 {
			return e.fail("% by zero")
		}
		if r.i == -1 {
			return intV(0, true)
		}
		return intV(l.i%r.i, true)
	case "in":
		return e.in(n, l, r)
	case "contains", "startsWith", "endsWith":
		if l.k == vNil || r.k == vNil {
			return theFalse
		}
		if l.k != vStr || r.k != vStr {
			return e.fail(op + " wants strings, not " + typeName(l) + " and " + typeName(r))
		}
		e.spend((len(l.s) + len(r.s)) >> 8)
		switch op {
		case "contains":
			return boolV(strings.Contains(l.s, r.s))
		case "startsWith":
			return boolV(strings.HasPrefix(l.s, r.s))
		}
		return boolV(strings.HasSuffix(l.s, r.s))
	}
	return e.fail("operator " + op + " is outside the subset")
}

// nilNamed is what an error adds when operand n is nil and names a field
// or member: most often a field misspelt, or one an event lacks. The
// plugin's error stops before it; the host's says which, and what to do.
func (e *evaluator) nilNamed(n *enode, v value) string {
	if v.k != vNil || n.name == "" {
		return ""
	}
	if n.t == eField {
		e.nilField = n.op
	}
	where := "the event lacks it"
	if n.ctx != "" || n.t == eChain && n.a.ctx != "" {
		where = "the run has none"
	}
	return " (" + n.name + " is nil: " + where + ", or it is null; give it a default: " + n.name + " ?? …)"
}

// nilNamed2 is nilNamed for a binary operator's operands, left first.
func (e *evaluator) nilNamed2(n *enode, l, r value) string {
	if s := e.nilNamed(n.a, l); s != "" {
		return s
	}
	return e.nilNamed(n.b, r)
}

func cmp3(less, more bool) int {
	switch {
	case less:
		return -1
	case more:
		return 1
	}
	return 0
}

func (e *evaluator) in(n *enode, l, r value) value {
	// expr-lang's optimizer turns `x in ["a", "b"]` into a lookup in a set
	// of strings: x must then be a string, and nil looks up "".
	if n.b.t == eArray && len(n.b.list) > 0 && allStrings(n.b) {
		if l.k != vStr && l.k != vNil {
			return e.fail("in [\"…\"] wants a string, not " + typeName(l))
		}
		for _, x := range r.arr {
			if x.s == l.s {
				return theTrue
			}
		}
		return theFalse
	}
	switch r.k {
	case vNil:
		return theFalse
	case vArr:
		for _, x := range r.arr {
			if e.equal(x, l) {
				return theTrue
			}
		}
		return theFalse
	case vVArr:
		m := e.count(r.path)
		for i := 0; i < m && e.err == nil; i++ {
			if e.equal(e.fromView(child(r.path, strconv.Itoa(i))), l) {
				return theTrue
			}
		}
		return theFalse
	case vVMap:
		if l.k == vNil {
			_, ok := e.find(child(r.path, "~2"))
			return boolV(ok)
		}
		if l.k != vStr {
			return e.fail("in an object wants a string (a member's name), not " + typeName(l))
		}
		_, ok := e.find(child(r.path, abi.PathKey(l.s)))
		return boolV(ok)
	}
	return e.fail("in wants an array or an object on its right, not " + typeName(r))
}

func allStrings(a *enode) bool {
	for _, x := range a.list {
		if x.t != eLit || x.val.k != vStr {
			return false
		}
	}
	return true
}

func (e *evaluator) call(name string, v value) value {
	if e.err != nil {
		return theNil
	}
	if name == "len" {
		switch v.k {
		case vStr:
			e.spend(len(v.s) >> 8)
			return intV(int64(utf8.RuneCountInString(v.s)), true)
		case vArr:
			return intV(int64(len(v.arr)), true)
		case vVArr, vVMap:
			return intV(int64(e.count(v.path)), true)
		}
		return e.fail("len() wants a string, an array or an object, not " + typeName(v))
	}
	if v.k != vStr {
		return e.fail(name + "() wants a string, not " + typeName(v))
	}
	e.spend(len(v.s) >> 8)
	switch name {
	case "lower":
		return strV(strings.ToLower(v.s))
	case "upper":
		return strV(strings.ToUpper(v.s))
	}
	return strV(strings.TrimSpace(v.s))
}

// element i of an array value (a literal's or the event's).
func (e *evaluator) element(v value, i int) value {
	if v.k == vArr {
		return v.arr[i]
	}
	return e.fromView(child(v.path, strconv.Itoa(i)))
}

func (e *evaluator) length(v value) int {
	if v.k == vArr {
		return len(v.arr)
	}
	return e.count(v.path)
}

// equal is expr-lang's runtime.Equal: numbers by value whatever their
// types, strings, bools, nil == nil, arrays element by element by these
// rules; objects by reflect.DeepEqual (so [1] and [1.0] differ in them).
func (e *evaluator) equal(a, b value) bool {
	if !e.spend(1) {
		return false
	}
	switch {
	case isNum(a) && isNum(b):
		if a.k == vInt && b.k == vInt {
			return a.i == b.i
		}
		return num(a) == num(b)
	case a.k == vStr && b.k == vStr:
		return a.s == b.s
	case a.k == vBool && b.k == vBool:
		return a.b == b.b
	case a.k == vNil && b.k == vNil:
		return true
	}
	if isArray(a) && isArray(b) {
		return e.arraysEqual(a, b, e.equal)
	}
	return e.deepEqual(a, b)
}

func isArray(v value) bool { return v.k == vArr || v.k == vVArr }

// arraysEqual compares two arrays element by element with eq.
func (e *evaluator) arraysEqual(a, b value, eq func(x, y value) bool) bool {
	n, m := e.length(a), e.length(b)
	if n != m {
		return false
	}
	for i := 0; i < n; i++ {
		if !eq(e.element(a, i), e.element(b, i)) {
			return false
		}
	}
	return true
}

// deepEqual is reflect.DeepEqual over what an event's objects hold: the
// same Go types (an int64 is not a float64) and the same contents.
func (e *evaluator) deepEqual(a, b value) bool {
	if !e.spend(1) {
		return false
	}
	if isArray(a) && isArray(b) {
		return e.arraysEqual(a, b, e.deepEqual)
	}
	if a.k != b.k {
		return false
	}
	switch a.k {
	case vNil:
		return true
	case vBool:
		return a.b == b.b
	case vInt:
		return a.lit == b.lit && a.i == b.i
	case vFloat:
		return a.f == b.f
	case vStr:
		return a.s == b.s
	case vVMap:
		if a.path == b.path {
			return true
		}
		if e.count(a.path) != e.count(b.path) {
			return false
		}
		same := true
		av := e.view(a.path)
		x, _ := av.Find(a.path)
		// Member by member, each charged, stopping at the first that
		// differs; a member's own members are skipped, not scanned.
		av.MembersWhile(x, func(key []byte, _ abi.Value) bool {
			if !same || e.err != nil || !e.spend(1) {
				return false
			}
			k := string(key)
			p := child(b.path, k)
			if _, ok := e.find(p); !ok {
				same = false
				return false
			}
			same = e.deepEqual(e.fromView(child(a.path, k)), e.fromView(p))
			return same
		})
		return same && e.err == nil
	}
	return false
}
