package rules

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ruled-dev/ruled/host/exprcheck"
)

// ref is a name a condition or a config's template reads below steps.,
// vars., states. or previous. (the run's context, abi/ABI.md §4.1), where
// the file says it.
type ref struct {
	root, name string
	// sub is the name below name (states.out.avg: avg), "" when none.
	sub string
	pos Pos
}

// maybeNil warns of each states., previous. or sun. chain an expression
// at compares by order or computes with: nil there — a state missing or
// stale, an entity's first report, no location — fails the condition,
// and a failing condition counts against the rule's error budget.
func (p *parser) maybeNil(at *yaml.Node, src string) {
	ops, err := exprcheck.MaybeNil(src, "states", "previous", "sun")
	if err != nil {
		return
	}
	for _, o := range ops {
		if guarded(src, o.Path) || p.neverNil(o.Path) {
			continue
		}
		w := &Error{Pos: p.textPos(at, src, o.Line, o.Col),
			Msg:  "warning: " + o.Path + " is nil when there is none (" + nilWhen(o.Path) + "), and comparing or computing with nil fails the condition",
			Hint: "give it a default: (" + o.Path + " ?? 0), or test it first: " + o.Path + " != nil && " + o.Path + " > …"}
		if k := w.Error(); !p.reported[k] {
			p.reported[k] = true
			p.warns = append(p.warns, w)
		}
	}
}

// windowAlways are a window's aggregates that are there with no events
// (count 0): sum (of a window without a field), avg, min, max, first and
// last are nil then.
var windowAlways = []string{"count", "per_second", "per_minute", "start", "end"}

// neverNil reports whether path is a window's aggregate that is never
// nil (states.<a window read>.count).
func (p *parser) neverNil(path string) bool {
	parts := strings.Split(path, ".")
	return len(parts) == 3 && parts[0] == "states" && contains(p.windowReads, parts[1]) && contains(windowAlways, parts[2])
}

// guarded reports whether src compares path with nil somewhere (path !=
// nil && path > 1): the author has thought of it.
func guarded(src, path string) bool {
	for rest := src; ; {
		i := strings.Index(rest, path)
		if i < 0 {
			return false
		}
		rest = rest[i+len(path):]
		t := strings.TrimLeft(rest, " \t\n")
		if strings.HasPrefix(t, "!=") || strings.HasPrefix(t, "==") {
			if strings.HasPrefix(strings.TrimLeft(t[2:], " \t\n"), "nil") {
				return true
			}
		}
	}
}

// nilWhen says when a context root's value is missing.
func nilWhen(path string) string {
	switch root, _, _ := strings.Cut(path, "."); root {
	case "previous":
		return "an entity's first report, a schedule's trigger"
	case "sun":
		return "a daemon without a location"
	}
	return "a state never reported, or older than max-age"
}

// contextRoot reports whether root is one of the run's context's.
func contextRoot(root string) bool {
	return root == "steps" || root == "vars" || root == "states" || root == "previous" || root == "sun"
}

// SunFields are what a rule reads below sun.: the sun's place at the
// daemon's location when the call is made.
var SunFields = []string{"elevation", "azimuth", "above_horizon", "rising"}

// exprRefs notes the context names an expression at reads, and warns
// of a value that may be missing where a missing one fails (maybeNil).
func (p *parser) exprRefs(at *yaml.Node, src string) {
	refs, err := exprcheck.Refs(src)
	if err != nil {
		return // reported by checkExpr
	}
	p.maybeNil(at, src)
	for _, r := range refs {
		if contextRoot(r.Root) {
			p.refs = append(p.refs, ref{root: r.Root, name: r.Member, sub: r.Sub, pos: p.textPos(at, src, r.Line, r.Col)})
		}
	}
}

// templateRefs notes the context names the {{path}} placeholders in the
// strings of a with: (or vars:) read. Templates are the SDKs' (sdk/go/tmpl,
// the AssemblyScript SDK's tmpl.ts): every plugin that takes a template
// reads {{path}} the same way, so a path is checked whichever plugin it is.
func (p *parser) templateRefs(n *yaml.Node) { p.templates(n, false) }

// templates is templateRefs; strict, for the rule's own templates (vars:),
// it also refuses a placeholder that is not closed — in a with: that is
// the plugin's to say, since a plugin decides which strings are templates.
func (p *parser) templates(n *yaml.Node, strict bool) {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			p.templates(n.Content[i], strict)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			p.templates(c, strict)
		}
	case yaml.ScalarNode:
		if n.Tag != "!!str" {
			return
		}
		src := n.Value
		for off := 0; ; {
			i := strings.Index(src[off:], "{{")
			if i < 0 {
				return
			}
			j := strings.Index(src[off+i:], "}}")
			if j < 0 {
				if strict {
					line, col := lineCol(src, off+i)
					e := &Error{Pos: p.textPos(n, src, line, col), Msg: "unclosed {{ in a template",
						Hint: "a placeholder is {{path}}, closed by }}"}
					if k := e.Error(); !p.reported[k] {
						p.reported[k] = true
						p.bad = true
						p.errs = append(p.errs, e)
					}
				}
				return
			}
			inner := src[off+i+2 : off+i+j]
			path := strings.TrimSpace(inner)
			root, rest, _ := strings.Cut(path, ".")
			if contextRoot(root) && rest != "" {
				name, sub, _ := strings.Cut(rest, ".")
				sub, _, _ = strings.Cut(sub, ".")
				at := off + i + 2 + strings.Index(inner, path)
				line, col := lineCol(src, at)
				p.refs = append(p.refs, ref{root: root, name: name, sub: sub, pos: p.textPos(n, src, line, col)})
			}
			off += i + j + 2
		}
	}
}

// lineCol is byte offset off of s as a line and a rune column, from 1.
func lineCol(s string, off int) (line, col int) {
	line, col = 1, 1
	for _, r := range s[:off] {
		if r == '\n' {
			line, col = line+1, 1
			continue
		}
		col++
	}
	return line, col
}

// checkRefs holds context names to what the part of the rule that reads
// them (what) can see: the outputs of the steps before it (before, in
// order), the steps that come after it (later), and the rule's variables
// (vars).
func (p *parser) checkRefs(refs []ref, what string, before, later, vars []string) {
	for _, r := range refs {
		var msg, hint string
		switch {
		case r.root == "previous":
			p.readsPrevious = true
			continue
		case r.root == "sun" && contains(SunFields, r.name):
			p.readsSun = true
			continue
		case r.root == "sun":
			msg = fmt.Sprintf("sun.%s: the sun has no %q", r.name, r.name)
			hint = "sun." + strings.Join(SunFields, ", sun.") + " (degrees; true or false)"
			if s := suggest(r.name, SunFields); s != "" {
				hint = "did you mean sun." + s + "? " + hint
			}
		case r.root == "states" && contains(p.windowReads, r.name) && contains(WindowAggregates, r.sub):
			// Whether the window keeps numbers is the directory's to say
			// (CheckWindows).
			p.windowAggs = append(p.windowAggs, WindowAgg{State: r.name, Aggregate: r.sub, Pos: r.pos})
			continue
		case r.root == "states" && contains(p.windowReads, r.name) && r.sub != "" && !contains(WindowAggregates, r.sub):
			msg = fmt.Sprintf("states.%s.%s: a window has no %q", r.name, r.sub, r.sub)
			hint = "a window's value is states." + r.name + "." + strings.Join(WindowAggregates, ", .")
			if s := suggest(r.sub, WindowAggregates); s != "" {
				hint = "did you mean states." + r.name + "." + s + "? " + hint
			}
		case r.root == "states" && contains(p.stateNames, r.name):
			continue
		case r.root == "states":
			msg = fmt.Sprintf("states.%s: the rule reads no state named %q", r.name, r.name)
			hint = "declare it in the rule's states: (" + listOr(p.stateNames, "it has none") + "), e.g. states: {" + r.name + ": <entity id>}"
			if s := suggest(r.name, p.stateNames); s != "" {
				hint = "did you mean states." + s + "? " + hint
			}
		case r.root == "vars" && !contains(vars, r.name) && contains(p.declared, r.name):
			msg = fmt.Sprintf("vars.%s: %s cannot read the rule's variables", r.name, what)
			hint = "variables are worked out from the trigger when a run starts, after the rule's condition; " +
				"read the trigger's own fields here"
		case r.root == "vars" && !contains(vars, r.name):
			msg = fmt.Sprintf("vars.%s: the rule has no variable %q", r.name, r.name)
			hint = "declare it in the rule's vars: (" + listOr(p.declared, "it has none") + ")"
		case r.root != "steps" || contains(before, r.name):
			continue
		case contains(later, r.name):
			msg = fmt.Sprintf("steps.%s: step %q runs after %s, so its output is not there yet", r.name, r.name, what)
			hint = "a step sees the outputs of the steps before it (" + listOr(before, "none: it is the first") + ")"
		default:
			msg = fmt.Sprintf("steps.%s: no step named %q runs before %s", r.name, r.name, what)
			hint = "steps.<name> is the output of an earlier step (" + listOr(before, "none: it is the first") + "), " +
				"never an event's own field named steps (that is read only whole, as steps)"
			if s := suggest(r.name, before); s != "" {
				hint = "did you mean steps." + s + "? " + hint
			}
		}
		e := &Error{Pos: r.pos, Msg: msg, Hint: hint}
		if k := e.Error(); !p.reported[k] {
			p.reported[k] = true
			p.bad = true
			p.errs = append(p.errs, e)
		}
	}
}

// takeRefs returns the refs noted since mark and forgets them.
func (p *parser) takeRefs(mark int) []ref {
	refs := append([]ref(nil), p.refs[mark:]...)
	p.refs = p.refs[:mark]
	return refs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func listOr(list []string, none string) string {
	if len(list) == 0 {
		return none
	}
	return strings.Join(list, ", ")
}

// vars reads the rule's variables: a mapping of names to values whose
// strings are templates over the trigger (abi/tmpl), as a JSON object and
// the names in order.
func (p *parser) vars(e entry) (json.RawMessage, []string) {
	v := resolve(e.value)
	if v.Kind != yaml.MappingNode {
		p.wrongType(e, "a mapping of names to values", false)
		return nil, nil
	}
	if len(v.Content) == 0 {
		p.errorf(e.value, "vars is empty").Hint = "leave vars out for none"
		return nil, nil
	}
	if len(v.Content)/2 > MaxVars {
		p.errorf(e.value, "vars has %d variables; at most %d", len(v.Content)/2, MaxVars).Hint =
			"a run carries its variables in every record it writes: keep them few, or use an earlier step's output"
		return nil, nil
	}
	var names []string
	for i := 0; i+1 < len(v.Content); i += 2 {
		k := v.Content[i]
		if !p.name(entry{name: k.Value, key: k, value: k}, k.Value, "a variable's name") {
			continue
		}
		names = append(names, k.Value)
	}
	out, ok := p.with(e)
	if !ok {
		return nil, nil
	}
	p.templates(e.value, true)
	return out, names
}

// MaxVars bounds a rule's variables.
const MaxVars = 64

// wait reads a wait-for: {topic, match, when, timeout, on-timeout}.
func (p *parser) wait(e entry) *Wait {
	v := resolve(e.value)
	if v.Kind != yaml.MappingNode {
		p.wrongType(e, "{topic, match, when, timeout, on-timeout}", false)
		return nil
	}
	f, ok := p.fields(v, "a wait-for", waitKeys)
	if !ok {
		return nil
	}
	w := &Wait{Continue: true}
	if te, ok := f["topic"]; ok {
		w.Pattern, _ = p.pattern(te)
	} else {
		p.errorf(e.value, "wait-for has no topic").Hint = "topic is the pattern of the event to wait for: topic: flow.sensor"
	}
	if me, has := f["match"]; has {
		for _, fe := range p.stringList(me, "an event field path or a list of them") {
			if path, pok := p.path(fe); pok {
				w.Match = append(w.Match, path)
			}
		}
	}
	if we, has := f["when"]; has {
		w.When = p.condition(we)
	}
	if te, ok := f["timeout"]; ok {
		if d, ok := p.durationZero(te, "a wait-for needs a timeout: how long to wait for its event (timeout: 10m)"); ok {
			if d > MaxWaitTimeout {
				p.errorf(te.value, "timeout %v is longer than a year", d).Hint = "a wait-for waits at most 8784h"
			}
			w.Timeout = d
		}
	} else {
		p.errorf(e.value, "wait-for has no timeout").Hint =
			"timeout bounds the wait (timeout: 10m); on-timeout: continue (the default) goes on without the event, stop ends the run"
	}
	if oe, has := f["on-timeout"]; has {
		if i, ok := p.enum(oe, waitTimeoutNames[:]); ok {
			w.Continue = i == 1
		} else if n := len(p.errs); n > 0 {
			p.errs[n-1].Hint = "continue (the default) goes on to the next step without the event (steps.<name>.timeout is true); stop ends the run there"
		}
	}
	return w
}
