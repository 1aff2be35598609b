package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// summary prints a rule compactly, so a test can compare every field in one
// string.
func summary(r *Rule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%d:%d on=%v", r.ID, r.Pos.Line, r.Pos.Col, r.On)
	if r.When != nil {
		fmt.Fprintf(&b, " when=%s", callSummary(r.When))
	}
	fmt.Fprintf(&b, " mode=%s max=%d cooldown=%s repeat=%d/%s", r.Mode, r.Max, r.Cooldown, r.Repeat.Passes, r.Repeat.Interval)
	for _, c := range r.CancelOn {
		fmt.Fprintf(&b, " cancel=%s%v", c.Pattern, c.Match)
	}
	fmt.Fprintf(&b, " priority=%d key=%q on-plugin-change=%s once=%v", r.Priority, r.Key, r.OnPluginChange, r.Once)
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "\n  %d:%s@%d:%d %s", s.Index, s.Name, s.Pos.Line, s.Pos.Col, callSummary(&s.Do))
		if s.When != nil {
			fmt.Fprintf(&b, " when=%s", callSummary(s.When))
		}
		if s.After != 0 {
			fmt.Fprintf(&b, " after=%s", s.After)
		}
		if s.Durable {
			b.WriteString(" durable")
		}
	}
	return b.String()
}

func callSummary(c *Call) string {
	return fmt.Sprintf("%s.%s@%d:%d%s@%d:%d", c.Plugin, c.Function, c.Pos.Line, c.Pos.Col, c.With, c.WithPos.Line, c.WithPos.Col)
}

func TestParseGood(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"scooter.yaml", []string{
			`low-battery@2:3 on=[scooter.telemetry] when=expr.expr@5:9{"expr":"battery < 20 && !charging"}@5:9 mode=restart max=10 cooldown=10m0s repeat=1/0s cancel=scooter.charging.started[vehicle] priority=0 key="vehicle" on-plugin-change=pin once=false
  0:warn@13:7 publish.publish@14:11{"payload":{"level":"{{battery}}","vehicle":"{{vehicle}}"},"topic":"alerts.battery.{{vehicle}}"}@16:9
  1:depot@18:7 publish.publish@24:11{"payload":{"vehicle":"{{vehicle}}"},"topic":"depot.pickup"}@25:13 when=expr.expr@22:13{"expr":"battery < 10"}@23:15 after=30m0s durable`,
			`heartbeat-log@27:3 on=[scooter.*.heartbeat bike.>] mode=parallel max=4 cooldown=0s repeat=3/1s priority=2 key="" on-plugin-change=upgrade once=false
  0:0@35:7 log.log@35:11{"level":"debug","message":"heartbeat {{vehicle}}"}@36:13
  1:1@37:7 log.log@37:11{"extra":{"big":1e+30,"count":3,"list":[1,"two",3.5],"none":null,"ok":true,"ratio":1.0,"when":"2026-11-30"},"message":"done"}@39:9`,
			`first-boot@42:3 on=[device.boot] mode=queue max=10 cooldown=0s repeat=2/0s cancel=device.shutdown[] priority=0 key="" on-plugin-change=pin once=true
  0:0@49:7 log.log@49:11{"message":"first boot"}@50:13`,
		}},
		{"mapping.yaml", []string{
			`door-open@3:5 on=[garage.door.open] mode=single max=10 cooldown=0s repeat=1/0s priority=0 key="" on-plugin-change=pin once=false
  0:notify@7:9 publish.publish@8:13{"payload":{"door":"{{door}}"},"topic":"notify.door"}@9:15
  1:1@12:9 publish.publish@14:13{"payload":{"door":"{{door}}"},"topic":"notify.door.still-open"}@16:11 after=5m0s`,
			`door-closed@20:5 on=[garage.door.closed] mode=single max=10 cooldown=0s repeat=1/0s cancel=garage.door.open[] cancel=garage.>[] priority=0 key="" on-plugin-change=pin once=false
  0:0@24:9 log.log@24:13{"message":"closed"}@25:15`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata/good", tc.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rules, errs := ParseFile(path, data, plugins)
			for _, e := range errs {
				t.Errorf("unexpected error: %v", e)
			}
			if len(rules) != len(tc.want) {
				t.Fatalf("got %d rules; want %d", len(rules), len(tc.want))
			}
			for i, r := range rules {
				if got := summary(r); got != tc.want[i] {
					t.Errorf("rule %d:\ngot  %s\nwant %s", i, got, tc.want[i])
				}
				if r.Pos.File != path {
					t.Errorf("rule %s: file %q; want %q", r.ID, r.Pos.File, path)
				}
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct {
		file  string
		rules []string // the ids of the valid rules
		want  []string
	}{
		{"keys.yaml", nil, []string{
			`keys.yaml:3:3: unknown key "stpes" in a rule (hint: did you mean steps?)`,
			`keys.yaml:4:3: unknown key "cancel_on" in a rule (hint: did you mean cancel-on?)`,
			`keys.yaml:7:7: unknown key "delay" in a step (hint: did you mean after?)`,
			`keys.yaml:8:7: unknown key "colour" in a step (hint: a step takes name, do, with, when, after, durable, on-error, retry, wait-for)`,
			`keys.yaml:12:3: key "on" is given twice (hint: it is first given at line 11)`,
			`keys.yaml:14:21: a key must be a string, not an integer (hint: quote it: "1")`,
		}},
		{"types.yaml", nil, []string{
			`types.yaml:1:7: id: want a string, got an integer (hint: quote it: id: "42")`,
			`types.yaml:2:7: on: want a topic pattern, a schedule ({schedule} or {every}), a change ({topic, changes}), a window's close ({window, closed}) or a list of them, got an integer (hint: quote it: on: "7")`,
			`types.yaml:4:7: id: "Bad_Id" is not a valid name (hint: an id is at most 64 lower-case letters, digits, - and _, starting with a letter or digit)`,
			`types.yaml:6:9: mode: "paralel" is not one of single, restart, queue, parallel (hint: did you mean parallel?)`,
			`types.yaml:7:10: steps: want a list of steps, got a mapping`,
			`types.yaml:10:3: max only applies to mode queue or parallel (hint: this rule's mode is single, which never has more than one run; set mode: queue or parallel, or remove max)`,
			`types.yaml:11:13: priority: want at least 0, got -1`,
			`types.yaml:12:9: once: want true or false, got a string`,
			`types.yaml:18:8: max: want at least 1, got 0`,
			`types.yaml:19:13: cooldown: 5 has no unit (hint: give one: cooldown: 5s (Go syntax, e.g. "250ms", "5m", "1h30m"))`,
			`types.yaml:20:20: passes: want at least 1, got 0`,
			`types.yaml:20:33: interval: "5 minutes" is not a duration (hint: Go syntax, e.g. "250ms", "5m", "1h30m")`,
			`types.yaml:21:8: key: "a..b" is not a field path: it has an empty segment (hint: a path joins keys with dots, e.g. vehicle or battery.level; "~1" is a dot in a key, "~0" a tilde)`,
			`types.yaml:23:28: after: want a duration above 0, got 0s (hint: leave after out for none)`,
			`types.yaml:24:28: after: want a duration above 0, got -1m (hint: leave after out for none)`,
			`types.yaml:25:28: after has no value (hint: it takes a duration such as 5m)`,
			`types.yaml:28:11: repeat: want a number of passes or {passes, interval}, got a list`,
			`types.yaml:29:21: on-plugin-change: "keep" is not one of pin, upgrade, drop`,
			`types.yaml:30:16: description: want a string, got a list`,
		}},
		{"patterns.yaml", nil, []string{
			`patterns.yaml:3:7: on: empty topic pattern (hint: topics are words joined by dots, e.g. scooter.telemetry or scooter.*.battery)`,
			`patterns.yaml:4:7: on: "a..b" has an empty segment (hint: topics are words joined by dots, e.g. scooter.telemetry or scooter.*.battery)`,
			`patterns.yaml:5:7: on: "a.>.b": ">" must be the last segment (hint: ">" matches one or more segments at the end; "*" matches one anywhere)`,
			`patterns.yaml:6:7: on: "a b" contains a space or control character (hint: topics are words joined by dots, e.g. scooter.telemetry or scooter.*.battery)`,
			`patterns.yaml:7:7: on: "a.b*": a wildcard must be a whole segment (hint: "*" matches one segment, a final ">" one or more)`,
			`patterns.yaml:8:7: on: "ruled.cmd.*" can only match reserved ruled. topics (hint: rules never see ruled. topics: they carry the daemon's own commands and notices)`,
			`patterns.yaml:10:7: on: "ok.*" is given twice`,
			`patterns.yaml:13:7: cancel-on: "ruled.>" can only match reserved ruled. topics (hint: rules never see ruled. topics: they carry the daemon's own commands and notices)`,
			`patterns.yaml:14:37: match: "a..b" is not a field path: it has an empty segment (hint: a path joins keys with dots, e.g. vehicle or battery.level; "~1" is a dot in a key, "~0" a tilde)`,
			`patterns.yaml:14:45: match: "bad~3" is not a field path: "~" must be followed by 0, 1 or 2 (hint: a path joins keys with dots, e.g. vehicle or battery.level; "~1" is a dot in a key, "~0" a tilde)`,
			`patterns.yaml:15:7: cancel-on entry has no topic (hint: topic is the pattern of the cancelling events)`,
			`patterns.yaml:16:7: cancel-on: want a topic pattern or {topic, match}, got an integer (hint: quote it: cancel-on: "12")`,
		}},
		{"steps.yaml", nil, []string{
			`steps.yaml:3:10: steps is an empty list (hint: a rule needs at least one step)`,
			`steps.yaml:4:3: rule has no steps (hint: steps lists what the rule does: steps: [{do: log.log, with: {message: hi}}])`,
			`steps.yaml:6:3: rule has no id (hint: every rule needs a unique id, such as id: low-battery)`,
			`steps.yaml:8:7: step has no do (hint: do names the action to run: do: plugin.function; or wait-for: {topic, timeout} waits for an event)`,
			`steps.yaml:12:13: step name "1" looks like the index of another step (hint: unnamed steps are called by their index; give this one a name with a letter in it)`,
			`steps.yaml:17:13: step name "warn" is already used (hint: step 2 has it; names are unique within a rule)`,
			`steps.yaml:19:13: name: "Warn Me" is not a valid name (hint: a step name is at most 64 lower-case letters, digits, - and _, starting with a letter or digit)`,
			`steps.yaml:21:11: do: "log" is not plugin.function (hint: name the plugin and its function, e.g. do: publish.publish)`,
			`steps.yaml:22:11: do: ".log" is not plugin.function (hint: name the plugin and its function, e.g. do: publish.publish)`,
			`steps.yaml:23:16: durable: true needs after (hint: only a delayed step waits, so only a step with after: has anything to keep across a restart)`,
			`steps.yaml:25:13: when: the expression is empty (hint: leave when out for no condition)`,
			`steps.yaml:27:7: a step is a mapping of name, do, with, when, after, durable, on-error, retry, wait-for, got a string`,
		}},
		{"refs.yaml", []string{"expr-missing"}, []string{
			`refs.yaml:5:11: no plugin "pubish"; loaded: expr, log, publish (hint: did you mean publish?)`,
			`refs.yaml:6:11: no plugin "nope"; loaded: expr, log, publish`,
			`refs.yaml:7:11: plugin "log" has no function "lg" (hint: did you mean log?)`,
			`refs.yaml:8:11: plugin "log" has no function "nothing-close" (hint: it has log)`,
			`refs.yaml:9:11: expr.expr is a condition, not an action (hint: do: runs an action; a condition goes under when:)`,
			`refs.yaml:11:18: log.log is an action, not a condition (hint: when: takes a condition; an action goes in a step's do:)`,
			`refs.yaml:13:52: unknown key "if" in a condition (hint: a condition takes do, with)`,
		}},
		{"with.yaml", nil, []string{
			`with.yaml:5:13: with: want a mapping of config keys, got a list`,
			`with.yaml:8:9: a key must be a string, not an integer (hint: quote it: "1")`,
			`with.yaml:9:14: .nan is not a finite number (hint: JSON numbers are finite; quote it to pass it as a string)`,
			`with.yaml:10:14: -.inf is not a finite number (hint: JSON numbers are finite; quote it to pass it as a string)`,
			`with.yaml:11:14: binary data has no JSON form (hint: drop the !!binary tag to pass the base64 text as a string)`,
			`with.yaml:12:17: a value tagged !point has no JSON form (hint: remove the tag)`,
			`with.yaml:16:9: key "a" is given twice (hint: it is first given at line 15)`,
			`with.yaml:18:40: alias *self is inside the value it names (hint: a config must be finite: refer to an anchor outside this value)`,
			`with.yaml:20:19: <<: want a mapping to merge, got an integer (hint: merge an anchored mapping: <<: *defaults)`,
		}},
		{"laughs.yaml", nil, []string{
			`laughs.yaml:7:44: this file expands to more than 6992 values (hint: aliases of aliases multiply: each level repeats everything below it)`,
		}},
		{"syntax.yaml", nil, []string{
			`syntax.yaml:5:1: invalid YAML: did not find expected ',' or ']' (hint: the rules of this YAML document were not read)`,
		}},
		{"scalar.yaml", nil, []string{
			`scalar.yaml:1:1: a rule file is a list of rules, got a string (hint: start each rule with "- id: ")`,
		}},
		{"norules.yaml", nil, []string{
			`norules.yaml:1:1: a rule file is a list of rules, or a mapping with rules: (and windows:) (hint: start each rule with "- id: ", or put the list under rules:)`,
		}},
		{"rulesmap.yaml", []string{"second-doc"}, []string{
			`rulesmap.yaml:1:8: rules: want a list of rules, got a mapping`,
			`rulesmap.yaml:2:1: unknown key "version" in a rule file (hint: a rule file takes rules, windows)`,
			`rulesmap.yaml:8:9: rule id "second-doc" is already used (hint: first used at rulesmap.yaml:5:9)`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/bad", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			rules, errs := ParseFile(tc.file, data, plugins)
			checkErrors(t, errs, tc.want)
			var ids []string
			for _, r := range rules {
				ids = append(ids, r.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.rules) {
				t.Errorf("valid rules %v; want %v", ids, tc.rules)
			}
		})
	}
}

func checkErrors(t *testing.T, errs []*Error, want []string) {
	t.Helper()
	for i := range max(len(errs), len(want)) {
		var got, w string
		if i < len(errs) {
			got = errs[i].Error()
		}
		if i < len(want) {
			w = want[i]
		}
		if got != w {
			t.Errorf("error %d:\ngot  %s\nwant %s", i, got, w)
		}
	}
}

// TestZoo is the promise lint makes: one bad file reports every problem in
// one pass, each tagged with its rule, and its valid rule still loads.
func TestZoo(t *testing.T) {
	const path = "testdata/bad/zoo.yaml"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rules, errs := ParseFile(path, data, plugins)
	want := []struct{ rule, err string }{
		{"low-battery", `11:27: on: "ruled.cmd.low-battery" can only match reserved ruled. topics (hint: rules never see ruled. topics: they carry the daemon's own commands and notices)`},
		{"low-battery", `13:3: max only applies to mode queue or parallel (hint: this rule's mode is single, which never has more than one run; set mode: queue or parallel, or remove max)`},
		{"low-battery", `14:13: cooldown: "10 minutes" is not a duration (hint: Go syntax, e.g. "250ms", "5m", "1h30m")`},
		{"low-battery", `16:13: step name "1" looks like the index of another step (hint: unnamed steps are called by their index; give this one a name with a letter in it)`},
		{"low-battery", `18:7: unknown key "delay" in a step (hint: did you mean after?)`},
		{"low-battery", `21:16: durable: true needs after (hint: only a delayed step waits, so only a step with after: has anything to keep across a restart)`},
		{"low-battery", `22:11: no plugin "pubish"; loaded: expr, log, publish (hint: did you mean publish?)`},
		{"low-battery", `23:11: plugin "log" has no function "logg" (hint: did you mean log?)`},
		{"low-battery", `24:18: publish.publish is an action, not a condition (hint: when: takes a condition; an action goes in a step's do:)`},
		{"low-battery", `25:11: expr.expr is a condition, not an action (hint: do: runs an action; a condition goes under when:)`},
		{"low-battery", `26:21: .inf is not a finite number (hint: JSON numbers are finite; quote it to pass it as a string)`},
		{"fine", `28:7: rule id "fine" is already used (hint: first used at testdata/bad/zoo.yaml:3:7)`},
		{"fine", `29:7: on: "a.>.b": ">" must be the last segment (hint: ">" matches one or more segments at the end; "*" matches one anywhere)`},
		{"fine", `30:10: steps is an empty list (hint: a rule needs at least one step)`},
	}
	if len(errs) != len(want) {
		t.Errorf("got %d problems; want %d", len(errs), len(want))
	}
	for i := range min(len(errs), len(want)) {
		if got, w := errs[i].Error(), path+":"+want[i].err; got != w {
			t.Errorf("problem %d:\ngot  %s\nwant %s", i, got, w)
		}
		if errs[i].Rule != want[i].rule {
			t.Errorf("problem %d: rule %q; want %q", i, errs[i].Rule, want[i].rule)
		}
	}
	if len(rules) != 1 || rules[0].ID != "fine" || rules[0].Pos.Line != 3 {
		t.Errorf("got rules %v; want only the first \"fine\"", rules)
	}
}

// TestNilCatalog checks that without a catalog only the format is checked.
func TestNilCatalog(t *testing.T) {
	data, err := os.ReadFile("testdata/bad/refs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules, errs := ParseFile("refs.yaml", data, nil)
	checkErrors(t, errs, []string{`refs.yaml:13:52: unknown key "if" in a condition (hint: a condition takes do, with)`})
	if len(rules) != 1 {
		t.Errorf("got %d rules; want 1", len(rules))
	}
}

func TestParseInline(t *testing.T) {
	noExpr := fakeCatalog{"log": plugins["log"]}
	tests := []struct {
		name string
		cat  Catalog
		yaml string
		want []string
	}{
		{"empty file", plugins, "", nil},
		{"comments only", plugins, "# nothing yet\n", nil},
		{"empty documents", plugins, "---\n---\nrules:\n", nil},
		// The host evaluates a string condition itself: no plugin needed.
		{"string condition without expr", noExpr, "- id: a\n  on: x\n  when: battery < 20\n  steps: [{do: log.log}]\n", nil},
		{"explicit expr call without expr", noExpr, "- id: a\n  on: x\n  when: {do: expr.expr, with: {expr: battery < 20}}\n  steps: [{do: log.log}]\n", []string{
			`f:3:14: no plugin "expr"; loaded: log`}},
		{"no plugins", fakeCatalog{}, "- id: a\n  on: x\n  steps: [{do: log.log}]\n", []string{
			`f:3:16: no plugin "log"; none loaded`}},
		// Not "did you mean log?": the plugin is there, and did not load.
		{"plugin that did not load", failingCatalog{plugins, map[string]string{"loq": "not granted"}}, "- id: a\n  on: x\n  steps: [{do: loq.log}]\n", []string{
			`f:3:16: plugin "loq" did not load: not granted`}},
		{"misspelt beside one that did not load", failingCatalog{plugins, map[string]string{"fire": "not granted"}}, "- id: a\n  on: x\n  steps: [{do: loq.log}]\n", []string{
			`f:3:16: no plugin "loq"; loaded: expr, log, publish (hint: did you mean log?)`}},
		{"unclosed flow", plugins, "- id: a\n  on: [x\n", []string{
			`f:2:1: invalid YAML: did not find expected ',' or ']' (hint: the rules of this YAML document were not read)`}},
		{"tab", plugins, "- id: a\n\t- x\n", []string{
			`f:2:1: invalid YAML: found a tab character that violates indentation (hint: the rules of this YAML document were not read)`}},
		// The library names the line before the tab's here.
		{"tab after a mapping", plugins, "- id: second\n  on: device.x\n\tsteps: []\n", []string{
			`f:3:1: invalid YAML: found a tab character that violates indentation (hint: the rules of this YAML document were not read)`}},
		{"unknown anchor", plugins, "- id: a\n  on: x\n  steps: *nope\n", []string{
			`f:3:1: invalid YAML: unknown anchor 'nope' referenced (hint: the rules of this YAML document were not read)`}},
		{"later document broken", plugins, "- {id: a, on: x, steps: [{do: log.log}]}\n---\n- id: [b\n", []string{
			`f:3:1: invalid YAML: did not find expected ',' or ']' (hint: the rules of this YAML document were not read)`}},
		{"step named by its own index", plugins, "- id: a\n  on: x\n  steps: [{do: log.log}, {name: \"1\", do: log.log}]\n", nil},
		{"digit name out of range", plugins, "- id: a\n  on: x\n  steps: [{name: \"7\", do: log.log}]\n", []string{
			`f:3:18: step name "7" looks like the index of another step (hint: unnamed steps are called by their index; give this one a name with a letter in it)`}},
		{"max with restart", plugins, "- id: a\n  on: x\n  mode: restart\n  max: 2\n  steps: [{do: log.log}]\n", []string{
			`f:4:3: max only applies to mode queue or parallel (hint: this rule's mode is restart, which never has more than one run; set mode: queue or parallel, or remove max)`}},
		{"merged rule defaults", plugins, "- &base {id: a, on: x, mode: queue, steps: [{do: log.log}]}\n- <<: *base\n  id: b\n  name: y\n", []string{
			`f:4:3: unknown key "name" in a rule (hint: did you mean id?)`}},
		{"merge cycle", plugins, "- &r\n  id: a\n  <<: *r\n", []string{
			`f:1:3: rule has no on (hint: on lists the topics that trigger it: on: scooter.telemetry)`,
			`f:1:3: rule has no steps (hint: steps lists what the rule does: steps: [{do: log.log, with: {message: hi}}])`,
			`f:3:7: <<: a mapping cannot merge itself (hint: merge a mapping defined outside this one)`}},
		{"a rule that is a list", plugins, "- [id, a]\n", []string{
			`f:1:3: a rule is a mapping of id, description, on, when, mode, max, max-keys, cooldown, debounce, throttle, repeat, cancel-on, priority, key, on-plugin-change, once, on-error, on-pause, retry, vars, states, max-age, steps, finally, got a list`}},
		{"condition of the wrong type", plugins, "- id: a\n  on: x\n  when: [x]\n  steps: [{do: log.log}]\n", []string{
			`f:3:9: when: want an expression or {do: plugin.function, with: {...}}, got a list`}},
		{"condition without do", plugins, "- id: a\n  on: x\n  when: {with: {}}\n  steps: [{do: log.log}]\n", []string{
			`f:3:9: when has no do (hint: do names the condition: do: plugin.function)`}},
		{"long id", plugins, "- id: " + strings.Repeat("a", 65) + "\n  on: x\n  steps: [{do: log.log}]\n", []string{
			`f:1:7: id: "` + strings.Repeat("a", 65) + `" is not a valid name (hint: an id is at most 64 lower-case letters, digits, - and _, starting with a letter or digit)`}},
		{"rules: null", plugins, "rules:\n", nil},
		{"rules: scalar", plugins, "rules: 3\n", []string{`f:1:8: rules: want a list of rules, got an integer`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := ParseFile("f", []byte(tc.yaml), tc.cat)
			checkErrors(t, errs, tc.want)
		})
	}
}

func TestWith(t *testing.T) {
	tests := []struct {
		yaml string
		want string
	}{
		{"", `{}`},
		{"with:", `{}`},
		{"with: {}", `{}`},
		{"with: {b: 1, a: 2, c: {z: 1, y: [2, 1]}}", `{"a":2,"b":1,"c":{"y":[2,1],"z":1}}`},
		{"with: {i: 0x1F, o: 0o17, n: -3, big: 18446744073709551615}", `{"big":18446744073709551615,"i":31,"n":-3,"o":15}`},
		{"with: {f: 1.0, g: -0.0, h: 2.5e-7, k: 1e21, l: 0.1}", `{"f":1.0,"g":-0.0,"h":2.5e-07,"k":1e+21,"l":0.1}`},
		{`with: {s: "a < b & \"c\"", u: "é\t", q: !!str 12, t: 2026-11-30T08:15:00Z}`, `{"q":"12","s":"a < b & \"c\"","t":"2026-11-30T08:15:00Z","u":"é\t"}`},
		{"with: {t: true, f: false, n: null, e: ~}", `{"e":null,"f":false,"n":null,"t":true}`},
		{"with: {a: &x [1, 2], b: *x}", `{"a":[1,2],"b":[1,2]}`},
		{"with: {<<: [{a: 1, b: 1}, {b: 2, c: 2}], c: 3}", `{"a":1,"b":1,"c":3}`},
		{`with: {"<<": 1}`, `{"<<":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.yaml, func(t *testing.T) {
			src := "- id: a\n  on: x\n  steps:\n    - do: log.log\n      " + tc.yaml + "\n"
			rules, errs := ParseFile("f", []byte(src), plugins)
			if len(errs) > 0 || len(rules) != 1 {
				t.Fatalf("got %v", errs)
			}
			if got := string(rules[0].Steps[0].Do.With); got != tc.want {
				t.Errorf("got %s; want %s", got, tc.want)
			}
		})
	}
}

func TestCheckPattern(t *testing.T) {
	tests := []struct {
		pattern string
		ok      bool
	}{
		{"a", true}, {"a.b.c", true}, {"*", true}, {">", true}, {"*.b.>", true}, {"ruled", true},
		{"rules.cmd", true}, {"a-b_c.d:e", true},
		{"", false}, {".a", false}, {"a.", false}, {"a..b", false}, {">.a", false}, {"a.>.>", false},
		{"a*", false}, {"a.>b", false}, {"a b", false}, {"a\tb", false}, {"ruled.x", false}, {"ruled.>", false},
		{"ruled.*", false},
	}
	for _, tc := range tests {
		msg, _ := checkPattern(tc.pattern)
		if got := msg == ""; got != tc.ok {
			t.Errorf("checkPattern(%q) = %q; want ok %v", tc.pattern, msg, tc.ok)
		}
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		word, want string
	}{
		{"delay", "after"}, {"stpes", "steps"}, {"cancel_on", "cancel-on"}, {"wen", "when"},
		{"on_plugin_change", "on-plugin-change"}, {"Mode", "mode"}, {"colour", ""}, {"x", ""},
		{"priorty", "priority"}, {"descripton", "description"}, {"CONDITION", "when"},
	}
	keys := append(append([]string{}, ruleKeys...), stepKeys...)
	for _, tc := range tests {
		if got := suggest(tc.word, keys); got != tc.want {
			t.Errorf("suggest(%q) = %q; want %q", tc.word, got, tc.want)
		}
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{Pos: Pos{"f.yaml", 3, 7}, Msg: "bad", Hint: "fix it"}, "f.yaml:3:7: bad (hint: fix it)"},
		{Error{Pos: Pos{"f.yaml", 3, 7}, Msg: "bad"}, "f.yaml:3:7: bad"},
		{Error{Pos: Pos{"f.yaml", 3, 0}, Msg: "bad"}, "f.yaml:3: bad"},
		{Error{Pos: Pos{File: "f.yaml"}, Msg: "cannot read"}, "f.yaml: cannot read"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q; want %q", got, tc.want)
		}
	}
}

func TestFingerprintFollowsWith(t *testing.T) {
	parse := func(src string) *Step {
		t.Helper()
		rules, errs := ParseFile("f", []byte(src), plugins)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return &rules[0].Steps[0]
	}
	a := parse("- {id: a, on: x, steps: [{do: log.log, with: {message: hi, level: info}}]}")
	b := parse("- id: a\n  on: x\n  steps:\n    - with:\n        level: info\n        message: hi\n      do: log.log\n")
	c := parse("- {id: a, on: x, steps: [{do: log.log, with: {message: hi, level: warn}}]}")
	if a.Fingerprint() != b.Fingerprint() {
		t.Errorf("the same config written differently has fingerprints %s and %s", a.Fingerprint(), b.Fingerprint())
	}
	if a.Fingerprint() == c.Fingerprint() {
		t.Errorf("different configs share fingerprint %s", a.Fingerprint())
	}
}

// TestDocExample keeps the package documentation's example file valid.
func TestDocExample(t *testing.T) {
	rules, errs := ParseFile("doc.go", []byte(docExample(t)), plugins)
	checkErrors(t, errs, nil)
	if len(rules) != 1 || len(rules[0].Steps) != 3 || rules[0].Steps[2].Wait == nil || len(rules[0].VarNames) != 2 {
		t.Errorf("got %d rules; want 1 with 3 steps (a wait-for last) and 2 vars", len(rules))
	}
}

func TestConfigChecker(t *testing.T) {
	cat := &checkingCatalog{fakeCatalog: plugins}
	const src = `- id: a
  on: x
  when: battery <
  steps:
    - do: log.log
      with: {level: warn}
    - do: log.log
    - do: log.log
      with: {message: hi}
    - do: log.nope
      with: {level: warn}
    - do: log.log
      with: {message: .nan}
`
	rules, errs := ParseFile("f", []byte(src), cat)
	checkErrors(t, errs, []string{
		`f:3:18: expression: unexpected token EOF (hint: a condition such as battery < 20 && !charging)`,
		`f:6:13: log.log: config needs message (hint: e.g. {"message": "hi"})`,
		`f:7:11: log.log: config needs message (hint: e.g. {"message": "hi"})`,
		`f:10:11: plugin "log" has no function "nope" (hint: it has log)`,
		`f:13:23: .nan is not a finite number (hint: JSON numbers are finite; quote it to pass it as a string)`,
	})
	if len(rules) != 0 || errs[0].Rule != "a" {
		t.Errorf("got %d rules, rule %q; want none, a", len(rules), errs[0].Rule)
	}
	// Only configs of functions that exist, and that are JSON, are asked
	// about; an expression host/exprcheck refuses is not.
	want := []string{`log.log {"level":"warn"}`, `log.log {}`, `log.log {"message":"hi"}`}
	if fmt.Sprint(cat.asked) != fmt.Sprint(want) {
		t.Errorf("asked about %q; want %q", cat.asked, want)
	}
}

func TestConfigRefused(t *testing.T) {
	tests := []struct{ fn, text, want string }{
		{"hot", `hot: config "above" must be a number, not the string "thirty"`,
			`x.hot refuses this config: "above" must be a number, not the string "thirty"`},
		{"hot", `hot: config needs "above"`, `x.hot refuses this config: needs "above"`},
		{"expr", "expr: unexpected token EOF (1:9)\n | battery <\n | .........^", `x.expr refuses this config: unexpected token EOF (1:9)`},
		{"hot", "too hot", `x.hot refuses this config: too hot`},
		{"hot", "cold: nope", `x.hot refuses this config: cold: nope`},
	}
	for _, tc := range tests {
		if got := ConfigRefused("x", tc.fn, tc.text).Msg; got != tc.want {
			t.Errorf("ConfigRefused(%q, %q) = %q; want %q", tc.fn, tc.text, got, tc.want)
		}
	}
}

// An expression's error is placed where its text is in the file, through
// escapes, block scalars and quoted scalars over several lines.
func TestExpressionErrorPosition(t *testing.T) {
	tests := []struct {
		name, when string // the rule's when: lines, from "  when:"
		line       int    // the line of "matches" in the file
	}{
		{"plain", `  when: battery < 20 && vehicle matches "x"`, 3},
		{"escapes", `  when: "name == \"ab\" && n matches \"x\""`, 3},
		{"unicode escape", `  when: "name == \"\u00e9\" && n matches \"x\""`, 3},
		{"single quoted", `  when: 'name == "ab" && n matches "x"'`, 3},
		{"literal block", "  when: |\n    battery < 20 &&\n      n matches \"x\"", 5},
		{"folded block", "  when: >-\n    battery < 20 &&\n    n matches \"x\"", 5},
		{"quoted over lines", "  when: \"battery < 20 &&\n    n matches \\\"x\\\"\"", 4},
		{"explicit", "  when:\n    do: expr.expr\n    with:\n      expr: |\n        battery < 20 &&\n          n matches \"x\"", 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "- id: a\n  on: x\n" + tc.when + "\n  steps: [{do: log.log, with: {message: hi}}]\n"
			_, errs := ParseFile("f", []byte(src), plugins)
			if len(errs) != 1 {
				t.Fatalf("errors %v", errs)
			}
			line := strings.Split(src, "\n")[tc.line-1]
			col := utf8.RuneCountInString(line[:strings.Index(line, "matches")]) + 1
			if errs[0].Pos.Line != tc.line || errs[0].Pos.Col != col {
				t.Errorf("error at %d:%d (%s); want %d:%d in\n%s", errs[0].Pos.Line, errs[0].Pos.Col, errs[0].Msg, tc.line, col, src)
			}
		})
	}
}

// A step's on-error: stop (the default) or continue.
func TestStepOnError(t *testing.T) {
	const src = `- id: a
  on: x
  steps:
    - do: log.log
      with: {message: hi}
      on-error: continue
    - do: log.log
      with: {message: hi}
    - do: log.log
      with: {message: hi}
      on-error: stop
- id: b
  on: x
  steps:
    - do: log.log
      with: {message: hi}
      on-error: maybe
`
	rules, errs := ParseFile("f", []byte(src), plugins)
	checkErrors(t, errs, []string{
		`f:17:17: on-error: "maybe" is not one of stop, continue (hint: continue goes on to the next step when this one fails; stop (the default) ends the run as failed)`,
	})
	if len(rules) != 1 || !rules[0].Steps[0].ContinueOnError || rules[0].Steps[1].ContinueOnError || rules[0].Steps[2].ContinueOnError {
		t.Fatalf("rules %+v", rules)
	}
}

// TestSource: each rule keeps its text as written — comments inside it,
// a block scalar's lines, the rules: form — and not the comments, blank
// lines or the next document that follow it.
func TestSource(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"two rules", "# file header\n- id: a\n  # why a\n  on: x\n  steps: [{do: log.log}]\n\n# about b\n- id: b\n  on: y\n  steps:\n    - do: log.log\n      with:\n        message: |\n          line one\n\n          line two\n# trailing\n\n",
			[]string{"- id: a\n  # why a\n  on: x\n  steps: [{do: log.log}]\n",
				"- id: b\n  on: y\n  steps:\n    - do: log.log\n      with:\n        message: |\n          line one\n\n          line two\n"}},
		{"rules: form, then another document", "rules:\n  - id: a\n    on: x\n    steps: [{do: log.log}]\n---\n- id: b\n  on: y\n  steps: [{do: log.log}]\n",
			[]string{"  - id: a\n    on: x\n    steps: [{do: log.log}]\n", "- id: b\n  on: y\n  steps: [{do: log.log}]\n"}},
		{"description", "- id: a\n  description: >\n    folded\n    text\n  on: x\n  steps: [{do: log.log}]\n",
			[]string{"- id: a\n  description: >\n    folded\n    text\n  on: x\n  steps: [{do: log.log}]\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, errs := ParseFile("f", []byte(tc.yaml), plugins)
			checkErrors(t, errs, nil)
			var got []string
			for _, r := range rs {
				got = append(got, r.Source)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("sources\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// docExample is the rule file the package documentation shows (its
// tab-indented comment lines).
func docExample(t *testing.T) string { return docExamples(t)[0] }

// docExamples are doc.go's indented blocks, in order.
func docExamples(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var yaml strings.Builder
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//\t"); ok {
			yaml.WriteString(rest + "\n")
		} else if yaml.Len() > 0 {
			out = append(out, yaml.String())
			yaml.Reset()
		}
	}
	return out
}

// TestDocWindowsExample: the windows example parses and checks.
func TestDocWindowsExample(t *testing.T) {
	for _, ex := range docExamples(t) {
		if !strings.HasPrefix(ex, "windows:") {
			continue
		}
		rs, ws, errs := ParseFileWindows("doc.go", []byte(ex), plugins)
		checkErrors(t, errs, nil)
		if _, _, errs := CheckWindows(rs, ws); len(errs) > 0 || len(rs) != 2 || len(ws) != 2 {
			t.Fatalf("%d rules, %d windows: %v", len(rs), len(ws), errs)
		}
		return
	}
	t.Fatal("doc.go has no windows example")
}

// TestManyRulesInOneFile: a file's bound on values is for what aliases
// multiply: 10,000 plain rules in one file (1.6 MB) are all read, and a
// file whose aliases pass the bound is told so once, not followed by a
// problem for each rule the parser no longer reads.
func TestManyRulesInOneFile(t *testing.T) {
	var b strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&b, "- id: r%d\n  on: idle.%d\n  key: vehicle\n  when: battery < 20 && !charging && (speed ?? 0) > %d\n  steps:\n    - do: log.log\n      with: {message: \"{{vehicle}} low\", level: warn}\n", i, i, i)
	}
	rules, errs := ParseFile("many.yaml", []byte(b.String()), nil)
	if len(errs) > 0 || len(rules) != 10_000 {
		t.Fatalf("%d rules, problems %v; want 10,000 and none", len(rules), errs[:min(3, len(errs))])
	}

	laughs, err := os.ReadFile("testdata/bad/laughs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	after := strings.Repeat("- id: later\n  on: a.b\n  steps: [{do: log.log}]\n", 200)
	_, errs = ParseFile("laughs.yaml", append(laughs, after...), nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "expands to more than") {
		t.Errorf("problems %v; want the bound's, once", errs[:min(5, len(errs))])
	}
}
