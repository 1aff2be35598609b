//go:build !wasip1

package plugins_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/exprcheck"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/sdk/go/tmpl"
)

// differ runs one expression over events through the expr plugin (the
// AssemblyScript guest) and through expr-lang natively, as the Go plugin it
// replaces ran it (expr.AsBool, expr.AllowUndefinedVariables, the event's
// fields decoded as the view decodes them), and says how they disagree, or
// "" when they agree: the same bool, or both an error. An expression
// expr-lang does not compile must be refused by exprcheck (so no rule
// carries it to the guest); one it compiles must pass exprcheck when it is
// of the subset, and configure in the guest.
type differ struct {
	m   *wasm.Module
	ctx context.Context
}

func (d *differ) check(t testing.TB, src string, events []string, ofSubset bool) string {
	return d.checkIn(t, src, events, "", ofSubset)
}

// checkIn is check with a run's context beside each event (its JSON; ""
// none): expr-lang reads the context's roots as fields of the event, the
// guest from the context — the same answers for events that have no field
// of those names.
func (d *differ) checkIn(t testing.TB, src string, events []string, context string, ofSubset bool) string {
	program, compileErr := expr.Compile(src, expr.AsBool(), expr.AllowUndefinedVariables())
	checkErr := exprcheck.Check(src)
	if compileErr != nil {
		if checkErr == nil {
			return fmt.Sprintf("exprcheck passes what expr-lang refuses (%v)", compileErr)
		}
		return ""
	}
	if checkErr != nil {
		if ofSubset {
			return fmt.Sprintf("exprcheck refuses an expression of the subset: %v", checkErr)
		}
		return ""
	}
	h, err := d.m.Configure(d.ctx, "expr", []byte(`{"expr":`+string(abi.AppendJSONString(nil, src))+`}`))
	if err != nil {
		return fmt.Sprintf("the guest refuses what expr-lang compiles and exprcheck passes: %v", err)
	}
	prog, err := exprcheck.Compile(src)
	if err != nil {
		return fmt.Sprintf("exprcheck.Compile refuses what Check passes: %v", err)
	}
	defer h.Close()
	var machine vm.VM
	for _, ev := range events {
		view, err := abi.ParseView(mustView(t, ev))
		if err != nil {
			t.Fatal(err)
		}
		env, _ := view.Decode("")
		cl := call(t, ev)
		if context != "" {
			cl.Context = mustView(t, context)
			cv, _ := abi.ParseView(cl.Context)
			roots, _ := cv.Decode("")
			for k, v := range roots.(map[string]any) {
				env.(map[string]any)[k] = v
			}
		}
		want, nativeErr := machine.Run(program, env)
		got, guestErr := h.When(d.ctx, cl)
		if guestErr != nil {
			var ce *wasm.CallError
			if !errors.As(guestErr, &ce) || ce.Cause == wasm.CauseTrap {
				return fmt.Sprintf("over %s: the guest failed, not with an error: %v", ev, guestErr)
			}
		}
		if msg := sameAsGuest(t, prog, cl, got, guestErr); msg != "" {
			return fmt.Sprintf("over %s: %s", ev, msg)
		}
		switch {
		case envContext.MatchString(src):
			// $env.states… walks down from the event's own states field,
			// which expr-lang, given the context as fields, finds: the
			// guest and the host are held to each other only (above).
		case nativeErr != nil && guestErr != nil:
		case nativeErr != nil:
			return fmt.Sprintf("over %s: expr-lang fails (%v), the guest answers %v", ev, nativeErr, got)
		case guestErr != nil:
			return fmt.Sprintf("over %s: expr-lang answers %v, the guest fails (%v)", ev, want, guestErr)
		case want != got:
			return fmt.Sprintf("over %s: expr-lang answers %v, the guest %v", ev, want, got)
		}
	}
	return ""
}

// sameAsGuest runs prog (the host's own evaluation of a string when:)
// over the call the guest answered, and says how the two disagree: the
// same bool, or the same error, word for word (the host may add which
// field was nil, in parentheses).
func sameAsGuest(t testing.TB, prog *exprcheck.Program, cl *wasm.Call, guest bool, guestErr error) string {
	view, err := abi.ParseView(cl.View)
	if err != nil {
		t.Fatal(err)
	}
	var cx abi.View
	if cl.Context != nil {
		if cx, err = abi.ParseView(cl.Context); err != nil {
			t.Fatal(err)
		}
	}
	got, err := prog.Eval(view, cx)
	var ce *wasm.CallError
	switch {
	case guestErr == nil && err == nil:
		if got != guest {
			return fmt.Sprintf("the guest answers %v, the host %v", guest, got)
		}
	case guestErr == nil:
		return fmt.Sprintf("the guest answers %v, the host fails (%v)", guest, err)
	case err == nil:
		return fmt.Sprintf("the guest fails (%v), the host answers %v", guestErr, got)
	case errors.As(guestErr, &ce) && !strings.HasPrefix(err.Error(), ce.Text):
		return fmt.Sprintf("the guest fails with %q, the host with %q", ce.Text, err.Error())
	}
	return ""
}

// newDiffer loads the expr plugin once per process: the fuzz target calls
// it for every input. The runtime lives as long as the test binary.
func newDiffer(t testing.TB) *differ {
	theDiffer.once.Do(func() {
		ctx := context.Background()
		rt, err := wasm.NewRuntime(ctx, wasm.Config{CacheDir: plugintest.CacheDir()})
		if err != nil {
			theDiffer.err = err
			return
		}
		theDiffer.d.m, theDiffer.err = rt.LoadFile(ctx, plugintest.FirstParty(t, "expr"), wasm.Options{Name: "expr"})
		theDiffer.d.ctx = ctx
	})
	if theDiffer.err != nil {
		t.Fatal(theDiffer.err)
	}
	return &theDiffer.d
}

var theDiffer struct {
	once sync.Once
	d    differ
	err  error
}

// The expressions the examples, the docs and the tests use, and the corners
// of expr-lang's semantics the guest keeps.
var exprCases = []string{
	`battery < 20 && !charging`, `speed > 25`, `battery < 20`, `vehicle startsWith "s-" && "city" in tags`,
	`pos.lat > 50 && pos.lon < 14`, `$env.type == "telemetry"`, `missing == nil`, `len(tags) == 2`,
	`battery + "x" == 1`, `battery`, `1 < 2 < 3`, `battery > 10 ? charging : !charging`,
	`(missing ?? 5) > 3`, `missing?.x == nil`, `missing.x == nil`, `pos?.lat > 1`, `tags[0] == "city"`,
	`tags[-1] == "rental"`, `tags[5] == nil`, `pos["lat"] == 52.5`, `battery in [12.5, 13]`,
	`vehicle in ["s-17", "s-18"]`, `battery in ["a", "b"]`, `missing in ["", "x"]`, `"lat" in pos`,
	`"x" in vehicle`, `tags == ["city", "rental"]`, `[1, 2] == [1, 2]`, `pos == pos`, `vehicle contains "-1"`,
	`missing contains "x"`, `battery contains "1"`, `lower(vehicle) == "s-17"`, `upper(vehicle) == "S-17"`,
	`trim(" x ") == "x"`, `len(vehicle) == 4`, `len(battery) == 1`, `10 % 3 == 1`, `battery % 2 == 0`,
	`7 / 2 == 3.5`, `-battery < 0`, `+vehicle == "s-17"`, `!battery`, `not charging`, `charging or battery < 20`,
	`vehicle not in ["a"]`, `vehicle not startsWith "x"`, `"é" < "f"`, `vehicle[0] == 115`, `true || 1 + "a"`,
	`1 + 1`, `type == "telemetry"`, `battery matches "1"`, `filter(tags, # == "a") == []`, `{a: 1}.a == 1`,
	`tags[1:] == []`, `let x = 1; x == 1`, `battery > 0 ?: false`, `a?.[0] == nil`,
	// Arrays compare element by element, objects as reflect.DeepEqual does.
	`arr == [1, 2]`, `arr == f`, `m == m2`, `n == [[1]]`, `n == [[1.0]]`, `[1, 2] == [1.0, 2.0]`,
	`arr == [1, "a"]`, `arr != [2, 1]`, `m == m`, `m.a == [1]`, `m2.a == m.a`,
	// Comments, Go's simple case mapping, a long contains.
	"// a comment\narr == arr", `/* c */ true`, `upper("straße") == "STRASSE"`, `upper("straße") == "STRAßE"`,
	`lower("İ") == "i"`, `lower("ΟΔΟΣ") == "οδοσ"`, `upper("ﬁ") == "ﬁ"`, `long contains sub`,
}

func TestExprDifferential(t *testing.T) {
	d := newDiffer(t)
	events := []string{ev, `{"battery":"low","tags":[1,2],"pos":null,"charging":1}`, `{}`,
		`{"vehicle":"S-17 ","tags":[],"pos":{"lat":1,"":2},"battery":-3,"missing":"x"}`,
		`{"arr":[1,2],"f":[1.0,2.0],"m":{"a":[1]},"m2":{"a":[1.0]},"n":[[1]]}`,
		`{"long":"` + strings.Repeat("a", 20000) + `","sub":"` + strings.Repeat("a", 10000) + `b"}`}
	// Chains longer than the nesting bound: the guest walks them in a loop.
	long := []string{
		strings.Repeat("battery == 1 || ", 300) + "battery == 12.5",
		strings.Repeat("battery > 0 && ", 300) + "!charging",
		strings.Repeat("missing || ", 100) + "true",
		strings.Repeat("battery || ", 100) + "false",
		"true && " + strings.Repeat("charging || ", 100) + "charging",
		strings.Repeat("1 < ", 100) + "2",
	}
	for _, src := range append(exprCases, long...) {
		if msg := d.check(t, src, events, false); msg != "" {
			t.Errorf("%.80s: %s", src, msg)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		src := genBool(r, 3)
		if i%25 == 0 {
			src = genChain(r)
		}
		evs := []string{genEvent(r), genEvent(r), genEvent(r)}
		if msg := d.check(t, src, evs, true); msg != "" {
			t.Fatalf("case %d: %s: %s", i, src, msg)
		}
	}
}

// TestExprDifferentialContext: expressions reading the run's context —
// states the rule reads, the trigger's previous state, step outputs,
// variables — answer as expr-lang answers over an event that holds them
// as its own fields. Each chain read names a member the context has: a
// chain it lacks is nil in the guest, never an error (abi/ABI.md §4.1),
// where expr-lang fails to fetch from nil — a difference on purpose,
// checked by TestExprContext, not here.
func TestExprDifferentialContext(t *testing.T) {
	d := newDiffer(t)
	contextFields = []string{"states.door", "states.lux", "previous", "steps.ask", "vars.v"}
	defer func() { contextFields = nil }()
	cases := []string{`states.door.a && previous.lat > 1`, `states.door.b == nil`, `states.lux.x in [1, 2]`,
		`states.door.a + previous.lon > 3`, `"a" in states.door.x`, `previous.a / 2 > 1`, `len(states.lux.lat) > 0`,
		`steps.ask.b == vars.v.b`, `states.door.a ?? previous.a`}
	obj := func(r *rand.Rand) map[string]any {
		m := map[string]any{}
		for _, k := range memberNames {
			m[k] = genValue(r, 1)
		}
		return m
	}
	r := rand.New(rand.NewPCG(5, 6))
	n := 1500
	if testing.Short() {
		n = 300
	}
	for i := range n {
		ctx := string(tmpl.AppendJSON(nil, map[string]any{
			"states":   map[string]any{"door": obj(r), "lux": obj(r)},
			"previous": obj(r), "steps": map[string]any{"ask": obj(r)}, "vars": map[string]any{"v": obj(r)}}))
		evs := []string{genEvent(r), genEvent(r)}
		src := genBool(r, 3)
		if i < len(cases) {
			src = cases[i]
		}
		if msg := d.checkIn(t, src, evs, ctx, i >= len(cases)); msg != "" {
			t.Fatalf("case %d: %s: over context %s: %s", i, src, ctx, msg)
		}
	}
}

// envContext matches an expression reading a context root through $env.
var envContext = regexp.MustCompile(`\$env\.(steps|vars|states|previous|sun)\.`)

// contextFields, when set, are roots genField may also pick, with one of
// memberNames below: the run's context's (TestExprDifferentialContext).
var contextFields []string

// FuzzExprDifferential explores the same generator from fuzzed seeds.
func FuzzExprDifferential(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		d := newDiffer(t)
		r := rand.New(rand.NewPCG(a, b))
		src := genBool(r, 3)
		if msg := d.check(t, src, []string{genEvent(r), genEvent(r)}, true); msg != "" {
			t.Fatalf("%s: %s", src, msg)
		}
	})
}

var fieldNames = []string{"battery", "speed", "vehicle", "charging", "tags", "pos", "n", "s", "missing", "x", "v", "w"}

// tiny is the domain of the fields v and w and of some array literals, so
// that arrays are often equal, or equal but for a number's type.
var tiny = []string{"0", "1", "1.0", `"a"`}

func tinyArray(r *rand.Rand) string {
	parts := make([]string, r.IntN(3))
	for i := range parts {
		parts[i] = tiny[r.IntN(len(tiny))]
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

var memberNames = []string{"lat", "lon", "a", "b", "x"}
var strPool = []string{"", "a", "b", "s-17", "city", "é", "A", " x ", "lat", "-1", "1", "日本", "Ab"}

func genEvent(r *rand.Rand) string {
	m := map[string]any{}
	for _, f := range fieldNames {
		if r.IntN(3) == 0 || f == "v" || f == "w" {
			continue
		}
		m[f] = genValue(r, 2)
	}
	js := string(tmpl.AppendJSON(nil, m))
	// v and w are written as JSON text, so that 1.0 stays a float.
	sep := ","
	if len(m) == 0 {
		sep = ""
	}
	return js[:len(js)-1] + sep + `"v":` + tinyArray(r) + `,"w":{"a":` + tinyArray(r) + `}}`
}

// exprValues are the differential test's event values: small domains, so
// that comparisons are often true.
var exprValues = jsonGen{
	ints:   func(r *rand.Rand) int64 { return int64(r.IntN(41) - 20) },
	floats: func(r *rand.Rand) float64 { return float64(r.IntN(81)-40) / 4 },
	strs:   func(r *rand.Rand) string { return strPool[r.IntN(len(strPool))] },
	small:  func(r *rand.Rand) int64 { return int64(r.IntN(3)) },
	keys:   memberNames, arrayMax: 4, membersMin: 0, membersSpan: 3,
}

func genValue(r *rand.Rand, depth int) any { return exprValues.value(r, depth) }

func genLiteral(r *rand.Rand) string {
	switch r.IntN(8) {
	case 0:
		return "nil"
	case 1:
		return []string{"true", "false"}[r.IntN(2)]
	case 2, 3:
		return strconv.Itoa(r.IntN(21) - 5)
	case 4:
		return strconv.FormatFloat(float64(r.IntN(41)-10)/4, 'f', -1, 64) + []string{"", ".0"}[r.IntN(2)*boolInt(r.IntN(41)%4 == 0)]
	}
	s := strPool[r.IntN(len(strPool))]
	switch r.IntN(3) {
	case 0:
		return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
	case 1:
		if !strings.Contains(s, "`") {
			return "`" + s + "`"
		}
	}
	return strconv.Quote(s)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func genField(r *rand.Rand) string {
	f := fieldNames[r.IntN(len(fieldNames))]
	if len(contextFields) > 0 && r.IntN(2) == 0 {
		f := contextFields[r.IntN(len(contextFields))] + "." + memberNames[r.IntN(len(memberNames))]
		if r.IntN(4) == 0 { // walked down from the event's own field of the root's name
			f = "$env." + f
		}
		return f
	}
	if r.IntN(8) == 0 {
		f = "$env." + f
	}
	for range r.IntN(3) {
		switch r.IntN(5) {
		case 0:
			f += "." + memberNames[r.IntN(len(memberNames))]
		case 1:
			f += "?." + memberNames[r.IntN(len(memberNames))]
		case 2:
			f += "[" + strconv.Itoa(r.IntN(5)-2) + "]"
		case 3:
			f += `["` + memberNames[r.IntN(len(memberNames))] + `"]`
		}
	}
	return f
}

func genArray(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return tinyArray(r)
	}
	n := r.IntN(4)
	parts := make([]string, n)
	allStr := r.IntN(2) == 0
	for i := range parts {
		if allStr {
			parts[i] = strconv.Quote(strPool[r.IntN(len(strPool))])
		} else {
			parts[i] = genLiteral(r)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func genValueExpr(r *rand.Rand, depth int) string {
	if depth <= 0 {
		switch r.IntN(5) {
		case 0, 1:
			return genLiteral(r)
		case 2:
			return genArray(r)
		}
		return genField(r)
	}
	switch r.IntN(10) {
	case 0, 1:
		return genField(r)
	case 2:
		return genLiteral(r)
	case 3, 4:
		op := []string{"+", "-", "*", "/", "%", "+"}[r.IntN(6)]
		return "(" + genValueExpr(r, depth-1) + " " + op + " " + genValueExpr(r, depth-1) + ")"
	case 5:
		return []string{"-", "+"}[r.IntN(2)] + genValueExpr(r, depth-1)
	case 6:
		return []string{"len", "lower", "upper", "trim"}[r.IntN(4)] + "(" + genValueExpr(r, depth-1) + ")"
	case 7:
		return "(" + genValueExpr(r, depth-1) + " ?? " + genValueExpr(r, depth-1) + ")"
	case 8:
		return "(" + genBool(r, depth-1) + " ? " + genValueExpr(r, depth-1) + " : " + genValueExpr(r, depth-1) + ")"
	}
	return genArray(r)
}

// genChain is a chain of one of && and || longer than the nesting bound,
// of random comparisons and fields.
func genChain(r *rand.Rand) string {
	op := []string{" && ", " || ", " and ", " or "}[r.IntN(4)]
	parts := make([]string, 65+r.IntN(100))
	for i := range parts {
		parts[i] = genBool(r, 0)
		if strings.ContainsAny(parts[i], "&|") || strings.Contains(parts[i], " and ") || strings.Contains(parts[i], " or ") {
			parts[i] = "(" + parts[i] + ")"
		}
	}
	return strings.Join(parts, op)
}

func genBool(r *rand.Rand, depth int) string {
	if depth <= 0 {
		switch r.IntN(4) {
		case 0:
			return genField(r)
		case 1:
			return []string{"true", "false"}[r.IntN(2)]
		}
		return genValueExpr(r, 0) + " " + []string{"==", "!=", "<", ">="}[r.IntN(4)] + " " + genValueExpr(r, 0)
	}
	switch r.IntN(9) {
	case 0, 1:
		op := []string{"==", "!=", "<", "<=", ">", ">="}[r.IntN(6)]
		return genValueExpr(r, depth-1) + " " + op + " " + genValueExpr(r, depth-1)
	case 2:
		op := []string{"&&", "||", "and", "or"}[r.IntN(4)]
		return "(" + genBool(r, depth-1) + ") " + op + " (" + genBool(r, depth-1) + ")"
	case 3:
		return []string{"!", "not "}[r.IntN(2)] + "(" + genBool(r, depth-1) + ")"
	case 4:
		not := []string{"", "not "}[r.IntN(2)]
		return genValueExpr(r, depth-1) + " " + not + "in " + []string{genArray(r), genField(r)}[r.IntN(2)]
	case 5:
		not := []string{"", "not "}[r.IntN(2)]
		op := []string{"contains", "startsWith", "endsWith"}[r.IntN(3)]
		return genValueExpr(r, depth-1) + " " + not + op + " " + genValueExpr(r, depth-1)
	case 6:
		return "(" + genBool(r, depth-1) + " ? " + genBool(r, depth-1) + " : " + genBool(r, depth-1) + ")"
	case 7:
		return genValueExpr(r, depth-1) + " < " + genValueExpr(r, depth-1) + " < " + genValueExpr(r, depth-1)
	}
	return genField(r)
}
