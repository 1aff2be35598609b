package main

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/plugintest"
	ruled "github.com/ruled-dev/ruled/sdk/go"
	"github.com/ruled-dev/ruled/sdk/ruletest"
)

// host is what every way of calling the plugin offers: ruled.Native runs
// the Go code in this process (fast, debuggable), ruletest.Plugin runs a
// compiled module in the sandbox (what the daemon runs): the Go build, and
// the AssemblyScript build of index.ts that the example's rules load.
type host interface {
	When(function, config, event string) (bool, error)
	Act(function, config, event string) ([]byte, error)
}

// TestNativeAndCompiled runs one table of calls four ways, each with its
// own in-memory host, and wants the same answers, the same published
// events and the same kv store from all: a native unit test is only worth
// its speed if the module behaves the same, and the AssemblyScript plugin
// is only the Go one's replacement if it answers as it does (and the Rust
// build of scooter.rs, since issue 43).
func TestNativeAndCompiled(t *testing.T) {
	at := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	native := &ruled.Native{Now: at}
	compiled := ruletest.LoadPlugin(t, ".")
	compiled.Now = at
	as := ruletest.LoadPlugin(t, "scooter.wasm")
	as.Now = at
	rs := ruletest.LoadPlugin(t, plugintest.Rust(t, "examples/scooter/plugin/scooter.rs"))
	rs.Now = at
	published := func(h host) int {
		switch h := h.(type) {
		case *ruled.Native:
			return len(h.Published)
		case *ruletest.Plugin:
			return len(h.Published)
		}
		return 0
	}
	lastPublished := func(h host) string {
		switch h := h.(type) {
		case *ruled.Native:
			p := h.Published[len(h.Published)-1]
			return p.Topic + " " + string(p.Payload)
		case *ruletest.Plugin:
			p := h.Published[len(h.Published)-1]
			return p.Topic + " " + string(p.Payload)
		}
		return ""
	}
	for _, tc := range []struct {
		name, fn, config, event string
		want, publishes         string
	}{
		{"a locked scooter that moves", "moving_while_locked", `{"min_speed":3}`, `{"locked":true,"speed":5}`, "true", ""},
		{"an unlocked one", "moving_while_locked", `{"min_speed":3}`, `{"locked":false,"speed":5}`, "false", ""},
		{"too slow to count", "moving_while_locked", "", `{"locked":true,"speed":2}`, "false", ""},
		{"remember a low battery", "remember", "", `{"vehicle":"s-1","battery":12}`, "", ""},
		{"limit while it is low", "limit_speed", `{"below":20,"max_speed":15}`, `{"vehicle":"s-1"}`, "limited to 15 km/h",
			`scooter.cmd.limit {"vehicle":"s-1","max_speed":15,"key":"test-run/test/0"}`},
		{"remember it recovered", "remember", "", `{"vehicle":"s-1","battery":50}`, "", ""},
		{"no limit once recovered", "limit_speed", `{"below":20,"max_speed":15}`, `{"vehicle":"s-1"}`, "recovered", ""},
		{"no limit for a scooter never seen", "limit_speed", "", `{"vehicle":"s-9"}`, "recovered", ""},
		{"the alarm", "alarm", "", `{"vehicle":"s-3"}`, "", `scooter.cmd.alarm {"vehicle":"s-3","round":1}`},
		{"a function it does not have", "fly", "", `{}`, "error", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [4]string
			for i, h := range []host{native, compiled, as, rs} {
				before := published(h)
				var res string
				if strings.HasPrefix(tc.fn, "moving") {
					ok, err := h.When(tc.fn, tc.config, tc.event)
					res = fmt.Sprint(ok)
					if err != nil {
						res = "error"
					}
				} else {
					out, err := h.Act(tc.fn, tc.config, tc.event)
					res = string(out)
					if err != nil {
						res = "error"
					}
				}
				pub := ""
				if published(h) > before {
					pub = lastPublished(h)
				}
				if res != tc.want || pub != tc.publishes {
					t.Errorf("%T: %q, published %q; want %q, %q", h, res, pub, tc.want, tc.publishes)
				}
				got[i] = res + "|" + pub
			}
			if got[0] != got[1] || got[0] != got[2] || got[0] != got[3] {
				t.Errorf("native %q, compiled %q, AssemblyScript %q, Rust %q", got[0], got[1], got[2], got[3])
			}
		})
	}
	same := func(a, b []byte) bool { return string(a) == string(b) }
	if !maps.EqualFunc(native.KV, compiled.KV, same) || !maps.EqualFunc(native.KV, as.KV, same) || !maps.EqualFunc(native.KV, rs.KV, same) {
		t.Errorf("kv: native %q, compiled %q, AssemblyScript %q, Rust %q", native.KV, compiled.KV, as.KV, rs.KV)
	}
	if string(native.KV["battery:s-1"]) != "50" {
		t.Errorf("kv %q", native.KV)
	}
}
