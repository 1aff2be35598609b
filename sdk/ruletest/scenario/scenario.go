package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/sun"
	"github.com/ruled-dev/ruled/sdk/ruletest"
)

// Scenario is one test: the rules and plugins it loads and the steps it
// takes on the virtual clock.
type Scenario struct {
	Name    string
	File    string // the file it was read from
	Line    int
	Rules   string            // a directory of rule files, absolute
	Plugins map[string]string // name → .wasm file or Go package directory, absolute
	Grants  map[string][]abi.Capability
	Start   time.Time // the virtual clock's start; zero: ruletest.DefaultStart
	// ReplayWindow is the daemon's --replay-window; zero: its default.
	ReplayWindow time.Duration
	// Location is where the daemon is (location:), for the sun; nil:
	// nowhere.
	Location *sun.Location
	// HTTP are the answers to plugins' outbound requests (ruletest.Answer):
	// a scenario reaches no network.
	HTTP  []ruletest.Answer
	Steps []Step
}

// Step is one thing a scenario does. At, when set, first moves the clock
// to Start+At; Kind says what follows.
type Step struct {
	Line int
	At   *time.Duration
	Kind string // one of Kinds

	Events  [][]byte          // publish: JSON objects with a "topic"
	Advance time.Duration     // advance
	Down    time.Duration     // down: the process is down this long, then starts
	Jump    time.Duration     // set-clock: the wall clock is set this far forward (or back), timers keeping theirs
	Plugins map[string]string // replace-plugin: name → new module
	Rules   string            // replace-rules: a directory
	HTTP    []ruletest.Answer // http: the stub's answers from now on
	Command Command           // command
	Replay  Replay            // replay
	Expect  Expect            // expect
}

// Kinds are the steps a scenario takes.
var Kinds = []string{"publish", "advance", "restart", "down", "set-clock", "replace-plugin", "replace-rules", "http", "command", "replay", "expect"}

// Command is an operator's command to a rule.
type Command struct {
	Rule, Do, For string
	Until         *time.Time
}

// Replay feeds a capture's outside events at their recorded offsets and
// expects the rules to publish what the captured daemon published.
type Replay struct {
	Capture string   // the NDJSON file `ruled record` wrote, absolute
	Ignore  []string // payload fields left out of the comparison (timestamps)
}

// Expect checks what happened since the scenario started.
type Expect struct {
	Published []Published
	Actions   []Action
	States    map[string]string         // rule → state
	Runs      map[string]map[string]int // rule → outcome → how many runs
	Stats     map[string]map[string]int // rule → counter (one of StatNames) → value
	Trees     []Tree
	Requests  []Request
	Windows   []Window
}

// Window expects a window's value for a key (none for a window of one
// value): each aggregate given (count, sum, avg …) is the number read, or
// null for one that is nil (avg without events).
type Window struct {
	Line   int
	Window string
	Key    string
	Want   map[string]any
}

// Request expects outbound HTTP requests plugins made to URL (a trailing
// * makes it a prefix), with Method, the Headers given (names without
// case) and Body — a string: the body exactly; anything else: a subset of
// the body's JSON, as Published.Payload.
type Request struct {
	Line    int
	URL     string
	Method  string
	Count   *int
	Headers map[string]string
	Body    any
	At      *time.Duration
}

// StatNames are the rule counters an expectation may name: the daemon's
// RuleStats, counted since it last started.
// The keys each part of a scenario file takes: what the parser accepts,
// and what its JSON Schema (Schema) says, from these same lists.
var (
	scenarioKeys  = []string{"name", "rules", "plugins", "grants", "start", "replay-window", "location", "http", "steps"}
	locationKeys  = []string{"latitude", "longitude", "elevation"}
	stepKeys      = append([]string{"at"}, Kinds...)
	commandKeys   = []string{"rule", "do", "for", "until"}
	replayKeys    = []string{"capture", "ignore"}
	expectKeys    = []string{"published", "actions", "states", "runs", "stats", "tree", "requests", "windows"}
	windowKeys    = []string{"window", "key", "count", "sum", "avg", "min", "max", "first", "last", "per_second", "per_minute"}
	publishedKeys = []string{"topic", "count", "payload", "at"}
	requestKeys   = []string{"url", "method", "count", "headers", "body", "at"}
	actionKeys    = []string{"do", "step", "rule", "count", "config", "event", "keys"}
	treeKeys      = []string{"rule", "outcome", "is"}
	answerKeys    = []string{"url", "status", "body"}
)

// RunOutcomes are how a run may have ended, as runs: counts them
// (runlog's outcomes of a run).
var RunOutcomes = []string{"ok", "failed", "cancelled", "dropped", "running", "interrupted", "unlogged"}

var StatNames = []string{"started", "completed", "failed", "cancelled", "errors", "suppressed", "refused", "dropped", "active", "debounced", "throttled"}

// Published expects events the rules published on Topic (a trailing *
// makes it a prefix).
type Published struct {
	Line    int
	Topic   string
	Count   *int           // exactly this many; nil: at least one
	Payload any            // every field given must be in the event, equal
	At      *time.Duration // only events published at Start+At count
}

// Action expects action calls, selected by Do (plugin.function), Step and
// Rule, whichever are given.
type Action struct {
	Line           int
	Do, Step, Rule string
	Count          *int
	Config, Event  any    // subsets, as Published.Payload
	Keys           string // "same" or "distinct": the calls' idempotency keys
}

// Tree expects the execution tree of a rule's newest run (with Outcome,
// when given) to be Is, in runlog.Render's stable form; spaces between
// words do not matter.
type Tree struct {
	Line          int
	Rule, Outcome string
	Is            string
}

// ParseFile reads the scenarios in a file (YAML documents separated by
// ---). Paths in them are relative to the file. A document that leaves out
// rules, plugins, grants, start or replay-window takes them from the document before it,
// so a file sets its daemon up once.
func ParseFile(path string) ([]*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse reads scenarios from src; name is the file it came from, for
// paths and messages. Every error names the file and line.
func Parse(name string, src []byte) ([]*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var out []*Scenario
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p := &parser{file: name, dir: filepath.Dir(name)}
		if len(out) > 0 {
			p.prev = out[len(out)-1]
		}
		s := p.scenario(&doc)
		if p.err != nil {
			return nil, p.err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no scenario", name)
	}
	return out, nil
}

type parser struct {
	file, dir string
	prev      *Scenario // the document before, whose setup a later one may take
	err       error
}

func (p *parser) fail(n *yaml.Node, format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%s:%d: %s", p.file, n.Line, fmt.Sprintf(format, args...))
	}
}

// fields walks a mapping, refusing keys not in allowed.
func (p *parser) fields(n *yaml.Node, what string, allowed []string, f func(key string, k, v *yaml.Node)) {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n, "%s: want a mapping", what)
		return
	}
	for i := 0; i+1 < len(n.Content) && p.err == nil; i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(allowed, k.Value) {
			p.fail(k, "%s: unknown key %q (want one of %s)", what, k.Value, strings.Join(allowed, ", "))
			return
		}
		f(k.Value, k, v)
	}
}

func (p *parser) str(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode {
		p.fail(n, "%s: want a string", what)
	}
	return n.Value
}

func (p *parser) path(n *yaml.Node, what string) string {
	s := p.str(n, what)
	if s == "" {
		p.fail(n, "%s: empty path", what)
	}
	if filepath.IsAbs(s) {
		return s
	}
	return filepath.Join(p.dir, s)
}

func (p *parser) duration(n *yaml.Node, what string) time.Duration {
	d, err := time.ParseDuration(p.str(n, what))
	if err != nil || d < 0 {
		p.fail(n, "%s: %q is not a duration (like 90s, 2h30m)", what, n.Value)
	}
	return d
}

// location reads location: {latitude, longitude, elevation}.
func (p *parser) location(n *yaml.Node) *sun.Location {
	l := &sun.Location{}
	seen := map[string]bool{}
	p.fields(n, "location", locationKeys, func(key string, _, v *yaml.Node) {
		var f float64
		if err := v.Decode(&f); err != nil {
			p.fail(v, "location: %s: want a number of degrees (metres for elevation)", key)
			return
		}
		seen[key] = true
		switch key {
		case "latitude":
			l.Latitude = f
		case "longitude":
			l.Longitude = f
		case "elevation":
			l.Elevation = f
		}
	})
	if !seen["latitude"] || !seen["longitude"] {
		p.fail(n, "location: want both latitude and longitude")
	} else if err := l.Check(); err != nil {
		p.fail(n, "location: %v", err)
	}
	return l
}

func (p *parser) count(n *yaml.Node, what string) *int {
	var c int
	if err := n.Decode(&c); err != nil || c < 0 {
		p.fail(n, "%s: want a count (0 or more)", what)
	}
	return &c
}

// value decodes a YAML value into what encoding/json would decode from it
// (float64 numbers, map[string]any), for subset matching.
func (p *parser) value(n *yaml.Node, what string) any {
	var v any
	if err := n.Decode(&v); err != nil {
		p.fail(n, "%s: %v", what, err)
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		p.fail(n, "%s: not JSON: %v", what, err)
		return nil
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}

// event reads a publish value: a mapping, or a string of JSON.
func (p *parser) event(n *yaml.Node) []byte {
	var b []byte
	if n.Kind == yaml.ScalarNode {
		b = []byte(n.Value)
	} else {
		var err error
		if b, err = appendEventJSON(nil, n); err != nil {
			p.fail(n, "publish: %v", err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		p.fail(n, "publish: an event is a JSON object")
	} else if t, _ := m["topic"].(string); t == "" {
		p.fail(n, "publish: the event has no \"topic\"")
	}
	return b
}

// appendEventJSON writes a YAML value as the JSON event a client would
// send: numbers as written (20.0 stays a float to the rules, and a large
// int keeps its digits), which a trip through any and encoding/json would
// change (20.0 became 20, 9223372036854775807 lost its last digits).
func appendEventJSON(dst []byte, n *yaml.Node) ([]byte, error) {
	for n.Kind == yaml.AliasNode || n.Kind == yaml.DocumentNode {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		} else if len(n.Content) == 1 {
			n = n.Content[0]
		} else {
			return dst, fmt.Errorf("an empty document")
		}
	}
	var err error
	switch n.Kind {
	case yaml.MappingNode:
		dst = append(dst, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			dst = append(append(dst, k...), ':')
			if dst, err = appendEventJSON(dst, n.Content[i+1]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case yaml.SequenceNode:
		dst = append(dst, '[')
		for i, c := range n.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendEventJSON(dst, c); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		if json.Valid([]byte(n.Value)) {
			return append(dst, n.Value...), nil // as written: 20.0, 12, 1e3
		}
		var f float64 // 0x10, 1_000, +5: YAML's forms JSON has not
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return dst, fmt.Errorf("line %d: %q is not a JSON number", n.Line, n.Value)
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64), nil
	case "!!bool":
		var b bool
		n.Decode(&b)
		return strconv.AppendBool(dst, b), nil
	case "!!null":
		return append(dst, "null"...), nil
	}
	s, _ := json.Marshal(n.Value)
	return append(dst, s...), nil
}

func (p *parser) names(n *yaml.Node, what string) map[string]string {
	out := map[string]string{}
	if n.Kind != yaml.MappingNode {
		p.fail(n, "%s: want a mapping of name: path", what)
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		out[n.Content[i].Value] = p.path(n.Content[i+1], what+" "+n.Content[i].Value)
	}
	return out
}

func (p *parser) scenario(doc *yaml.Node) *Scenario {
	s := &Scenario{File: p.file, Line: doc.Line, Plugins: map[string]string{}, Grants: map[string][]abi.Capability{}}
	p.fields(doc, "scenario", scenarioKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "name":
			s.Name = p.str(v, "name")
		case "rules":
			s.Rules = p.path(v, "rules")
		case "plugins":
			s.Plugins = p.names(v, "plugins")
		case "grants":
			if v.Kind != yaml.MappingNode {
				p.fail(v, "grants: want a mapping of plugin: [capabilities]")
				return
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				var caps []string
				if err := v.Content[i+1].Decode(&caps); err != nil {
					p.fail(v.Content[i+1], "grants: want a list of capabilities")
					return
				}
				for _, c := range caps {
					if !slices.Contains(abi.Capabilities, abi.Capability(c)) {
						p.fail(v.Content[i+1], "grants: unknown capability %q (want one of %v)", c, abi.Capabilities)
						return
					}
					s.Grants[v.Content[i].Value] = append(s.Grants[v.Content[i].Value], abi.Capability(c))
				}
			}
		case "http":
			s.HTTP = p.answers(v)
		case "replay-window":
			if s.ReplayWindow = p.duration(v, "replay-window"); s.ReplayWindow <= 0 {
				p.fail(v, "replay-window: want a duration above 0")
			}
		case "location":
			s.Location = p.location(v)
		case "start":
			t, err := time.Parse(time.RFC3339, p.str(v, "start"))
			if err != nil {
				p.fail(v, "start: want an RFC 3339 time (2026-01-01T08:00:00Z)")
			}
			s.Start = t
		case "steps":
			if v.Kind != yaml.SequenceNode {
				p.fail(v, "steps: want a list")
				return
			}
			for _, n := range v.Content {
				s.Steps = append(s.Steps, p.step(n))
			}
		}
	})
	if p.err != nil {
		return nil
	}
	if pr := p.prev; pr != nil {
		seen := map[string]bool{}
		root := doc.Content[0]
		for i := 0; i < len(root.Content); i += 2 {
			seen[root.Content[i].Value] = true
		}
		if !seen["rules"] {
			s.Rules = pr.Rules
		}
		if !seen["plugins"] {
			s.Plugins = pr.Plugins
		}
		if !seen["grants"] {
			s.Grants = pr.Grants
		}
		if !seen["start"] {
			s.Start = pr.Start
		}
		if !seen["replay-window"] {
			s.ReplayWindow = pr.ReplayWindow
		}
		if !seen["location"] {
			s.Location = pr.Location
		}
		if !seen["http"] {
			s.HTTP = pr.HTTP
		}
	}
	root := doc
	if root.Kind == yaml.DocumentNode {
		root = root.Content[0]
	}
	switch {
	case s.Name == "":
		p.fail(root, "scenario: no name")
	case s.Rules == "":
		p.fail(root, "scenario %s: no rules directory", s.Name)
	case len(s.Steps) == 0:
		p.fail(root, "scenario %s: no steps", s.Name)
	}
	return s
}

func (p *parser) step(n *yaml.Node) Step {
	st := Step{Line: n.Line}
	p.fields(n, "step", stepKeys, func(key string, k, v *yaml.Node) {
		if key == "at" {
			d := p.duration(v, "at")
			st.At = &d
			return
		}
		if st.Kind != "" {
			p.fail(k, "step: both %s and %s; one per step", st.Kind, key)
			return
		}
		st.Kind = key
		switch key {
		case "publish":
			if v.Kind == yaml.SequenceNode {
				for _, e := range v.Content {
					st.Events = append(st.Events, p.event(e))
				}
			} else {
				st.Events = append(st.Events, p.event(v))
			}
		case "advance":
			st.Advance = p.duration(v, "advance")
		case "restart":
			// restart: {down: 25s} is what people write for a restart
			// after an outage: the same step as down: 25s.
			if v.Kind == yaml.MappingNode {
				if len(v.Content) != 2 || v.Content[0].Value != "down" {
					p.fail(v, "restart: want true, or {down: 25s} for a restart after an outage")
					return
				}
				st.Kind = "down"
				if st.Down = p.duration(v.Content[1], "down"); st.Down <= 0 {
					p.fail(v.Content[1], "down: want how long the process is down, above 0 (25s)")
				}
				return
			}
			var b bool
			if v.Decode(&b) != nil || !b {
				p.fail(v, "restart: want true, or {down: 25s} for a restart after an outage")
			}
		case "down":
			if st.Down = p.duration(v, "down"); st.Down <= 0 {
				p.fail(v, "down: want how long the process is down, above 0 (25s)")
			}
		case "set-clock":
			d, err := time.ParseDuration(p.str(v, "set-clock"))
			if err != nil || d == 0 {
				p.fail(v, "set-clock: want how far the wall clock is set, forward or back (-1h, 30m)")
			}
			st.Jump = d
		case "replace-plugin":
			st.Plugins = p.names(v, "replace-plugin")
		case "replace-rules":
			st.Rules = p.path(v, "replace-rules")
		case "http":
			st.HTTP = p.answers(v)
		case "command":
			p.fields(v, "command", commandKeys, func(key string, k, v *yaml.Node) {
				switch key {
				case "rule":
					st.Command.Rule = p.str(v, "rule")
				case "do":
					st.Command.Do = p.str(v, "do")
				case "for":
					st.Command.For = p.duration(v, "for").String()
				case "until":
					t, err := time.Parse(time.RFC3339, p.str(v, "until"))
					if err != nil {
						p.fail(v, "until: want an RFC 3339 time")
					}
					st.Command.Until = &t
				}
			})
			if st.Command.Rule == "" || st.Command.Do == "" {
				p.fail(v, "command: want rule and do (pause, resume, sleep, kill, reset)")
			}
		case "replay":
			if v.Kind == yaml.ScalarNode {
				st.Replay.Capture = p.path(v, "replay")
				return
			}
			p.fields(v, "replay", replayKeys, func(key string, k, v *yaml.Node) {
				switch key {
				case "capture":
					st.Replay.Capture = p.path(v, "capture")
				case "ignore":
					if v.Decode(&st.Replay.Ignore) != nil {
						p.fail(v, "ignore: want a list of payload fields")
					}
				}
			})
			if st.Replay.Capture == "" {
				p.fail(v, "replay: no capture file")
			}
		case "expect":
			st.Expect = p.expect(v)
		}
	})
	if p.err == nil && st.Kind == "" {
		if st.At == nil {
			p.fail(n, "step: nothing to do (want one of %s)", strings.Join(Kinds, ", "))
		} else {
			st.Kind = "advance" // a bare at: moves the clock
		}
	}
	return st
}

func (p *parser) expect(n *yaml.Node) Expect {
	var e Expect
	p.fields(n, "expect", expectKeys, func(key string, k, v *yaml.Node) {
		list := v.Content
		if v.Kind != yaml.SequenceNode {
			list = []*yaml.Node{v}
		}
		switch key {
		case "published":
			for _, n := range list {
				pe := Published{Line: n.Line}
				p.fields(n, "published", publishedKeys, func(key string, k, v *yaml.Node) {
					switch key {
					case "topic":
						pe.Topic = p.str(v, "topic")
					case "count":
						pe.Count = p.count(v, "count")
					case "payload":
						pe.Payload = p.value(v, "payload")
					case "at":
						d := p.duration(v, "at")
						pe.At = &d
					}
				})
				if pe.Topic == "" {
					p.fail(n, "published: no topic")
				}
				e.Published = append(e.Published, pe)
			}
		case "requests":
			for _, n := range list {
				re := Request{Line: n.Line}
				p.fields(n, "requests", requestKeys, func(key string, k, v *yaml.Node) {
					switch key {
					case "url":
						re.URL = p.str(v, "url")
					case "method":
						re.Method = strings.ToUpper(p.str(v, "method"))
					case "count":
						re.Count = p.count(v, "count")
					case "headers":
						if v.Decode(&re.Headers) != nil {
							p.fail(v, "headers: want a mapping of name: value")
						}
					case "body":
						re.Body = p.value(v, "body")
					case "at":
						d := p.duration(v, "at")
						re.At = &d
					}
				})
				if re.URL == "" {
					p.fail(n, "requests: no url")
				}
				e.Requests = append(e.Requests, re)
			}
		case "actions":
			for _, n := range list {
				ae := Action{Line: n.Line}
				p.fields(n, "actions", actionKeys, func(key string, k, v *yaml.Node) {
					switch key {
					case "do":
						ae.Do = p.str(v, "do")
					case "step":
						ae.Step = p.str(v, "step")
					case "rule":
						ae.Rule = p.str(v, "rule")
					case "count":
						ae.Count = p.count(v, "count")
					case "config":
						ae.Config = p.value(v, "config")
					case "event":
						ae.Event = p.value(v, "event")
					case "keys":
						if ae.Keys = p.str(v, "keys"); ae.Keys != "same" && ae.Keys != "distinct" {
							p.fail(v, "keys: want same or distinct")
						}
					}
				})
				if ae.Do == "" && ae.Step == "" && ae.Rule == "" {
					p.fail(n, "actions: say which: do, step or rule")
				}
				e.Actions = append(e.Actions, ae)
			}
		case "states":
			if v.Decode(&e.States) != nil {
				p.fail(v, "states: want a mapping of rule: state")
			}
		case "runs":
			if v.Decode(&e.Runs) != nil {
				p.fail(v, "runs: want a mapping of rule: {outcome: count}")
				return
			}
			for _, outcomes := range e.Runs {
				for o := range outcomes {
					if !slices.Contains(RunOutcomes, o) {
						p.fail(v, "runs: unknown outcome %q (want one of %s; a step's skipped is a node's, in tree:)", o, strings.Join(RunOutcomes, ", "))
						return
					}
				}
			}
		case "stats":
			if v.Decode(&e.Stats) != nil {
				p.fail(v, "stats: want a mapping of rule: {counter: value}")
				return
			}
			for _, counters := range e.Stats {
				for c := range counters {
					if !slices.Contains(StatNames, c) {
						p.fail(v, "stats: unknown counter %q (want one of %s)", c, strings.Join(StatNames, ", "))
						return
					}
				}
			}
		case "windows":
			for _, n := range list {
				we := Window{Line: n.Line, Want: map[string]any{}}
				p.fields(n, "windows", windowKeys, func(key string, k, v *yaml.Node) {
					switch key {
					case "window":
						we.Window = p.str(v, "window")
					case "key":
						we.Key = p.str(v, "key")
					default:
						var x any
						if v.Decode(&x) != nil {
							p.fail(v, "windows: %s: want a number, or null", key)
							return
						}
						switch x := x.(type) {
						case nil:
							we.Want[key] = nil
						case int:
							we.Want[key] = float64(x)
						case float64:
							we.Want[key] = x
						default:
							p.fail(v, "windows: %s: want a number, or null", key)
						}
					}
				})
				if we.Window == "" {
					p.fail(n, "windows: want window (and key, for a window kept per key)")
				}
				e.Windows = append(e.Windows, we)
			}
		case "tree":
			for _, n := range list {
				te := Tree{Line: n.Line}
				p.fields(n, "tree", treeKeys, func(key string, k, v *yaml.Node) {
					switch key {
					case "rule":
						te.Rule = p.str(v, "rule")
					case "outcome":
						te.Outcome = p.str(v, "outcome")
					case "is":
						te.Is = p.str(v, "is")
					}
				})
				if te.Rule == "" || te.Is == "" {
					p.fail(n, "tree: want rule and is")
				}
				e.Trees = append(e.Trees, te)
			}
		}
	})
	return e
}

// answers reads a list of {url, status, body}: the stub's answers, for the
// scenario's http: and for a step that changes them (an endpoint that
// comes back).
func (p *parser) answers(v *yaml.Node) []ruletest.Answer {
	if v.Kind != yaml.SequenceNode {
		p.fail(v, "http: want a list of {url, status, body}")
		return nil
	}
	var out []ruletest.Answer
	for _, n := range v.Content {
		var a ruletest.Answer
		p.fields(n, "http", answerKeys, func(key string, k, v *yaml.Node) {
			switch key {
			case "url":
				a.URL = p.str(v, "url")
			case "status":
				if v.Decode(&a.Status) != nil || a.Status < 100 || a.Status > 599 {
					p.fail(v, "status: want an HTTP status, 100 to 599")
				}
			case "body":
				a.Body = p.str(v, "body")
			}
		})
		out = append(out, a)
	}
	return out
}
