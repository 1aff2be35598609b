package exprcheck_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/exprcheck"
)

func view(t testing.TB, js string) abi.View {
	t.Helper()
	if js == "" {
		return abi.View{}
	}
	b, err := abi.AppendJSONView(nil, []byte(js), false)
	if err != nil {
		t.Fatal(err)
	}
	v, err := abi.ParseView(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestEval holds the host's evaluation to the answers and errors the
// expr plugin gives (plugins/expr_test.go compares the two at random; these
// are the cases a reader checks by eye).
func TestEval(t *testing.T) {
	const event = `{"battery":12.5,"charging":false,"vehicle":"s-17","tags":["city","rental"],` +
		`"pos":{"lat":52.5,"lon":13.4},"n":3,"steps":{"ask":{"spoof":true}},"m":{"a":[1]},"m2":{"a":[1.0]}}`
	const context = `{"steps":{"ask":{"free":true,"slots":["b7"]}},"vars":{"limit":20},"states":{"door":{"open":true}}}`
	for _, c := range []struct {
		src  string
		want bool
		err  string
	}{
		{src: `battery < 20 && !charging`, want: true},
		{src: `vehicle startsWith "s-" && "city" in tags`, want: true},
		{src: `pos.lat > 50 && pos?.none?.x == nil`, want: true},
		{src: `tags[-1] == "rental" && vehicle[0] == 115`, want: true},
		{src: `n % 2 == 1 && 7 / 2 == 3.5`, want: true},
		{src: `(missing ?? 5) > 3 && missing == nil`, want: true},
		{src: `vehicle in ["s-17", "s-18"] && "lat" in pos`, want: true},
		{src: `len(tags) == 2 && upper(vehicle) == "S-17" && trim(" x ") == "x"`, want: true},
		{src: `m == m2`, want: false}, // objects as reflect.DeepEqual: an int is not a float
		{src: `[1, 2] == [1.0, 2.0]`, want: true},
		{src: `missing`, want: false}, // nil is false
		{src: `true || battery + "x" == 1`, want: true},
		// The run's context, never the event, below steps., vars., states.
		{src: `steps.ask.free && steps.ask.spoof == nil && steps.ask.slots[0] == "b7"`, want: true},
		{src: `vars.limit == 20 && states.door.open && states.window?.open == nil`, want: true},
		{src: `battery > "a"`, err: "cannot compare a float > a string"},
		{src: `missing.x == 1`, err: "cannot read .x of nil (a?.b reads nil as nil) (missing is nil: the event lacks it, or it is null; give it a default: missing ?? …)"},
		{src: `levle < 30`, err: "cannot compare nil < an int (levle is nil: the event lacks it, or it is null; give it a default: levle ?? …)"},
		{src: `pos.alt + 1 > 2`, err: "cannot apply + to nil and an int (pos.alt is nil: the event lacks it, or it is null; give it a default: pos.alt ?? …)"},
		{src: `30 > tags[1] && states.lux.v > 1`, err: "cannot compare an int > a string"},
		{src: `states.lux.v > 1`, err: "cannot compare nil > an int (states.lux.v is nil: the run has none, or it is null; give it a default: states.lux.v ?? …)"},
		{src: `tags[5] == nil`, err: "index out of range: 5 (array length is 2)"},
		{src: `battery`, err: "the condition is a float, not a bool"},
		{src: `n % 0 == 1`, err: "% by zero"},
		{src: `battery || charging`, err: "|| wants bools, not a float"},
	} {
		p, err := exprcheck.Compile(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		got, err := p.Eval(view(t, event), view(t, context))
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%s: err %v; want %q", c.src, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s = %v, %v; want %v", c.src, got, err, c.want)
		}
	}
}

// TestEvalDeepObjects: == on objects compares member by member, each
// member's own members skipped rather than scanned, stopping at the first
// that differs (a review found a 240 KB event whose x == y, repeated in
// one expression, took 110 s: every level rescanned the subtree below
// it, uncharged).
func TestEvalDeepObjects(t *testing.T) {
	arr := strings.TrimSuffix(strings.Repeat("0,", 20000), ",")
	x, y := `{"m":0,"z":[`+arr+`]}`, `{"n":0,"o":0}`
	for range 60 {
		x, y = `{"a":`+x+`}`, `{"a":`+y+`}`
	}
	ev := view(t, `{"x":`+x+`,"y":`+y+`,"x2":`+x+`}`)
	for _, c := range []struct {
		src  string
		want bool
	}{
		{strings.Repeat("x==y||", 600) + "x==y", false},
		{"x == x2 && x != y", true},
	} {
		p, err := exprcheck.Compile(c.src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Eval(ev, abi.View{})
		if err != nil && !errors.Is(err, exprcheck.ErrWork) || err == nil && got != c.want {
			t.Errorf("%.40s… = %v, %v; want %v (or ErrWork)", c.src, got, err, c.want)
		}
	}
}

// TestEvalEnvContextRoot: $env.steps.ask walks down from the event's own
// steps field, as the plugin does — only a chain rooted at steps (not at
// $env) is read from the run's context whole.
func TestEvalEnvContextRoot(t *testing.T) {
	cx := view(t, `{"steps":{"ask":{"free":true}},"sun":{"up":true}}`)
	for _, c := range []struct {
		src, event string
		want       bool
		err        string
	}{
		{src: `steps.ask.free`, event: `{}`, want: true},
		{src: `$env.steps.ask.free == true`, event: `{}`, err: "cannot read .ask of nil"},
		{src: `$env.steps.ask.free == true`, event: `{"steps":"x"}`, err: "cannot read .ask of a string"},
		{src: `$env.sun?.up`, event: `{}`, want: false},
		{src: `$env.steps.ask.free == true`, event: `{"steps":{}}`, want: true}, // below an event's steps object, the context's
	} {
		p, err := exprcheck.Compile(c.src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Eval(view(t, c.event), cx)
		switch {
		case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)):
			t.Errorf("%s over %s: %v, %v; want the error %q", c.src, c.event, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s over %s = %v, %v; want %v", c.src, c.event, got, err, c.want)
		}
	}
}

// TestEvalWork: an expression that compares two large arrays over and over
// stops at MaxWork with ErrWork, where the plugin had its fuel.
func TestEvalWork(t *testing.T) {
	big := "[" + strings.Repeat("1,", 20000) + "1]"
	ev := view(t, `{"a":`+big+`,"b":`+big+`}`)
	p, err := exprcheck.Compile(strings.Repeat("a == b && ", 300) + "true")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Eval(ev, abi.View{}); !errors.Is(err, exprcheck.ErrWork) {
		t.Fatalf("err = %v; want ErrWork", err)
	}
	p, _ = exprcheck.Compile("a == b")
	if ok, err := p.Eval(ev, abi.View{}); err != nil || !ok {
		t.Fatalf("a == b = %v, %v; want true", ok, err)
	}
}

// FuzzEval: no expression Check passes, over any event, panics or runs
// unbounded.
func FuzzEval(f *testing.F) {
	f.Add(`battery < 20 && !charging`, `{"battery":12,"charging":false}`)
	f.Add(`a?.b.c[0] in ["x"] || len(a) > 1`, `{"a":{"b":{"c":["x"]}}}`)
	f.Add(`steps.x.y == vars.z ?? 1`, `{"steps":1}`)
	f.Fuzz(func(t *testing.T, src, event string) {
		p, err := exprcheck.Compile(src)
		if err != nil {
			return
		}
		b, err := abi.AppendJSONView(nil, []byte(event), false)
		if err != nil {
			return
		}
		v, _ := abi.ParseView(b)
		p.Eval(v, v)
	})
}

func ExampleProgram_Eval() {
	p, err := exprcheck.Compile(`battery < 20 && !charging`)
	if err != nil {
		panic(err)
	}
	b, _ := abi.AppendJSONView(nil, []byte(`{"battery":12.5,"charging":false}`), false)
	ev, _ := abi.ParseView(b)
	fmt.Println(p.Eval(ev, abi.View{}))
	// Output: true <nil>
}

// TestCompileShares: one expression compiled twice is one Program while
// it is held, and its entry goes when nothing holds it.
func TestCompileShares(t *testing.T) {
	a, err := exprcheck.Compile(`shared < 20 && !charging`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := exprcheck.Compile(`shared < 20 && !charging`)
	c, _ := exprcheck.Compile(`shared < 21 && !charging`)
	if a != b || a == c {
		t.Fatalf("programs %p %p %p: want the first two one, the third its own", a, b, c)
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(c)
}
