package runlog

import (
	"strings"
	"testing"
)

func TestKeys(t *testing.T) {
	tests := []struct {
		key string
		run string
		seq int
		ok  bool
	}{
		{ExecKey("abc"), "abc", 0, true},
		{NodeKey("abc", 1), "abc", 1, true},
		{NodeKey("abc", MaxSeq), "abc", MaxSeq, true},
		{"ruled:log:abc:n:000001", "abc", 1, true},
		{"ruled:log:abc:n:1", "", 0, false},
		{"ruled:log:abc:n:000000", "", 0, false},
		{"ruled:log:abc:n:00000x", "", 0, false},
		{"ruled:log:abc:nodes", "", 0, false},
		{"ruled:log::exec", "", 0, false},
		{"ruled:log:a/b:exec", "", 0, false},
		{"ruled:pending", "", 0, false},
		{"", "", 0, false},
	}
	for _, tc := range tests {
		run, seq, err := ParseKey(tc.key)
		if (err == nil) != tc.ok || run != tc.run || seq != tc.seq {
			t.Errorf("ParseKey(%q) = %q, %d, %v", tc.key, run, seq, err)
		}
	}
	if NodeKey("r", 42) != "ruled:log:r:n:000042" || Field(42) != "n:000042" || Field(0) != "exec" {
		t.Error("key layout changed: it is a contract with every store")
	}
}

// FuzzParseKey: any key either parses to a run and number that make it
// again, or is refused; never a panic.
func FuzzParseKey(f *testing.F) {
	for _, k := range []string{ExecKey("abc"), NodeKey("abc", 7), "ruled:log:x:n:999999", "ruled:log:", "x"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		run, seq, err := ParseKey(key)
		if err != nil {
			return
		}
		again := ExecKey(run)
		if seq > 0 {
			again = NodeKey(run, seq)
		}
		if again != key {
			t.Errorf("ParseKey(%q) = %q, %d, which makes %q", key, run, seq, again)
		}
	})
}

func TestUnended(t *testing.T) {
	step := func(name, outcome string) *Node { return &Node{Kind: KindStep, Name: name, Outcome: outcome} }
	delay := func(name, detail, outcome string) *Node {
		return &Node{Kind: KindDelay, Name: name, Detail: detail, Outcome: outcome}
	}
	trigger := &Node{Kind: KindTrigger, Outcome: OK}
	tests := []struct {
		name    string
		nodes   []*Node
		outcome string
		why     string
	}{
		{"waiting in a durable delay: went on, unlogged", []*Node{trigger, step("first", OK), delay("later", "after 2s (durable)", Open)},
			Unlogged, `durable delay "later" waited for came due`},
		{"waiting in a memory-only delay: interrupted", []*Node{trigger, step("first", OK), delay("later", "after 2s", Open)},
			Interrupted, "nothing was waiting to resume it"},
		{"mid-step: interrupted there", []*Node{trigger, step("first", Open)},
			Interrupted, `during step "first"`},
		// Past a durable point the record follows the run to its end: no
		// record, so it went on (issue 37, 8: 392 completed runs were
		// marked interrupted in four soak runs).
		{"a durable delay that closed, then a step open", []*Node{trigger, delay("later", "after 2s (durable)", OK), step("later", Open)},
			Unlogged, `passed a durable point (delay "later")`},
		{"a durable delay that closed, then a step that ended", []*Node{trigger, delay("later", "after 2s (durable); runs on the module it was scheduled with", OK), step("later", OK)},
			Unlogged, `passed a durable point`},
		{"replayed, then a step that ended", []*Node{trigger, step("first", OK), {Kind: KindReplay, Name: "later", Outcome: OK}, step("later", OK)},
			Unlogged, `passed a durable point (replay "later")`},
		{"a durable wait that took its event", []*Node{trigger, {Kind: KindWait, Name: "ack", Detail: "for ack, up to 1m0s (durable); event e1 on ack", Outcome: OK}, step("next", OK)},
			Unlogged, `passed a durable point (wait "ack")`},
		{"a memory-only delay that closed, then a step that ended", []*Node{trigger, delay("later", "after 2s", OK), step("later", OK)},
			Interrupted, "nothing was waiting to resume it"},
		{"no nodes", nil, Interrupted, "nothing was waiting to resume it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outcome, why := Unended(tc.nodes)
			if outcome != tc.outcome || !strings.Contains(why, tc.why) {
				t.Errorf("Unended = %s %q; want %s containing %q", outcome, why, tc.outcome, tc.why)
			}
		})
	}
}
