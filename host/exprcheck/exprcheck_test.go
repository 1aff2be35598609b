package exprcheck_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/expr-lang/expr"

	"github.com/ruled-dev/ruled/host/exprcheck"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		src  string
		want string // "" passes; else the error's text contains it
	}{
		{`battery < 20 && !charging`, ""},
		{`vehicle startsWith "s-" && "city" in tags`, ""},
		{`pos?.lat > 1 || tags[-1] == "x" || pos["lat"] == 2`, ""},
		{`$env.type == "telemetry"`, ""},
		{`(missing ?? 5) > 3 ? true : len(tags) == 2`, ""},
		{`lower(vehicle) == "s" && trim(upper(vehicle)) != ""`, ""},
		{`vehicle not in ["a", "b"] and not charging`, ""},
		{`1 < speed < 30`, ""},
		{`battery <`, "1:10: unexpected token EOF"},
		{`1 + 1`, "the condition is an int, not a bool"},
		{`true || 1 + "a"`, "cannot apply + to an int and a string"},
		{`"a" in [1, 2]`, "cannot look for a string in an array whose elements are each an int"},
		{`battery matches "1"`, "1:9: the operator matches is outside the subset"},
		{`type == "x"`, "type is a function of expr-lang"},
		{`filter(tags, # == "a") == []`, "filter() is outside the subset"},
		{`abs(battery) > 1`, "abs() is outside the subset"},
		{`{a: 1}.a == 1`, "map literals"},
		{`tags[1:] == []`, "slices"},
		{`tags[n] == 1`, "an index other than"},
		{`let x = 1; x == 1`, "let is outside the subset"},
		{`battery > 0 ?: false`, "?: shorthand"},
		{`a?.[0] == nil`, "?.["},
		{`x in [y, 1]`, "only literals"},
		{`battery ** 2 > 1`, "the operator ** is outside"},
		{"battery > 1 &&\n  speed ..", "2:"},
		{strings.Repeat("(", 60) + "a" + strings.Repeat(")", 60) + " > 1", ""},
		{strings.Repeat("(", 70) + "a" + strings.Repeat(")", 70) + " > 1", "nests deeper than 64"},
		{strings.Repeat("!", 70) + "a", "nests deeper than 64"},
		{"x > 99999999999999999999", "does not fit"},
		{"1 + \"a\" == 2", "cannot apply + to an int and a string"},
		{strings.Repeat("a + ", 70) + "a > 1", "nests 72 deep"},
		{strings.Repeat("x == 1 || ", 300) + "x == 2", ""},
		{strings.Repeat("x > 1 && ", 200) + "(a || " + strings.Repeat("b || ", 100) + "c)", ""},
		{"a == \"" + strings.Repeat("x", 5000) + "\"", "at most 4096"},
	}
	for _, tc := range tests {
		err := exprcheck.Check(tc.src)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%q) = %v; want it to pass", tc.src, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%q) = %v; want %q", tc.src, err, tc.want)
		}
		var xe *exprcheck.Error
		if err != nil && !errors.As(err, &xe) {
			t.Errorf("Check(%q) = %T; want an *Error", tc.src, err)
		}
	}
}

func ExampleCheck() {
	err := exprcheck.Check(`battery < 20 && vehicle matches "^s-"`)
	var xe *exprcheck.Error
	if errors.As(err, &xe) {
		fmt.Printf("%d:%d %s\n", xe.Line, xe.Col, xe.Msg)
	}
	// Output: 1:25 the operator matches is outside the subset
}

// FuzzCheck: whatever the text, Check answers, a refusal has a position
// inside the expression, and what it passes expr-lang compiles (the subset
// is inside the language; plugins/expr_test.go checks the other way for
// expressions of the subset, and the answers).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`battery < 20`, `a?.b[0] in ["x"]`, `"\u00e9" + x`, "a &&\n b", `[[1], nil]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		err := exprcheck.Check(src)
		var xe *exprcheck.Error
		if err != nil && (!errors.As(err, &xe) || xe.Line < 1 || xe.Col < 1 || xe.Line > strings.Count(src, "\n")+1) {
			t.Fatalf("Check(%q) = %v", src, err)
		}
		if err == nil {
			if _, cerr := expr.Compile(src, expr.AsBool(), expr.AllowUndefinedVariables()); cerr != nil {
				t.Fatalf("Check(%q) passes what expr-lang refuses: %v", src, cerr)
			}
		}
	})
}

func TestRefs(t *testing.T) {
	refs, err := exprcheck.Refs("steps.ask.free && pos.lat > 1 ||\n  vars.limit > battery && steps?.book.id == nil && a[0].b == 1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range refs {
		got = append(got, fmt.Sprintf("%s.%s@%d:%d", r.Root, r.Member, r.Line, r.Col))
	}
	if s := strings.Join(got, " "); s != "steps.ask@1:1 pos.lat@1:19 vars.limit@2:3 steps.book@2:27" {
		t.Errorf("refs %s", s)
	}
	if _, err := exprcheck.Refs("a +"); err == nil {
		t.Error("a bad expression gave refs")
	}
}

func TestPaths(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"battery < 20 && !charging", "battery charging"},
		{"steps.ask.free && pos.lat > 1 || battery > pos.lat", "steps.ask.free pos.lat battery"},
		{"a[0].b == 1 && len(name) > 2 && c?.d == nil", "a name c.d"},
		{`$env.x == 1 && m["k"] == 2`, "m"},
		{"1 + 2 > 2", ""},
	} {
		got, err := exprcheck.Paths(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("%s: paths %q, want %q", tc.src, s, tc.want)
		}
	}
	if _, err := exprcheck.Paths("a +"); err == nil {
		t.Error("a bad expression gave paths")
	}
}

// TestMaybeNil: the chains of the given roots an ordering comparison or
// arithmetic takes, where nil fails the condition; not those compared
// with == or !=, defaulted with ??, of other roots, or bare.
func TestMaybeNil(t *testing.T) {
	for _, c := range []struct {
		src  string
		want string // path@line:col, comma-separated
	}{
		{`previous.watts > 100 && watts < 5`, "previous.watts@1:1"},
		{`(previous.watts ?? 0) > 100`, ""},
		{`states.door.open == false || states.door.open != true`, ""},
		{`states.lux.value < 50 && 3 * sun.elevation >= 2`, "states.lux.value@1:1,sun.elevation@1:30"},
		{`-previous.x < 0`, "previous.x@1:2"},
		{"battery < 20 &&\n  steps.ask.n > previous.n", "previous.n@2:17"},
		{`previous > 1`, ""},
	} {
		got, err := exprcheck.MaybeNil(c.src, "states", "previous", "sun")
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		var parts []string
		for _, o := range got {
			parts = append(parts, fmt.Sprintf("%s@%d:%d", o.Path, o.Line, o.Col))
		}
		if s := strings.Join(parts, ","); s != c.want {
			t.Errorf("%s: %s; want %s", c.src, s, c.want)
		}
	}
}

// TestAssignHint: a lone = (a comparison written as in SQL) says to write ==.
// TestHints: a mistake from another language gets a hint to mend it, not
// the subset's whole list.
func TestHints(t *testing.T) {
	for _, tc := range []struct{ src, msg, hint string }{
		{`level = 20`, "", "=="},
		{`lenn(tags) > 2`, "calling a function other than len", "did you mean len?"},
		{`uper(name) == "A"`, "calling a function other than", "did you mean upper?"},
		{`size(tags) > 2`, "calling a function other than", "did you mean len?"},
		{`toLower(name) == "a"`, "calling a function other than", "did you mean lower?"},
		{`contains(name, "x")`, "1:1: contains is an operator, not a function", `name contains "x"`},
		{`!startsWith(name, "x")`, "1:2: startsWith is an operator", `name startsWith "x"`},
		{`in(level, [1, 2])`, "in is an operator, not a function", "level in [1, 2]"},
		{`matches(name, "^a")`, "matches is outside the subset", "contains, startsWith and endsWith are in it"},
		{`name matches "^a"`, "the operator matches is outside the subset", "a regular expression is outside the subset"},
	} {
		var e *exprcheck.Error
		if err := exprcheck.Check(tc.src); !errors.As(err, &e) {
			t.Errorf("Check(%s) = %v; want an *Error", tc.src, err)
			continue
		}
		if !strings.Contains(e.Error(), tc.msg) || !strings.Contains(e.Hint, tc.hint) {
			t.Errorf("Check(%s) = %v, hint %q; want %q, hint %q", tc.src, e, e.Hint, tc.msg, tc.hint)
		}
	}
}
