package abi

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func mustView(t testing.TB, js string, raw bool) View {
	t.Helper()
	b, err := AppendJSONView(nil, []byte(js), raw)
	if err != nil {
		t.Fatalf("AppendJSONView(%s): %v", js, err)
	}
	v, err := ParseView(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestViewFind(t *testing.T) {
	v := mustView(t, `{"type":"temperature","data":{"value":23.5,"n":-7,"big":18446744073709551616,"ok":true,"nil":null},
		"tags":["a","b"],"a.b":{"c~d":1},"esc":"q\"\u00e9\ud83d\ude00\n","data-x":1}`, false)
	tests := []struct {
		path string
		kind ValueKind
		want any
	}{
		{"", ValueObject, 6},
		{"type", ValueString, "temperature"},
		{"data", ValueObject, 5},
		{"data.value", ValueFloat, 23.5},
		{"data.n", ValueInt, int64(-7)},
		{"data.big", ValueFloat, 18446744073709551616.0},
		{"data.ok", ValueBool, true},
		{"data.nil", ValueNull, nil},
		{"tags", ValueArray, 2},
		{"tags.1", ValueString, "b"},
		{`a~1b`, ValueObject, 1},
		{`a~1b.c~0d`, ValueInt, int64(1)},
		{"esc", ValueString, "q\"é😀\n"},
		{"data-x", ValueInt, int64(1)},
	}
	for _, tc := range tests {
		x, ok := v.Find(tc.path)
		if !ok || x.Kind() != tc.kind {
			t.Errorf("Find(%q) = %v, %v; want kind %v", tc.path, x.Kind(), ok, tc.kind)
			continue
		}
		var got any
		switch tc.kind {
		case ValueString:
			s, _ := x.Str()
			got = string(s)
		case ValueInt:
			got, _ = x.Int()
		case ValueFloat:
			got, _ = x.Float()
		case ValueBool:
			got, _ = x.Bool()
		case ValueObject, ValueArray:
			got, _ = x.Count()
		case ValueNull:
			got = nil
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Find(%q) = %#v; want %#v", tc.path, got, tc.want)
		}
	}
	for _, missing := range []string{"nope", "data.", "tags.2", "a.b", "Type"} {
		if x, ok := v.Find(missing); ok || x.Kind() != 0 {
			t.Errorf("Find(%q) found %v", missing, x.Kind())
		}
	}
	if _, ok := v.Raw(); ok {
		t.Error("a view built without raw has raw")
	}
}

func TestViewAccessorsRefuseOtherKinds(t *testing.T) {
	v := mustView(t, `{"s":"x","f":1.5,"i":2,"whole":3.0,"huge":1e300}`, false)
	s, _ := v.Find("s")
	if _, ok := s.Float(); ok {
		t.Error("a string answered Float")
	}
	f, _ := v.Find("f")
	if _, ok := f.Int(); ok {
		t.Error("1.5 answered Int")
	}
	if _, ok := f.Str(); ok {
		t.Error("a float answered Str")
	}
	w, _ := v.Find("whole")
	if n, ok := w.Int(); !ok || n != 3 {
		t.Errorf("3.0 Int = %d, %v", n, ok)
	}
	h, _ := v.Find("huge")
	if _, ok := h.Int(); ok {
		t.Error("1e300 answered Int")
	}
	var zero Value
	if _, ok := zero.Bool(); ok {
		t.Error("zero Value answered Bool")
	}
}

func TestAppendJSONViewErrors(t *testing.T) {
	tests := []struct{ js, msg string }{
		{``, "unexpected end of input"},
		{`{`, "expected a string key"},
		{`{"a":1,}`, "expected a string key"},
		{`{"a" 1}`, "expected ':'"},
		{`[1 2]`, "expected ',' or ']'"},
		{`{"a":1} x`, "unexpected data after the value"},
		{`{"a":1,"a":2}`, `duplicate key "a"`},
		{`{"a":{"b":1},"a":{"b":2}}`, `duplicate key`},
		{`"\x"`, "invalid escape"},
		{`"\u12"`, "invalid \\u escape"},
		{"\"a\x01\"", "control character"},
		{`01`, "unexpected data"},
		{`-`, "invalid number"},
		{`1.`, "invalid number"},
		{`1e`, "invalid number"},
		{`tru`, "invalid literal"},
		{`nul`, "invalid literal"},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), "nesting deeper than 64"},
		{`{"k":"unterminated`, "unterminated string"},
	}
	for _, tc := range tests {
		_, err := AppendJSONView(nil, []byte(tc.js), false)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("AppendJSONView(%q) = %v; want %q", tc.js, err, tc.msg)
		}
	}
}

func TestViewDecodeMatchesEncodingJSON(t *testing.T) {
	docs := []string{
		`{}`, `[]`, `null`, `"s"`, `12`, `-0.5e-3`,
		`{"id":"evt","data":{"value":23.5,"unit":"C","battery":87},"tags":["home","kitchen"],"seq":123456}`,
		`{"a":[[1,2],[3,[4,{"b":null}]]],"a-b":{"x.y":{"z~w":[true,false]}},"~1":{"~":"~0"},"":{"":""}}`,
		`[0,1,2,3,4,5,6,7,8,9,10,11,12]`,
		`{"k":"\ud800"}`, // lone surrogate: U+FFFD, as encoding/json
	}
	for _, js := range docs {
		v := mustView(t, js, true)
		got, ok := v.Decode("")
		if !ok {
			t.Fatalf("Decode(%s) found nothing", js)
		}
		var want any
		d := json.NewDecoder(strings.NewReader(js))
		d.UseNumber()
		if err := d.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Errorf("Decode(%s) = %#v; want %#v", js, got, want)
		}
		if raw, ok := v.Raw(); !ok || string(raw) != js {
			t.Errorf("Raw = %q, %v", raw, ok)
		}
	}
}

// normalize maps numbers to float64 so that int64 and json.Number compare.
func normalize(x any) any {
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalize(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normalize(e)
		}
	case json.Number:
		f, _ := v.Float64()
		return f
	case int64:
		return float64(v)
	}
	return x
}

func TestParseViewRejectsGarbage(t *testing.T) {
	good, _ := AppendJSONView(nil, []byte(`{"a":"b"}`), true)
	tests := [][]byte{nil, []byte("RV"), good[:15], append([]byte("XV"), good[2:]...), good[:20]}
	for _, b := range tests {
		if _, err := ParseView(b); !errors.Is(err, ErrBadView) {
			t.Errorf("ParseView(%q) = %v; want ErrBadView", b, err)
		}
	}
	// A view whose offsets point outside it answers lookups with false.
	bad := bytes.Clone(good)
	for i := viewHeader; i < viewHeader+2*viewEntry; i++ {
		bad[i] = 0xff
	}
	v, err := ParseView(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.Find("a"); ok {
		t.Error("a corrupt view answered Find")
	}
}

func TestCallInfoRoundTrip(t *testing.T) {
	c := CallInfo{Pass: 3, Time: -42, Topic: "t", Rule: "r", Step: "", Run: "run", Key: strings.Repeat("k", 70000), Attempt: 7}
	ev, _ := AppendJSONView(nil, []byte(`{"x":1}`), false)
	b := append(AppendCallInfo(nil, &c), ev...)
	in, err := ParseCallInput(b)
	if err != nil {
		t.Fatal(err)
	}
	if in.Pass != 3 || in.Time != -42 || string(in.Topic) != "t" || string(in.Rule) != "r" ||
		len(in.Step) != 0 || string(in.Run) != "run" || len(in.Key) != math.MaxUint16 || in.Attempt != 7 {
		t.Errorf("round trip = %+v", in)
	}
	// A 1.1 host's header ends at the key: the attempt reads as 0.
	old := AppendCallInfo(nil, &CallInfo{Topic: "t", Key: "k", Attempt: 9})
	old = old[:len(old)-8]
	binary.LittleEndian.PutUint32(old, uint32(len(old)))
	if in, err := ParseCallInput(append(old, ev...)); err != nil || in.Attempt != 0 || string(in.Key) != "k" {
		t.Errorf("a 1.1 header = %+v, %v", in, err)
	}
	if x, ok := in.Event.Find("x"); !ok || x.Kind() != ValueInt {
		t.Error("event lost")
	}
	for n := 0; n < len(b)-len(ev); n += 7 {
		if _, err := ParseCallInput(b[:n]); err == nil {
			t.Errorf("ParseCallInput of %d bytes succeeded", n)
		}
	}
}

// TestCallContext: a 1.3 input carries the run's context after the event;
// a path under steps. or vars. is the context's (missing when it lacks
// it: a trigger cannot pass off its own field as an output), every other
// path the event's (an event's own steps field only whole); a context
// offset outside the input is refused.
func TestCallContext(t *testing.T) {
	ev, _ := AppendJSONView(nil, []byte(`{"x":1,"steps":{"quote":{"price":9},"walked":1200},"vars":7,"states":{"door":{"open":false}},"previous":{"open":true},"stateside":1,"sun":"event's"}`), false)
	ctx, _ := AppendJSONView(nil, []byte(`{"steps":{"quote":{"price":3,"slot":"a"}},"vars":{"limit":20},"states":{"door":{"open":true}},"previous":{"open":false},"sun":{"elevation":12.5}}`), false)
	b := AppendCallInput(nil, &CallInfo{Topic: "t", Key: "k", Attempt: 2}, ev, ctx)
	in, err := ParseCallInput(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want string // the value's JSON; "" not found
	}{
		{"x", "1"},
		{"steps.quote.price", "3"},
		{"steps.quote.slot", `"a"`},
		{"steps.quote", `{"price":3,"slot":"a"}`},
		{"steps.walked", ""}, // no step of that name: missing, never the event's

		{"steps", `{"quote":{"price":9},"walked":1200}`},
		{"vars.limit", "20"},
		{"vars", "7"},
		{"vars.other", ""},
		// 1.4: states and the previous state, the same rule.
		{"states.door.open", "true"},
		{"states.window", ""},
		{"states", `{"door":{"open":false}}`},
		{"previous.open", "false"},
		{"previous", `{"open":true}`},
		{"stateside", "1"},
		{"sun.elevation", "12.5"},
		{"sun", `"event's"`},
	} {
		got := ""
		if v, ok := in.Find(c.path); ok {
			d, _ := in.Decode(c.path)
			j, _ := json.Marshal(d)
			got = string(j)
			if v.Kind() == 0 {
				t.Errorf("%s: no kind", c.path)
			}
		}
		if got != c.want {
			t.Errorf("Find(%q) = %s; want %s", c.path, got, c.want)
		}
	}
	if in.Attempt != 2 {
		t.Errorf("attempt %d", in.Attempt)
	}
	// An input without a context reads as before; a reader of 1.2 sees
	// the event at H as ever (the context is past the event's pool).
	plain := AppendCallInput(nil, &CallInfo{Topic: "t"}, ev, nil)
	if in, err := ParseCallInput(plain); err != nil || in.Context.Len() != 0 {
		t.Errorf("no context = %+v, %v", in.Context, err)
	} else if _, ok := in.Find("steps.quote.price"); ok {
		t.Error("without a context, steps. read the event")
	}
	h := binary.LittleEndian.Uint32(b)
	if v, err := ParseView(b[h:]); err != nil {
		t.Error(err)
	} else if p, ok := v.Find("steps.quote.price"); !ok {
		t.Error("an old reader lost the event")
	} else if n, _ := p.Int(); n != 9 {
		t.Errorf("an old reader sees %d", n)
	}
	bad := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(bad[h-4:], uint32(len(bad)+1))
	if _, err := ParseCallInput(bad); err == nil {
		t.Error("a context past the input was accepted")
	}
}

func TestDescriptorJSON(t *testing.T) {
	d := Descriptor{ABI: Version, Name: "p\"1", Version: "1.0", Functions: []Function{
		{Name: "low", Kind: "condition", Doc: "tab\there", Example: `{"below":20}`},
		{Name: "alert", Kind: "action", Needs: []Capability{CapPublish, CapKV}, Schema: "{}"},
	}}
	var got Descriptor
	if err := json.Unmarshal(d.AppendJSON(nil), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, d) {
		t.Errorf("round trip = %+v; want %+v", got, d)
	}
}

func TestStatusAndKindNames(t *testing.T) {
	if s := StatusBadConfig.String(); s != "bad config" {
		t.Errorf("got %q", s)
	}
	if s := Status(99).String(); s != "status 99" {
		t.Errorf("got %q", s)
	}
	if VersionString(Version) != "1.4" {
		t.Errorf("VersionString = %q", VersionString(Version))
	}
	for _, name := range []string{ImportLog, ImportPublish, ImportKVGet, ImportFire, ImportHTTPRequest, "nope"} {
		need, ok := ImportCapability(name)
		if name == "nope" && ok || name != "nope" && !ok {
			t.Errorf("ImportCapability(%q) = %q, %v", name, need, ok)
		}
	}
}

func TestFindAllocatesNothing(t *testing.T) {
	v := mustView(t, `{"type":"temperature","data":{"value":23.5}}`, false)
	n := testing.AllocsPerRun(100, func() {
		x, _ := v.Find("data.value")
		if f, _ := x.Float(); f != 23.5 {
			t.Fatal("wrong")
		}
		s, _ := v.Find("type")
		if b, _ := s.Str(); string(b) != "temperature" {
			t.Fatal("wrong")
		}
	})
	if n != 0 {
		t.Errorf("Find allocates %v times", n)
	}
}

func TestViewBuilderReuseAllocatesNothing(t *testing.T) {
	js := []byte(`{"id":"evt","type":"temperature","data":{"value":23.5,"unit":"C"},"tags":["a","b"]}`)
	var b ViewBuilder
	dst, _ := b.Append(nil, js, false)
	n := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = b.Append(dst[:0], js, false); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("a warm ViewBuilder allocates %v times per event", n)
	}
}

func TestPathKeyRoundTrip(t *testing.T) {
	keys := []string{"", "a.b", "~", "~2", "x~1y", ".", "..", "plain"}
	for i, k := range keys {
		js := `{` + string(AppendJSONString(nil, k)) + `:` + string(rune('0'+i)) + `,"other":{}}`
		v := mustView(t, js, false)
		x, ok := v.Find(PathKey(k))
		if n, _ := x.Int(); !ok || n != int64(i) {
			t.Errorf("Find(PathKey(%q) = %q) = %v, %v", k, PathKey(k), n, ok)
		}
		root, _ := v.Decode("")
		if m := root.(map[string]any); m[k] != int64(i) {
			t.Errorf("Decode lost key %q: %v", k, m)
		}
	}
}

// TestMembersWhile: the direct members only, in path order, however deep
// each is, and no more once fn says stop.
func TestMembersWhile(t *testing.T) {
	v := mustView(t, `{"o":{"a":{"x":{"y":[1,2,3]}},"b":[{"c":1}],"c.d":2,"":3},"p":1}`, false)
	o, _ := v.Find("o")
	var keys []string
	v.MembersWhile(o, func(key []byte, c Value) bool { keys = append(keys, string(key)); return true })
	if got := strings.Join(keys, " "); got != "a b c~1d ~2" {
		t.Errorf("members %q; want a b c~1d ~2", got)
	}
	keys = nil
	v.MembersWhile(o, func(key []byte, c Value) bool { keys = append(keys, string(key)); return len(keys) < 2 })
	if len(keys) != 2 {
		t.Errorf("members %q after a stop at the second", keys)
	}
	root, _ := v.Find("")
	keys = nil
	v.MembersWhile(root, func(key []byte, c Value) bool { keys = append(keys, string(key)); return true })
	if got := strings.Join(keys, " "); got != "o p" {
		t.Errorf("root members %q; want o p", got)
	}
}
