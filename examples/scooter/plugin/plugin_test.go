package main

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	ruled "github.com/ruled-dev/ruled/sdk/go"
	"github.com/ruled-dev/ruled/sdk/ruletest"
)

// host is what both ways of calling the plugin offer: ruled.Native runs
// its code in this process (fast, debuggable), ruletest.Plugin runs the
// compiled module in the sandbox (what the daemon runs).
type host interface {
	When(function, config, event string) (bool, error)
	Act(function, config, event string) ([]byte, error)
}

// TestNativeAndCompiled runs one table of calls both ways, each with its
// own in-memory host, and wants the same answers, the same published
// events and the same kv store from both: a native unit test is only worth
// its speed if the module behaves the same.
func TestNativeAndCompiled(t *testing.T) {
	at := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	native := &ruled.Native{Now: at}
	compiled := ruletest.LoadPlugin(t, ".")
	compiled.Now = at
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
			var got [2]string
			for i, h := range []host{native, compiled} {
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
			if got[0] != got[1] {
				t.Errorf("native %q, compiled %q", got[0], got[1])
			}
		})
	}
	if !maps.EqualFunc(native.KV, compiled.KV, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Errorf("kv: native %q, compiled %q", native.KV, compiled.KV)
	}
	if string(native.KV["battery:s-1"]) != "50" {
		t.Errorf("kv %q", native.KV)
	}
}
