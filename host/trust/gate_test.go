package trust

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
)

func TestParsePlaces(t *testing.T) {
	tests := []struct {
		words []string
		want  string // sorted places, or the error's start
	}{
		{nil, ""},
		{[]string{"true"}, "deploy plugins rules"},
		{[]string{"all"}, "deploy plugins rules"},
		{[]string{"false"}, ""},
		{[]string{"plugins", "deploy"}, "deploy plugins"},
		{[]string{"plugin"}, `error: "plugin" is not a place`},
	}
	for _, tc := range tests {
		got, err := ParsePlaces(tc.words)
		var s string
		if err != nil {
			s = "error: " + err.Error()
		} else {
			for _, p := range []string{"deploy", "plugins", "rules"} {
				if got[p] {
					s += p + " "
				}
			}
			s = strings.TrimSpace(s)
		}
		if !strings.HasPrefix(s, tc.want) || (tc.want == "" && s != "") {
			t.Errorf("%q: %q, want %q", tc.words, s, tc.want)
		}
	}
}

// TestGate: a Gate checks only the places required, remembers the files
// it refuses now and counts every refusal, forgets a file that passes or
// is gone, and refuses to require signatures with no key to check them.
func TestGate(t *testing.T) {
	if _, err := NewGate(nil, map[string]bool{PlaceRules: true}); err == nil {
		t.Error("a gate requiring signatures with no key")
	}
	k, _ := Generate("ops", rand.Reader)
	ring, _ := NewKeyring([]PublicKey{k.Public()}, nil)
	g, err := NewGate(ring, map[string]bool{PlacePlugins: true})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("module")
	good := k.Sign("p.wasm", body).Marshal()
	steps := []struct {
		place, file string
		content     []byte
		sig         []byte
		key         string
		refusedNow  int
	}{
		{PlaceRules, "r.yaml", body, nil, "", 0}, // not required: passes unchecked
		{PlacePlugins, "d/p.wasm", body, nil, "", 1},
		{PlacePlugins, "d/p.wasm", []byte("changed"), good, "ops", 1},
		{PlacePlugins, "d/p.wasm", body, good, "ops", 0},
		{PlacePlugins, "d/q.wasm", body, good, "ops", 1}, // renamed
	}
	for i, st := range steps {
		key, err := g.Check(st.place, st.file, st.content, st.sig)
		if key != st.key || len(g.Report().Refused) != st.refusedNow {
			t.Errorf("step %d: key %q, err %v, refused now %+v", i, key, err, g.Report().Refused)
		}
	}
	rep := g.Report()
	if rep.Counts["plugins: unsigned"] != 1 || rep.Counts["plugins: tampered"] != 1 || rep.Counts["plugins: renamed"] != 1 {
		t.Errorf("counts %v", rep.Counts)
	}
	if strings.Join(rep.Required, ",") != "plugins" || strings.Join(rep.Keys, ",") != "ops" {
		t.Errorf("report %+v", rep)
	}
	if _, err := g.CheckRead(PlacePlugins, "d/f.wasm", body, nil, errors.New("not a regular file")); err == nil ||
		!strings.Contains(err.Error(), "d/f.wasm: malformed: its signature file: not a regular file") {
		t.Errorf("an unreadable signature: %v", err)
	}
	g.Forget("d/f.wasm")
	g.Forget("d/q.wasm")
	if len(g.Report().Refused) != 0 {
		t.Errorf("forgotten file still refused: %+v", g.Report().Refused)
	}
	var nilGate *Gate
	if nilGate.Required(PlacePlugins) || nilGate.Report() != nil {
		t.Error("a nil gate requires something")
	}
}
