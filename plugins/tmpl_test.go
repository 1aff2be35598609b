//go:build !wasip1

package plugins_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/sdk/go/tmpl"
)

type firer struct{ got []string }

func (f *firer) Fire(_ context.Context, _ wasm.Origin, rule string, payload []byte) (string, error) {
	if rule == "nope" {
		return "", wasm.ErrNotFound
	}
	f.got = append(f.got, rule+" "+string(payload))
	return "run-" + strconv.Itoa(len(f.got)), nil
}

func TestFire(t *testing.T) {
	f := &firer{}
	m, _, _ := loadWith(t, "fire", wasm.Services{Firer: f}, abi.CapFire)
	ctx := context.Background()
	h, err := m.Configure(ctx, "fire", []byte(`{"rule":"notify","payload":{"vehicle":"{{vehicle}}","n":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Act(ctx, call(t, ev)); err != nil || string(out) != `{"run":"run-1"}` {
		t.Fatalf("Act = %q, %v", out, err)
	}
	plain, _ := m.Configure(ctx, "fire", []byte(`{"rule":"copy"}`))
	if _, err := plain.Act(ctx, call(t, ev)); err != nil {
		t.Fatal(err)
	}
	want := `notify {"n":1,"vehicle":"s-17"}` + "\n" + "copy " + ev
	if got := strings.Join(f.got, "\n"); got != want {
		t.Errorf("fired\n%s\nwant\n%s", got, want)
	}
	unknown, _ := m.Configure(ctx, "fire", []byte(`{"rule":"nope"}`))
	if _, err := unknown.Act(ctx, call(t, ev)); err == nil || !strings.Contains(err.Error(), "fire nope: fire: not found") {
		t.Errorf("firing an unknown rule: %v", err)
	}
	for _, bad := range []string{`{}`, `{"rule":3}`, `{"rule":"r","payload":"x"}`, `{"rule":"r","payload":{"a":"{{b"}}`} {
		if _, err := m.Configure(ctx, "fire", []byte(bad)); err == nil {
			t.Errorf("Configure(%s) accepted", bad)
		}
	}
}

// The AssemblyScript SDK's templates (sdk/assemblyscript/assembly/tmpl.ts),
// through the publish and log modules, render byte for byte what the Go
// SDK's templates (sdk/go/tmpl) render, over random events and
// templates: the rules for types, escapes, key order and number formats are
// one set whichever SDK a plugin uses.
func TestTemplatesMatchGo(t *testing.T) { matchGo(t, false) }

// TestTemplatesSeeContext: the same with a run's context (step outputs
// under steps., variables under vars.) beside the event, the event
// sometimes having a steps field of its own: both SDKs find a path in the
// same place (abi.CallInput.Find) and render it the same.
func TestTemplatesSeeContext(t *testing.T) { matchGo(t, true) }

func matchGo(t *testing.T, withContext bool) {
	pub, b, _ := load(t, "publish", abi.CapPublish)
	logm, _, _ := load(t, "log")
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	n := 400
	if testing.Short() {
		n = 50
	}
	for i := range n {
		event := randObject(r, 3)
		var context map[string]any
		if withContext {
			context = map[string]any{"steps": map[string]any{"ask": randObject(r, 2), "b": randValue(r, 2)}}
			if r.IntN(2) == 0 {
				context["vars"] = randObject(r, 1)
			}
			if r.IntN(3) == 0 {
				event["steps"] = map[string]any{"b": randValue(r, 1), "walked": int64(r.IntN(9000))}
			}
		}
		paths := append(pathsOf(event, ""), pathsOf(context, "")...)
		payload := randPayload(r, paths, 2)
		text := randText(r, paths)
		cfg := `{"topic":"t","payload":` + string(tmpl.AppendJSON(nil, payload)) + `}`
		evJSON := string(tmpl.AppendJSON(nil, event))
		var ctxView []byte
		if context != nil {
			ctxView = mustView(t, string(tmpl.AppendJSON(nil, context)))
		}
		call := func(t testing.TB, evJSON string) *wasm.Call {
			c := call(t, evJSON)
			c.Context = ctxView
			return c
		}
		in, err := abi.ParseCallInput(abi.AppendCallInput(nil, &abi.CallInfo{}, mustView(t, evJSON), ctxView))
		if err != nil {
			t.Fatal(err)
		}
		view := &in
		tp, goErr := tmpl.JSON(payload)
		h, err := pub.Configure(ctx, "publish", []byte(cfg))
		switch {
		case goErr != nil && err == nil:
			t.Fatalf("case %d: %s: Go refuses (%v), AS configures", i, cfg, goErr)
		case goErr == nil && err != nil:
			t.Fatalf("case %d: configure %s: %v", i, cfg, err)
		case goErr == nil:
			want := string(tp.Render(nil, view))
			b.got = nil
			if _, err := h.Act(ctx, call(t, evJSON)); err != nil {
				t.Fatalf("case %d: act: %v", i, err)
			}
			if got := strings.TrimPrefix(b.got[0], "t "); !sameRendering(got, want) {
				t.Fatalf("case %d: payload template %s over\n%s\nAS: %s\nGo: %s", i, cfg, evJSON, got, want)
			}
			h.Close()
		}

		tt, goErr := tmpl.Text(text)
		lh, err := logm.Configure(ctx, "log", []byte(`{"message":`+string(abi.AppendJSONString(nil, text))+`}`))
		if (goErr != nil) != (err != nil) {
			t.Fatalf("case %d: text %q: Go %v, AS %v", i, text, goErr, err)
		}
		if goErr != nil {
			continue
		}
		wantText := tt.String(view)
		out, err := lh.Act(ctx, call(t, evJSON))
		if err != nil {
			t.Fatal(err)
		}
		if !sameRendering(string(out), wantText) {
			t.Fatalf("case %d: text template %q over\n%s\nAS: %q\nGo: %q", i, text, evJSON, out, wantText)
		}
		lh.Close()
	}
}

// number is a JSON number in rendered text.
var number = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?(e[+-][0-9]+)?`)

// sameRendering: equal bytes, or equal but for the digits of numbers that
// are the same float64. AssemblyScript's dtoa (Grisu2) always gives digits
// that read back as the same number, not always the shortest such digits
// that Go's strconv gives (9.562458164125095e+08 for 9.562458164125094e+08):
// the value is the same, its last digit may differ.
func sameRendering(a, b string) bool {
	if a == b {
		return true
	}
	if number.ReplaceAllString(a, "#") != number.ReplaceAllString(b, "#") {
		return false
	}
	x, y := number.FindAllString(a, -1), number.FindAllString(b, -1)
	for i := range x {
		f, err1 := strconv.ParseFloat(x[i], 64)
		g, err2 := strconv.ParseFloat(y[i], 64)
		if err1 != nil || err2 != nil || f != g {
			return false
		}
	}
	return true
}

func mustView(t testing.TB, js string) []byte {
	t.Helper()
	b, err := abi.AppendJSONView(nil, []byte(js), false)
	if err != nil {
		t.Fatalf("view of %s: %v", js, err)
	}
	return b
}

var keys = []string{"a", "b", "battery", "vehicle", "pos", "x.y", "~t", "", "é", "z9", "A", "日本", "𝄞"}

// tmplValues are the template test's event values: wide ranges, escapes,
// keys that need escaping in a path.
var tmplValues = jsonGen{
	ints:   func(r *rand.Rand) int64 { return int64(r.IntN(2000) - 1000) },
	floats: randFloat,
	strs:   randString,
	small:  func(r *rand.Rand) int64 { return int64(r.Uint64() >> 1) },
	keys:   keys, arrayMax: 12, membersMin: 1, membersSpan: 5,
}

func randObject(r *rand.Rand, depth int) map[string]any { return tmplValues.object(r, depth) }

func randValue(r *rand.Rand, depth int) any { return tmplValues.value(r, depth) }

// jsonGen makes random JSON values as the view decodes them (nil, bool,
// int64, float64, string, []any, map[string]any) from its domains.
type jsonGen struct {
	ints, small             func(*rand.Rand) int64
	floats                  func(*rand.Rand) float64
	strs                    func(*rand.Rand) string
	keys                    []string
	arrayMax                int // an array has fewer elements
	membersMin, membersSpan int // an object has min + [0, span) members
}

func (g jsonGen) object(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range r.IntN(g.membersSpan) + g.membersMin {
		m[g.keys[r.IntN(len(g.keys))]] = g.value(r, depth)
	}
	return m
}

// value is a scalar at depth 0, else possibly an array or an object of
// values one level shallower.
func (g jsonGen) value(r *rand.Rand, depth int) any {
	k := r.IntN(9)
	if depth <= 0 && k >= 7 {
		k = r.IntN(7)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return g.ints(r)
	case 3:
		return g.floats(r)
	case 4, 5:
		return g.strs(r)
	case 6:
		return g.small(r)
	case 7:
		a := make([]any, r.IntN(g.arrayMax))
		for i := range a {
			a[i] = g.value(r, depth-1)
		}
		return a
	}
	return g.object(r, depth-1)
}

func randFloat(r *rand.Rand) float64 {
	switch r.IntN(6) {
	case 0:
		return float64(r.IntN(100000)) / 8
	case 1:
		return r.Float64() * math.Pow(10, float64(r.IntN(40)-20))
	case 2:
		return -r.Float64() * 1e7
	case 3:
		return math.Float64frombits(r.Uint64()>>2 | 0x3000000000000000)
	case 4:
		return 1e15 + float64(r.IntN(10))
	}
	return r.NormFloat64()
}

var pieces = []string{"x", "é", "\"", "\\", "\n", "\t", "\x01", "{", "}", "日", "𝄞", " ", "%", "<&>"}

func randString(r *rand.Rand) string {
	var sb strings.Builder
	for range r.IntN(6) {
		sb.WriteString(pieces[r.IntN(len(pieces))])
	}
	return sb.String()
}

func pathsOf(v any, prefix string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			p := abi.PathKey(k)
			if prefix != "" {
				p = prefix + "." + p
			}
			out = append(out, p)
			out = append(out, pathsOf(c, p)...)
		}
	case []any:
		for i, c := range x {
			p := prefix + "." + strconv.Itoa(i)
			out = append(out, p)
			out = append(out, pathsOf(c, p)...)
		}
	}
	return out
}

func randHole(r *rand.Rand, paths []string) string {
	if len(paths) == 0 || r.IntN(6) == 0 {
		return []string{"missing", " battery ", "a.b.c", "topic"}[r.IntN(4)]
	}
	return paths[r.IntN(len(paths))]
}

func randPayload(r *rand.Rand, paths []string, depth int) map[string]any {
	m := map[string]any{}
	for range r.IntN(4) + 1 {
		var v any
		switch r.IntN(6) {
		case 0, 1:
			v = "{{" + randHole(r, paths) + "}}"
		case 2:
			v = randText(r, paths)
		case 3:
			if depth > 0 {
				v = randPayload(r, paths, depth-1)
			} else {
				v = randValue(r, 0)
			}
		case 4:
			v = []any{"{{" + randHole(r, paths) + "}}", randValue(r, 0)}
		default:
			v = randValue(r, 0)
		}
		m[keys[r.IntN(len(keys))]] = v
	}
	return m
}

func randText(r *rand.Rand, paths []string) string {
	var sb strings.Builder
	for range r.IntN(4) + 1 {
		if r.IntN(2) == 0 {
			sb.WriteString(randString(r))
		} else {
			fmt.Fprintf(&sb, "{{%s}} ", randHole(r, paths)) // a space: two numbers side by side would read as one
		}
	}
	return strings.ReplaceAll(strings.ReplaceAll(sb.String(), "{{{", "{ {{"), "}}}", "}} }")
}

// TestSDKTemplatesMatchGo: the C SDK's templates (sdk/c,
// ruled_json_template and ruled_text_template, through sdk/c/tmpltest)
// and the Rust SDK's (ruled::Template, through sdk/rust/tmpltest) render
// what the Go SDK's render, over the same random events, contexts and
// templates as TestTemplatesMatchGo and TestTemplatesSeeContext, byte for
// byte: their floats are the shortest digits that read back, as Go's are.
func TestSDKTemplatesMatchGo(t *testing.T) {
	t.Run("c", func(t *testing.T) { sdkTemplatesMatchGo(t, plugintest.C(t, "sdk/c/tmpltest")) })
	t.Run("rust", func(t *testing.T) { sdkTemplatesMatchGo(t, plugintest.Rust(t, "sdk/rust/tmpltest/tmpltest.rs")) })
}

func sdkTemplatesMatchGo(t *testing.T, path string) {
	rt, err := wasm.NewRuntime(context.Background(), wasm.Config{CacheDir: plugintest.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	m, err := rt.LoadFile(context.Background(), path, wasm.Options{Name: "tmpltest"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	n := 600
	if testing.Short() {
		n = 100
	}
	for i := range n {
		event := randObject(r, 3)
		var context map[string]any
		if i%2 == 1 {
			context = map[string]any{"steps": map[string]any{"ask": randObject(r, 2), "b": randValue(r, 2)}}
			if r.IntN(2) == 0 {
				context["vars"] = randObject(r, 1)
			}
			if r.IntN(3) == 0 {
				event["steps"] = map[string]any{"b": randValue(r, 1), "walked": int64(r.IntN(9000))}
			}
		}
		paths := append(pathsOf(event, ""), pathsOf(context, "")...)
		payload := randPayload(r, paths, 2)
		text := randText(r, paths)
		evJSON := string(tmpl.AppendJSON(nil, event))
		var ctxView []byte
		if context != nil {
			ctxView = mustView(t, string(tmpl.AppendJSON(nil, context)))
		}
		in, err := abi.ParseCallInput(abi.AppendCallInput(nil, &abi.CallInfo{}, mustView(t, evJSON), ctxView))
		if err != nil {
			t.Fatal(err)
		}
		c := call(t, evJSON)
		c.Context = ctxView
		for _, tc := range []struct {
			fn, cfg string
			goT     func() (*tmpl.Template, error)
		}{
			{"json", `{"payload":` + string(tmpl.AppendJSON(nil, payload)) + `}`, func() (*tmpl.Template, error) { return tmpl.JSON(payload) }},
			{"text", `{"message":` + string(abi.AppendJSONString(nil, text)) + `}`, func() (*tmpl.Template, error) { return tmpl.Text(text) }},
		} {
			gt, goErr := tc.goT()
			h, err := m.Configure(ctx, tc.fn, []byte(tc.cfg))
			if (goErr != nil) != (err != nil) {
				t.Fatalf("case %d: %s %s: Go %v, SDK %v", i, tc.fn, tc.cfg, goErr, err)
			}
			if goErr != nil {
				continue
			}
			want := string(gt.Render(nil, &in))
			out, err := h.Act(ctx, c)
			if err != nil {
				t.Fatalf("case %d: act: %v", i, err)
			}
			if string(out) != want { // byte for byte: the digits are Go's shortest, not AS's Grisu2
				t.Fatalf("case %d: %s template %s over\n%s\ngot:  %s\nGo:   %s", i, tc.fn, tc.cfg, evJSON, out, want)
			}
			h.Close()
		}
	}
}
