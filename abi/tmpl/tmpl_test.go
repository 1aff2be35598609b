package tmpl

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
)

func view(t *testing.T, js string) abi.View {
	t.Helper()
	b, err := abi.AppendJSONView(nil, []byte(js), false)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := abi.ParseView(b)
	return v
}

const ev = `{"vehicle":"s-17","battery":12.5,"n":3,"ok":true,"pos":{"lat":1,"lon":2},"q":"say \"hi\""}`

func TestText(t *testing.T) {
	tests := []struct{ tmpl, want string }{
		{"battery {{battery}}% on {{ vehicle }}", "battery 12.5% on s-17"},
		{"{{n}}/{{ok}}/{{missing}}/{{pos}}", `3/true//{"lat":1,"lon":2}`},
		{"no placeholders", "no placeholders"},
		{"{{q}}", `say "hi"`},
	}
	v := view(t, ev)
	for _, tc := range tests {
		tm, err := Text(tc.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if got := tm.String(v); got != tc.want {
			t.Errorf("Text(%q) = %q; want %q", tc.tmpl, got, tc.want)
		}
	}
	if _, err := Text("oops {{battery"); err == nil {
		t.Error("an unclosed placeholder compiled")
	}
}

func TestJSON(t *testing.T) {
	tests := []struct{ tmpl, want string }{
		{`{"vehicle":"{{vehicle}}","battery":"{{battery}}","note":"at {{battery}}% \"low\"","fixed":[1,2.5,null,false]}`,
			`{"battery":12.5,"fixed":[1,2.5,null,false],"note":"at 12.5% \"low\"","vehicle":"s-17"}`},
		{`{"where":"{{pos}}","gone":"{{missing}}","q":"{{q}}","qq":"x{{q}}"}`,
			`{"gone":null,"q":"say \"hi\"","qq":"xsay \"hi\"","where":{"lat":1,"lon":2}}`},
	}
	v := view(t, ev)
	for _, tc := range tests {
		var x any
		if err := json.Unmarshal([]byte(tc.tmpl), &x); err != nil {
			t.Fatal(err)
		}
		tm, err := JSON(x)
		if err != nil {
			t.Fatal(err)
		}
		got := tm.String(v)
		if got != tc.want {
			t.Errorf("JSON(%s) = %s; want %s", tc.tmpl, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("rendered invalid JSON %s", got)
		}
	}
}

func TestRenderAtMost(t *testing.T) {
	big := `{"p":"` + strings.Repeat("x", 1000) + `"}`
	many, err := Text(strings.Repeat("{{p}}", 200)) // 200 KB if rendered whole
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		tm    *Template
		limit int
		ok    bool
		most  int
	}{
		{"under the limit", many, 200_000, true, 200_000},
		{"stopped past the limit, within one field", many, 4096, false, 4096 + 1000},
		{"no limit", many, -1, true, 200_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := tc.tm.RenderAtMost(nil, view(t, big), tc.limit)
			if ok != tc.ok || len(out) > tc.most {
				t.Errorf("RenderAtMost(%d) = %d bytes, %v; want %v and at most %d bytes", tc.limit, len(out), ok, tc.ok, tc.most)
			}
		})
	}
}
