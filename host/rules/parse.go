package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/exprcheck"
)

// maxValues bounds the values one file may expand to through aliases and
// merges (a file larger than it in bytes may hold as many values as its
// bytes: budgetFor). A legitimate file is far below it; without it, ten nested
// aliases of ten ("billion laughs") would keep a daemon busy for minutes.
// A small file gets a smaller budget, valuesPerByte for each of its bytes
// (at least minValues): what parsing allocates then stays a small multiple
// of the file's size, whatever the file (the parser's fuzz target checks
// it).
//
// A config's scalar is charged a value more for each textPerValue bytes it
// writes: an alias repeats a long string as cheaply as a short one, and a
// file of ten nested aliases of a 40-byte string stayed within its count
// of values while writing a thousand times its size (FuzzParseFile).
const (
	maxValues     = 100_000
	minValues     = 1_000
	valuesPerByte = 16
	textPerValue  = 8
)

// budgetFor is the values a file of n bytes may expand to: never below n
// itself, since a file without aliases holds fewer values (and text
// charges) than bytes, so that no plain file meets the bound however many
// rules it holds (10,000 rules in one file met maxValues, and the rules
// past it were refused as if aliases had multiplied them). What a file
// may cost stays bounded by MaxFileSize.
func budgetFor(n int) int { return max(minValues, min(maxValues, valuesPerByte*n), n) }

// maxName bounds ids and step names: they end up in store keys and
// execution ids, which are bounded.
const maxName = 64

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

var (
	fileKeys      = []string{"rules", "windows"}
	ruleKeys      = []string{"id", "description", "on", "when", "mode", "max", "max-keys", "cooldown", "debounce", "throttle", "repeat", "cancel-on", "priority", "key", "on-plugin-change", "once", "on-error", "on-pause", "retry", "vars", "states", "max-age", "steps", "finally"}
	stepKeys      = []string{"name", "do", "with", "when", "after", "durable", "on-error", "retry", "wait-for"}
	retryKeys     = []string{"attempts", "backoff", "max-backoff", "factor", "jitter"}
	debounceKeys  = []string{"for", "max-wait"}
	throttleKeys  = []string{"limit", "per", "burst", "excess"}
	conditionKeys = []string{"do", "with"}
	repeatKeys    = []string{"passes", "interval"}
	onErrorKeys   = []string{"max", "within", "sleep"}
	cancelKeys    = []string{"topic", "match"}
)

// parser reads one file. It records every problem and goes on, so an
// author sees all of them in one pass.
type parser struct {
	file  string
	lines int
	src   [][]byte // the file's lines, to place an error inside a scalar
	cat   Catalog
	// seen holds the rule ids met so far, shared by the files of a LoadDir
	// so that a duplicate across files is reported on the second one.
	seen  map[string]Pos
	rules []*Rule
	errs  []*Error
	// windows are the file's windows: (window.go); windowReads the names
	// of the rule's states that are windows, whose aggregates are known.
	windows     []*Window
	windowReads []string
	windowAggs  []WindowAgg // the rule's reads of windows' aggregates
	// reported keeps one report per place and message: an anchor reached
	// through several aliases or merges is checked each time.
	reported map[string]bool
	// bad says an error was found since the current rule began.
	bad     bool
	budget  int                 // values this file may still expand to
	limit   int                 // its whole budget (budgetFor), for the message
	merging map[*yaml.Node]bool // merge sources being expanded, against cycles
	open    map[*yaml.Node]bool // with values being written, against cycles
	// refs are the context names (steps.x, vars.x) read by the part of the
	// rule being parsed, checked once its steps are known (checkRefs);
	// declared are the rule's variables, for checkRefs' messages.
	refs     []ref
	declared []string
	// warns are the current rule's warnings (Rule.Warnings).
	warns []*Error
	// stateNames are the names of the rule's states: reads;
	// readsPrevious says a part of the rule reads previous.<path>.
	stateNames    []string
	readsPrevious bool
	readsSun      bool
}

// ParseFile parses the rules in one file's data. path is only for
// positions. It returns the valid rules and every problem; a rule with a
// problem is left out, the others are returned. With a nil cat, function
// references are not checked (the format only); with a cat that is also a
// ConfigChecker, every config is checked by its plugin.
func ParseFile(path string, data []byte, cat Catalog) ([]*Rule, []*Error) {
	rs, _, errs := ParseFileWindows(path, data, cat)
	return rs, errs
}

// ParseFileWindows is ParseFile, and the windows the file defines
// (windows:). Whether the rules' windows exist is the directory's to
// say (CheckWindows).
func ParseFileWindows(path string, data []byte, cat Catalog) ([]*Rule, []*Window, []*Error) {
	p := newParser(path, data, cat, map[string]Pos{})
	p.parse(data)
	return p.rules, p.windows, p.errs
}

func newParser(path string, data []byte, cat Catalog, seen map[string]Pos) *parser {
	return &parser{
		file: path, lines: len(lines(data)), src: lines(data), cat: cat, seen: seen,
		reported: map[string]bool{}, budget: budgetFor(len(data)), limit: budgetFor(len(data)),
		merging: map[*yaml.Node]bool{}, open: map[*yaml.Node]bool{},
	}
}

// lines splits data at line breaks as YAML counts them (\n, \r\n, \r, and
// NEL, LS and PS), which are what positions are in.
func lines(data []byte) [][]byte {
	var out [][]byte
	for {
		i := bytes.IndexAny(data, "\r\n\u0085\u2028\u2029")
		if i < 0 {
			return append(out, data)
		}
		_, size := utf8.DecodeRune(data[i:])
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			size = 2
		}
		out = append(out, data[:i])
		data = data[i+size:]
	}
}

func (p *parser) pos(n *yaml.Node) Pos {
	return Pos{File: p.file, Line: n.Line, Col: n.Column}
}

// errorf records a problem at n and returns it, for a hint.
func (p *parser) errorf(n *yaml.Node, format string, args ...any) *Error {
	p.bad = true
	e := &Error{Pos: p.pos(n), Msg: fmt.Sprintf(format, args...)}
	if k := e.Error(); !p.reported[k] {
		p.reported[k] = true
		p.errs = append(p.errs, e)
	}
	return e
}

// spend takes one value from the file's budget, reporting once at n when
// it runs out.
func (p *parser) spend(n *yaml.Node) bool { return p.spendN(n, 1) }

// spendN takes k values from the file's budget, reporting once at n when
// it runs out.
func (p *parser) spendN(n *yaml.Node, k int) bool {
	was := p.budget
	p.budget -= k
	if was >= 0 && p.budget < 0 {
		p.errorf(n, "this file expands to more than %d values", p.limit).Hint =
			"aliases of aliases multiply: each level repeats everything below it"
	}
	return p.budget >= 0
}

// parse reads every YAML document of the file. A syntax error ends the
// stream: the YAML parser cannot resynchronise, so rules after it are not
// read.
func (p *parser) parse(data []byte) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := decode(dec, &doc)
		if err == io.EOF {
			return
		}
		if err != nil {
			p.syntax(err, data)
			return
		}
		if len(doc.Content) > 0 {
			start := len(p.errs)
			p.document(doc.Content[0])
			SortErrors(p.errs[start:])
		}
	}
}

// decode runs the YAML decoder, turning a panic into an error: a rule file
// is input from anyone with write access to the rules directory, and it
// must never take the daemon down.
func decode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("yaml: %v", v)
		}
	}()
	return dec.Decode(n)
}

var lineRE = regexp.MustCompile(`^line (\d+): `)

// parserProblems are the messages of go.yaml.in/yaml/v3's parser (as
// opposed to its scanner). It reports their line 0-based, one line early;
// its scanner errors are right.
var parserProblems = []string{
	"did not find expected <stream-start>", "did not find expected <document start>",
	"did not find expected node content", "did not find expected '-' indicator",
	"did not find expected key", "did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"found undefined tag handle", "found duplicate %YAML directive", "found incompatible YAML document",
	"found duplicate %TAG directive",
}

var anchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// syntax reports a YAML syntax error. The YAML library gives a line but no
// column, so the column is 1.
func (p *parser) syntax(err error, data []byte) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
		if slices.Contains(parserProblems, msg) {
			line++
		}
	} else if m := anchorRE.FindStringSubmatch(msg); m != nil {
		// The library does not say where; the first use is a good guess.
		if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
			line = len(lines(data[:i]))
		}
	}
	if strings.Contains(msg, "found a tab character") {
		// The library names the line it was on when it met the tab, which
		// can be the line before; the first tab among a line's leading
		// white space is where it is.
		if l, ok := firstIndentTab(data, line); ok {
			line = l
		}
	}
	line = min(max(line, 1), p.lines)
	p.bad = true
	e := &Error{Pos: Pos{File: p.file, Line: line, Col: 1}, Msg: "invalid YAML: " + msg,
		Hint: "the rules of this YAML document were not read"}
	if l, col, hint, ok := quoteHint(data, line); ok {
		e.Pos.Line, e.Pos.Col, e.Hint = l, col, hint
	}
	p.errs = append(p.errs, e)
}

// firstIndentTab is the line (from 1) of the first tab in a line's
// indentation, from line from on.
func firstIndentTab(data []byte, from int) (int, bool) {
	for i, l := range lines(data) {
		if i+1 < from {
			continue
		}
		if j := bytes.IndexFunc(l, func(r rune) bool { return r != ' ' && r != '-' }); j >= 0 && l[j] == '\t' {
			return i + 1, true
		}
	}
	return 0, false
}

// textPos places a position (line and column, from 1) within a scalar's
// text — an expression, a schedule — in the file. The
// scalar's own position plus the text's line and column is right for
// a plain scalar on one line; escapes, block scalars (| >) and quoted
// scalars over several lines move the text, so the text at the position
// (up to 12 characters, fewer when that is not found verbatim) is looked
// for in the scalar's lines, and the occurrence nearest the estimate wins.
func (p *parser) textPos(at *yaml.Node, src string, xline, xcol int) Pos {
	est := p.pos(at)
	if xline > 1 {
		est.Line += xline - 1
		est.Col = xcol
	} else {
		est.Col += xcol - 1
		if at.Style == yaml.DoubleQuotedStyle || at.Style == yaml.SingleQuotedStyle {
			est.Col++
		}
	}
	if at.Style == yaml.LiteralStyle || at.Style == yaml.FoldedStyle {
		est.Line++
	}
	rs := []rune(src)
	off, line := 0, 1
	for off < len(rs) && line < xline {
		if rs[off] == '\n' {
			line++
		}
		off++
	}
	off += xcol - 1
	if off < 0 || off >= len(rs) {
		return est
	}
	end := off
	for end < len(rs) && end-off < 12 && rs[end] != '\n' {
		end++
	}
	last := min(len(p.src), at.Line+strings.Count(src, "\n")+2)
	for snippet := string(rs[off:end]); snippet != ""; snippet = string([]rune(snippet)[:utf8.RuneCountInString(snippet)-1]) {
		best, found := est, false
		dist := func(q Pos) int { return abs(q.Line-est.Line)*1000 + abs(q.Col-est.Col) }
		for l := at.Line; l <= last; l++ {
			text := string(p.src[l-1])
			from := 0
			if l == at.Line {
				from = min(len(text), byteOffset(text, at.Column-1))
			}
			for i := strings.Index(text[from:], snippet); i >= 0; {
				q := Pos{File: p.file, Line: l, Col: utf8.RuneCountInString(text[:from+i]) + 1}
				if !found || dist(q) < dist(best) {
					best, found = q, true
				}
				next := strings.Index(text[from+i+1:], snippet)
				if next < 0 {
					break
				}
				i += next + 1
			}
		}
		if found {
			return best
		}
	}
	return est
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// byteOffset is the byte offset of the rune at index n of s (len(s) past its end).
func byteOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// exprLineRE is a line holding an unquoted when: or expr: value.
var exprLineRE = regexp.MustCompile(`^(\s*(?:-\s+)?(?:when|expr):[ \t]+)([^\s|>{\[].*?)\s*$`)

// quoteHint says to quote an expression that YAML read as its own syntax
// (`when: !charging` is a tag, `c ? a : b` a mapping, `'a' == x` a quoted
// scalar and junk): on the error's line or the one before, an unquoted
// when: or expr: whose value holds such a character.
func quoteHint(data []byte, line int) (at, col int, hint string, ok bool) {
	ls := lines(data)
	for _, l := range []int{line, line - 1} {
		if l < 1 || l > len(ls) {
			continue
		}
		m := exprLineRE.FindStringSubmatch(string(ls[l-1]))
		if m == nil {
			continue
		}
		v := m[2]
		quotedJunk := (v[0] == '\'' || v[0] == '"') && (len(v) < 2 || v[len(v)-1] != v[0])
		if !(v[0] == '!' || v[0] == '&' || v[0] == '*' || v[0] == '%' || v[0] == '@' || v[0] == '`' || quotedJunk ||
			strings.Contains(v, ": ") || strings.Contains(v, " #") || strings.HasPrefix(v, "? ")) {
			continue
		}
		q := `"` + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `"`, `\"`) + `"`
		if !strings.Contains(v, "'") {
			q = "'" + v + "'"
		}
		return l, utf8.RuneCountInString(m[1]) + 1, "quote the expression: YAML reads ! : ? # and a leading quote as its own: " +
			strings.TrimSpace(strings.TrimPrefix(m[1], "- ")) + " " + q, true
	}
	return 0, 0, "", false
}

// document reads one document: a list of rules, or a mapping whose
// rules: is that list.
func (p *parser) document(root *yaml.Node) {
	n := resolve(root)
	switch {
	case isNull(n):
		return
	case n.Kind == yaml.SequenceNode:
		p.ruleList(n)
		return
	case n.Kind != yaml.MappingNode:
		p.errorf(root, "a rule file is a list of rules, got %s", kindName(n)).Hint = "start each rule with \"- id: \""
		return
	}
	if !hasKey(n, "rules") && !hasKey(n, "windows") {
		p.errorf(root, "a rule file is a list of rules, or a mapping with rules: (and windows:)").Hint =
			"start each rule with \"- id: \", or put the list under rules:"
		return
	}
	f, _ := p.fields(n, "a rule file", fileKeys)
	if e, ok := f["windows"]; ok {
		p.windowList(e)
	}
	if e, ok := f["rules"]; ok {
		switch v := resolve(e.value); {
		case v.Kind == yaml.SequenceNode:
			p.ruleList(v)
		case !isNull(v):
			p.wrongType(e, "a list of rules", false)
		}
	}
}

func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := resolve(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			return true
		}
	}
	return false
}

func (p *parser) ruleList(n *yaml.Node) {
	for i, item := range n.Content {
		if p.budget < 0 {
			return // told once (spendN); the rules after it are not read
		}
		if r := p.rule(item); r != nil {
			var next *yaml.Node
			if i+1 < len(n.Content) {
				next = n.Content[i+1]
			}
			r.Source = p.source(item, next)
			p.rules = append(p.rules, r)
		}
	}
}

// maxSource bounds a rule's Source: a console shows it, nothing runs it.
const maxSource = 64 << 10

// source is the text of the list item n, from its line to the line
// before next (the list's next item; nil for the last, which ends at its
// deepest node's line and the more-indented lines after it: a block
// scalar's), without the blank and comment lines it ends with.
func (p *parser) source(n, next *yaml.Node) string {
	first := n.Line
	last := len(p.src)
	if next != nil {
		last = next.Line - 1
	} else {
		last = deepestLine(n, map[*yaml.Node]bool{})
		for l := last + 1; l <= len(p.src); l++ {
			t := bytes.TrimLeft(p.src[l-1], " ")
			if len(t) == 0 {
				continue
			}
			if len(p.src[l-1])-len(t) < n.Column-1 || bytes.HasPrefix(t, []byte("---")) {
				break
			}
			last = l
		}
	}
	for last > first {
		t := bytes.TrimSpace(p.src[last-1])
		if len(t) > 0 && t[0] != '#' {
			break
		}
		last--
	}
	if first < 1 || first > len(p.src) || last < first {
		return ""
	}
	var b strings.Builder
	for l := first; l <= min(last, len(p.src)); l++ {
		if b.Len()+len(p.src[l-1]) > maxSource {
			b.WriteString("…\n")
			break
		}
		b.Write(p.src[l-1])
		b.WriteByte('\n')
	}
	return b.String()
}

// deepestLine is the last line a node under n starts on (aliases not
// followed: their anchor is elsewhere in the file).
func deepestLine(n *yaml.Node, seen map[*yaml.Node]bool) int {
	if n == nil || seen[n] {
		return 0
	}
	seen[n] = true
	line := n.Line
	for _, c := range n.Content {
		line = max(line, deepestLine(c, seen))
	}
	return line
}

// rule reads one rule and returns it, or nil if it has any problem. Every
// problem found in it is tagged with its id.
func (p *parser) rule(n *yaml.Node) *Rule {
	start := len(p.errs)
	p.bad = false
	r := &Rule{Pos: p.pos(resolve(n)), Max: 10, MaxKeys: DefaultMaxKeys, Repeat: Repeat{Passes: 1}}
	defer func() {
		for _, e := range p.errs[start:] {
			if e.Rule == "" {
				e.Rule = r.ID
			}
		}
	}()
	f, ok := p.fields(n, "a rule", ruleKeys)
	if !ok {
		return nil
	}
	p.id(r, n, f)
	if e, ok := f["on"]; ok {
		p.triggers(r, e)
	} else {
		p.errorf(n, "rule has no on").Hint = "on lists the topics that trigger it: on: scooter.telemetry"
	}
	p.stateNames, p.readsPrevious, p.readsSun, p.warns, p.windowReads, p.windowAggs = nil, false, false, nil, nil, nil
	if e, ok := f["states"]; ok {
		r.States = p.states(e, p.maxAge(f))
		p.stateNames = stateNames(r.States)
		p.windowReads = p.windowReads[:0]
		for _, sr := range r.States {
			if sr.Window != "" {
				p.windowReads = append(p.windowReads, sr.Name)
			}
		}
	} else {
		p.maxAge(f)
	}
	mark := len(p.refs)
	if e, ok := f["when"]; ok {
		r.When = p.condition(e)
	}
	whenRefs := p.takeRefs(mark)
	p.concurrency(r, f)
	p.options(r, f)
	if e, ok := f["retry"]; ok {
		r.Retry = p.retry(e)
	}
	var varsRefs []ref
	if e, ok := f["vars"]; ok {
		mark := len(p.refs)
		r.Vars, r.VarNames = p.vars(e)
		varsRefs = p.takeRefs(mark)
	}
	p.declared = r.VarNames
	if e, ok := f["steps"]; ok {
		r.Steps = p.steps(e, r.Retry, r.VarNames)
	} else {
		p.errorf(n, "rule has no steps").Hint = "steps lists what the rule does: steps: [{do: log.log, with: {message: hi}}]"
	}
	p.checkRefs(whenRefs, "the rule's condition (it runs before any step)", nil, stepNames(r.Steps), nil)
	p.checkRefs(varsRefs, "the rule's vars (they are worked out from the trigger when a run starts)", nil, stepNames(r.Steps), nil)
	if e, ok := f["finally"]; ok {
		r.Finally = p.finally(e, r.Steps, r.VarNames)
	}
	p.onPause(r, f)
	r.ReadsPrevious, r.ReadsSun = p.readsPrevious, p.readsSun
	r.WindowAggs = p.windowAggs
	if onlySchedules := len(r.On) == 0 && len(r.Changes) == 0; onlySchedules && r.ReadsPrevious {
		p.warns = append(p.warns, &Error{Pos: r.Pos, Msg: "warning: the rule reads previous., and only schedules trigger it: a schedule's event has no entity, so previous is always nil",
			Hint: "read an entity's state by name instead: states: {door: door.front}, then states.door.<path>"})
	} else if onlySchedules {
		for _, sr := range r.States {
			if strings.Contains(sr.Entity, "{{") {
				p.warns = append(p.warns, &Error{Pos: sr.Pos, Msg: "warning: state " + sr.Name + "'s entity " + sr.Entity +
					" is filled from the trigger, and only schedules trigger the rule: a schedule's event has none of its fields",
					Hint: "name the entity whole: " + sr.Name + ": window.kitchen"})
			}
		}
	}
	for _, w := range p.warns {
		w.Rule = r.ID
	}
	r.Warnings = p.warns
	if p.bad {
		return nil
	}
	return r
}

// options reads the rule's optional settings.
func (p *parser) options(r *Rule, f map[string]entry) {
	if e, ok := f["description"]; ok {
		r.Description, _ = p.str(e)
	}
	if e, ok := f["max-keys"]; ok {
		if n, ok := p.int(e, 1); ok {
			if n > MaxMaxKeys {
				p.errorf(e.value, "max-keys: at most %d, got %d", MaxMaxKeys, n)
			} else {
				r.MaxKeys = n
			}
		}
	}
	if e, ok := f["cooldown"]; ok {
		r.Cooldown, _ = p.duration(e)
	}
	if e, ok := f["debounce"]; ok {
		r.Debounce = p.debounce(e)
	}
	if e, ok := f["throttle"]; ok {
		r.Throttle = p.throttle(e)
	}
	if e, ok := f["repeat"]; ok {
		r.Repeat = p.repeat(e)
	}
	if e, ok := f["cancel-on"]; ok {
		r.CancelOn = p.cancels(e)
	}
	if e, ok := f["priority"]; ok {
		r.Priority, _ = p.int(e, 0)
	}
	if e, ok := f["key"]; ok {
		r.Key, _ = p.path(e)
	} else if len(r.Changes) > 0 && len(r.On) == 0 && len(r.Schedules) == 0 {
		// A rule heard only through change triggers counts its runs by
		// topic: two doors' holds coming due together are two runs, not
		// one and a turn-away (mode single).
		r.Key = "topic"
	} else if len(r.Closes) > 0 && len(r.Changes) == 0 && len(r.On) == 0 && len(r.Schedules) == 0 {
		// A rule heard only through windows' closes counts its runs by
		// the close's key: each meter's hour is a run of its own, not a
		// turn-away of every key's but the first (mode single).
		r.Key = "key"
	}
	if e, ok := f["on-plugin-change"]; ok {
		i, _ := p.enum(e, pluginChangeNames[:])
		r.OnPluginChange = PluginChange(i)
	}
	if e, ok := f["once"]; ok {
		r.Once, _ = p.bool(e)
	}
	if e, ok := f["on-error"]; ok {
		r.OnError = p.onError(e)
	}
}

// throttle reads throttle: {limit, per, burst, excess}.
func (p *parser) throttle(e entry) Throttle {
	const hint = "throttle: {limit: 10, per: 1m, burst: 20, excess: queue}: at most 10 runs a minute per key, 20 at once after a quiet time"
	var t Throttle
	v := resolve(e.value)
	if v.Kind != yaml.MappingNode {
		p.wrongType(e, "{limit, per, burst, excess}", false).Hint = hint
		return t
	}
	f, _ := p.fields(v, "throttle", throttleKeys)
	le, hasLimit := f["limit"]
	pe, hasPer := f["per"]
	if !hasLimit || !hasPer {
		p.errorf(v, "throttle needs limit and per").Hint = hint
		return t
	}
	t.Limit, _ = p.int(le, 1)
	t.Per, _ = p.duration(pe)
	t.Burst = t.Limit
	if be, ok := f["burst"]; ok {
		t.Burst, _ = p.int(be, 1)
	}
	if xe, ok := f["excess"]; ok {
		if i, ok := p.enum(xe, []string{"queue", "drop"}); ok {
			t.Drop = i == 1
		}
	}
	return t
}

// debounce reads debounce: a quiet period, or {for, max-wait}.
func (p *parser) debounce(e entry) Debounce {
	const hint = "debounce: 30s, or debounce: {for: 30s, max-wait: 5m}: a run starts once the key's triggers have stopped for 30s, with the last"
	var d Debounce
	v := resolve(e.value)
	if v.Kind == yaml.ScalarNode {
		d.For, _ = p.duration(e)
		return d
	}
	if v.Kind != yaml.MappingNode {
		p.wrongType(e, "a duration or {for, max-wait}", false).Hint = hint
		return d
	}
	f, _ := p.fields(v, "debounce", debounceKeys)
	fe, ok := f["for"]
	if !ok {
		p.errorf(v, "debounce has no for").Hint = hint
		return d
	}
	d.For, _ = p.duration(fe)
	if me, ok := f["max-wait"]; ok {
		if mw, ok := p.duration(me); ok {
			d.MaxWait = mw
			if mw < d.For {
				p.errorf(me.value, "max-wait: %v is shorter than for: %v", mw, d.For).Hint =
					"max-wait bounds how long a burst can hold its run back, so it is at least for"
			}
		}
	}
	return d
}

// onPause reads on-pause: drop, hold, or {hold: N}. Without it, a rule
// with a durable step holds (its events were acknowledged as kept) and
// any other drops.
func (p *parser) onPause(r *Rule, f map[string]entry) {
	e, ok := f["on-pause"]
	if !ok {
		// A durable rule's events were acknowledged as kept, and a
		// schedule's occurrences were due: neither is dropped by default.
		for _, st := range r.Steps {
			if st.Keeps() || len(r.Schedules) > 0 {
				r.OnPause = PauseTriggers{Hold: true, Max: DefaultHold}
			}
		}
		return
	}
	switch v := resolve(e.value); v.Kind {
	case yaml.ScalarNode:
		if i, ok := p.enum(e, []string{"drop", "hold"}); ok && i == 1 {
			r.OnPause = PauseTriggers{Hold: true, Max: DefaultHold}
		}
	case yaml.MappingNode:
		g, _ := p.fields(v, "on-pause", []string{"hold"})
		if he, ok := g["hold"]; ok {
			if n, ok := p.int(he, 1); ok {
				r.OnPause = PauseTriggers{Hold: true, Max: n}
			}
		} else {
			p.errorf(v, "on-pause: a mapping needs hold").Hint = "on-pause: {hold: 100} keeps up to 100 triggers"
		}
	default:
		p.wrongType(e, "drop, hold or {hold: N}", false)
	}
}

// onError reads on-error: {max, within, sleep}, the rule's error budget.
func (p *parser) onError(e entry) ErrorBudget {
	var b ErrorBudget
	v := resolve(e.value)
	if v.Kind != yaml.MappingNode {
		p.wrongType(e, "{max, within, sleep}", false)
		return b
	}
	f, _ := p.fields(v, "on-error", onErrorKeys)
	if me, ok := f["max"]; ok {
		b.Max, _ = p.int(me, 1)
	}
	if we, ok := f["within"]; ok {
		b.Within, _ = p.duration(we)
	}
	if se, ok := f["sleep"]; ok {
		b.Sleep, _ = p.duration(se)
	}
	return b
}

// id reads the rule's id and claims it: a second rule with the same id,
// in this file or a later one, is the error.
func (p *parser) id(r *Rule, n *yaml.Node, f map[string]entry) {
	e, ok := f["id"]
	if !ok {
		p.errorf(n, "rule has no id").Hint = "every rule needs a unique id, such as id: low-battery"
		return
	}
	id, ok := p.str(e)
	if !ok || !p.name(e, id, "an id") {
		return
	}
	r.ID = id
	if first, dup := p.seen[id]; dup {
		p.errorf(e.value, "rule id %q is already used", id).Hint = "first used at " + first.String()
		return
	}
	p.seen[id] = p.pos(e.value)
}

// name checks an id or step name: lower case so that ids are the same on
// every file system and in every store key.
func (p *parser) name(e entry, s, what string) bool {
	if len(s) > maxName || !nameRE.MatchString(s) {
		p.errorf(e.value, "%s: %q is not a valid name", e.name, s).Hint = fmt.Sprintf(
			"%s is at most %d lower-case letters, digits, - and _, starting with a letter or digit", what, maxName)
		return false
	}
	return true
}

// concurrency reads mode and max. max only bounds queued and parallel runs,
// so a max on a single or restart rule is a misunderstanding worth saying.
func (p *parser) concurrency(r *Rule, f map[string]entry) {
	if e, ok := f["mode"]; ok {
		i, _ := p.enum(e, modeNames[:])
		r.Mode = Mode(i)
	}
	e, ok := f["max"]
	if !ok {
		return
	}
	r.Max, _ = p.int(e, 1)
	if r.Mode == ModeSingle || r.Mode == ModeRestart {
		p.errorf(e.key, "max only applies to mode queue or parallel").Hint = fmt.Sprintf(
			"this rule's mode is %s, which never has more than one run; set mode: queue or parallel, or remove max", r.Mode)
	}
}

// repeat reads repeat: a number of passes, or {passes, interval}.
func (p *parser) repeat(e entry) Repeat {
	rp := Repeat{Passes: 1}
	v := resolve(e.value)
	if v.Kind == yaml.ScalarNode && v.Tag == "!!int" {
		rp.Passes, _ = p.int(e, 1)
		return rp
	}
	if v.Kind != yaml.MappingNode {
		p.wrongType(e, "a number of passes or {passes, interval}", false)
		return rp
	}
	f, _ := p.fields(v, "repeat", repeatKeys)
	if pe, ok := f["passes"]; ok {
		rp.Passes, _ = p.int(pe, 1)
	}
	if ie, ok := f["interval"]; ok {
		rp.Interval, _ = p.duration(ie)
	}
	return rp
}

func (p *parser) pattern(e entry) (Pattern, bool) {
	s, ok := p.str(e)
	if !ok {
		return "", false
	}
	if msg, hint := checkPattern(s); msg != "" {
		p.errorf(e.value, "%s: %s", e.name, msg).Hint = hint
		return "", false
	}
	return Pattern(s), true
}

// cancels reads cancel-on: a pattern, a list of patterns, or a list of
// {topic, match} (a single {topic, match} is taken too).
func (p *parser) cancels(e entry) []Cancel {
	v := resolve(e.value)
	items := []*yaml.Node{e.value}
	switch {
	case v.Kind == yaml.SequenceNode && len(v.Content) > 0:
		items = v.Content
	case v.Kind == yaml.SequenceNode:
		p.errorf(e.value, "%s is an empty list", e.name).Hint = "leave cancel-on out for none"
		return nil
	}
	var out []Cancel
	for _, item := range items {
		ie := entry{e.name, e.key, item}
		if resolve(item).Kind == yaml.MappingNode {
			if c, ok := p.cancel(ie); ok {
				out = append(out, c)
			}
			continue
		}
		if resolve(item).Kind != yaml.ScalarNode || resolve(item).Tag != "!!str" {
			p.wrongType(ie, "a topic pattern or {topic, match}", true)
			continue
		}
		if pat, ok := p.pattern(ie); ok {
			out = append(out, Cancel{Pattern: pat})
		}
	}
	return out
}

func (p *parser) cancel(e entry) (Cancel, bool) {
	var c Cancel
	f, _ := p.fields(e.value, "a cancel-on entry", cancelKeys)
	te, ok := f["topic"]
	if !ok {
		p.errorf(e.value, "cancel-on entry has no topic").Hint = "topic is the pattern of the cancelling events"
		return c, false
	}
	c.Pattern, ok = p.pattern(te)
	if me, has := f["match"]; has {
		for _, fe := range p.stringList(me, "an event field path or a list of them") {
			if path, pok := p.path(fe); pok {
				c.Match = append(c.Match, path)
			}
		}
	}
	return c, ok
}

// path reads an event field path, such as "vehicle" or "battery.level".
func (p *parser) path(e entry) (string, bool) {
	s, ok := p.str(e)
	if !ok {
		return "", false
	}
	if msg := checkPath(s); msg != "" {
		p.errorf(e.value, "%s: %q is not a field path: %s", e.name, s, msg).Hint =
			`a path joins keys with dots, e.g. vehicle or battery.level; "~1" is a dot in a key, "~0" a tilde`
		return "", false
	}
	return s, true
}

// retry reads retry: a number of attempts, or {attempts, backoff,
// max-backoff, factor, jitter}; what it leaves out takes the defaults.
func (p *parser) retry(e entry) Retry {
	rt := Retry{Attempts: 1, Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff, Factor: DefaultFactor, Jitter: DefaultJitter}
	const hint = "retry: 5, or retry: {attempts: 5, backoff: 1s, max-backoff: 5m, factor: 2, jitter: 0.2}; attempts counts the first try"
	v := resolve(e.value)
	if v.Kind == yaml.ScalarNode && v.Tag == "!!int" {
		rt.Attempts, _ = p.attempts(e)
		return rt
	}
	if v.Kind != yaml.MappingNode {
		p.wrongType(e, "a number of attempts or {attempts, backoff, max-backoff, factor, jitter}", false).Hint = hint
		return rt
	}
	f, _ := p.fields(v, "retry", retryKeys)
	ae, ok := f["attempts"]
	if !ok {
		p.errorf(v, "retry has no attempts").Hint = hint
	} else {
		rt.Attempts, _ = p.attempts(ae)
	}
	if be, ok := f["backoff"]; ok {
		rt.Backoff, _ = p.durationZero(be, "the wait before the second attempt; leave backoff out for the default, 1s")
		if _, has := f["max-backoff"]; !has {
			rt.MaxBackoff = max(rt.MaxBackoff, rt.Backoff)
		}
	}
	if me, ok := f["max-backoff"]; ok {
		if d, ok := p.durationZero(me, "the longest wait between attempts; leave max-backoff out for the default, 5m"); ok {
			rt.MaxBackoff = d
			if d < rt.Backoff {
				p.errorf(me.value, "max-backoff: %v is below backoff %v", d, rt.Backoff).Hint =
					"max-backoff caps the growing wait, so it is at least backoff"
			}
		}
	}
	if fe, ok := f["factor"]; ok {
		rt.Factor, _ = p.float(fe, 1, 10, "factor multiplies the wait after each attempt: 1 keeps it the same, 2 doubles it")
	}
	if je, ok := f["jitter"]; ok {
		rt.Jitter, _ = p.float(je, 0, 1, "jitter takes up to that share off each wait at random, so retries of many runs spread out: 0.2 is up to 20%")
	}
	return rt
}

// attempts reads retry's attempts: 1 to MaxAttempts.
func (p *parser) attempts(e entry) (int, bool) {
	const hint = "attempts counts every try, the first included: 1 does not retry"
	v := resolve(e.value)
	var n int
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&n) != nil {
		p.wrongType(e, "a whole number of attempts", false).Hint = hint
		return 1, false
	}
	if n < 1 || n > MaxAttempts {
		p.errorf(e.value, "%s: want 1 to %d, got %s", e.name, MaxAttempts, v.Value).Hint = hint
		return 1, false
	}
	return n, true
}

// finally reads the finally steps: steps of their own kind (finallyKeys),
// named apart from the rule's steps, an unnamed one "finally-<index>".
func (p *parser) finally(e entry, steps []Step, vars []string) []Step {
	v := resolve(e.value)
	if v.Kind != yaml.SequenceNode {
		p.wrongType(e, "a list of steps", false)
		return nil
	}
	if len(v.Content) == 0 {
		p.errorf(e.value, "finally is an empty list").Hint = "leave finally out for none"
		return nil
	}
	names := map[string]string{}
	for _, st := range steps {
		names[st.Name] = "step " + st.Name
	}
	out := make([]Step, 0, len(v.Content))
	for i, n := range v.Content {
		s := Step{Name: "finally-" + strconv.Itoa(i), Index: i, Pos: p.pos(resolve(n))}
		f, ok := p.fieldsBut(n, "a finally step", finallyKeys, []string{"after", "durable", "retry", "on-error", "wait-for"},
			"finally steps run at once when the run ends, each whatever the one before did; a finally step takes "+
				strings.Join(finallyKeys, ", "))
		if !ok {
			continue
		}
		ne, named := f["name"]
		if named {
			if name, ok := p.str(ne); ok && p.name(ne, name, "a step name") {
				s.Name = name
			}
		}
		// An unnamed one is called finally-<index>: that name must be free
		// too, or two steps share a name and an idempotency key.
		if first, dup := names[s.Name]; dup {
			if named {
				p.errorf(ne.value, "step name %q is already used", s.Name).Hint = first +
					" has it; a finally step's name is unique among the rule's steps and finally steps"
			} else {
				p.errorf(n, "this unnamed finally step is called %q, and so is %s", s.Name, first).Hint =
					"give one of them another name: two steps of a run must not share a name (nor their idempotency keys)"
			}
		}
		names[s.Name] = "finally step " + strconv.Itoa(i)
		mark := len(p.refs)
		if de, ok := f["do"]; ok {
			s.Do, _ = p.call(de, f, abi.KindAction)
		} else if !hasKey(n, "wait-for") { // refused above, with why
			p.errorf(n, "finally step has no do").Hint = "do names the action to run: do: plugin.function"
		}
		if we, ok := f["when"]; ok {
			s.When = p.condition(we)
		}
		// A finally step sees the outputs of the run's steps that ran and of
		// the finally steps before it.
		before := append(stepNames(steps), stepNames(out)...)
		p.checkRefs(p.takeRefs(mark), "finally step "+s.Name, before, nil, vars)
		out = append(out, s)
	}
	return out
}

// steps reads the step list and names the steps; def is the rule's retry,
// a step's default.
func (p *parser) steps(e entry, def Retry, vars []string) []Step {
	v := resolve(e.value)
	if v.Kind != yaml.SequenceNode {
		p.wrongType(e, "a list of steps", false)
		return nil
	}
	if len(v.Content) == 0 {
		p.errorf(e.value, "steps is an empty list").Hint = "a rule needs at least one step"
		return nil
	}
	steps := make([]Step, 0, len(v.Content))
	names := map[string]int{}
	refs := make([][]ref, len(v.Content))
	for i, n := range v.Content {
		mark := len(p.refs)
		s, nameNode := p.step(n, i, def)
		refs[i] = p.takeRefs(mark)
		if first, dup := names[s.Name]; dup && nameNode != nil {
			p.errorf(nameNode, "step name %q is already used", s.Name).Hint = fmt.Sprintf("step %d has it; names are unique within a rule", first)
		}
		names[s.Name] = i
		steps = append(steps, s)
	}
	all := stepNames(steps)
	for i := range steps {
		p.checkRefs(refs[i], "step "+steps[i].Name, all[:i], all[i+1:], vars)
	}
	return steps
}

// stepNames are the names of steps, in order.
func stepNames(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Name
	}
	return out
}

// step reads step i. It also returns the node of its explicit name, nil
// for an unnamed step.
func (p *parser) step(n *yaml.Node, i int, def Retry) (Step, *yaml.Node) {
	s := Step{Name: strconv.Itoa(i), Index: i, Pos: p.pos(resolve(n)), Retry: def}
	f, ok := p.fields(n, "a step", stepKeys)
	if !ok {
		return s, nil
	}
	var nameNode *yaml.Node
	if e, ok := f["name"]; ok {
		if name, ok := p.str(e); ok && p.name(e, name, "a step name") {
			nameNode = e.value
			p.stepName(e, name, i)
			s.Name = name
		}
	}
	if we, ok := f["wait-for"]; ok {
		for _, k := range waitStepRefused {
			if e, has := f[k]; has {
				p.errorf(e.key, "%s: a wait-for step does not take it", k).Hint =
					"a wait-for step waits for an event; it takes name, when (whether to wait at all) and wait-for: " +
						"{topic, match, when, timeout, on-timeout}; put the action in a step of its own after it"
			}
		}
		s.Wait = p.wait(we)
		if e, ok := f["when"]; ok {
			s.When = p.condition(e)
		}
		return s, nameNode
	}
	if e, ok := f["do"]; ok {
		s.Do, _ = p.call(e, f, abi.KindAction)
	} else {
		p.errorf(n, "step has no do").Hint = "do names the action to run: do: plugin.function; or wait-for: {topic, timeout} waits for an event"
	}
	if e, ok := f["when"]; ok {
		s.When = p.condition(e)
	}
	if e, ok := f["after"]; ok {
		s.After, _ = p.duration(e)
	}
	if e, ok := f["on-error"]; ok {
		if i, ok := p.enum(e, stepOnErrorNames[:]); ok {
			s.ContinueOnError = i == 1
		} else if n := len(p.errs); n > 0 {
			p.errs[n-1].Hint = "continue goes on to the next step when this one fails; stop (the default) ends the run as failed"
		}
	}
	if e, ok := f["retry"]; ok {
		s.Retry = p.retry(e)
	}
	if e, ok := f["durable"]; ok {
		s.Durable, _ = p.bool(e)
		if _, after := f["after"]; s.Durable && !after {
			p.errorf(e.value, "durable: true needs after").Hint =
				"only a delayed step waits, so only a step with after: has anything to keep across a restart"
		}
	}
	return s, nameNode
}

// stepName refuses an explicit name that reads as another step's index:
// unnamed steps are called by their index, so "1" on step 0 would name two
// steps, today or after the next edit.
func (p *parser) stepName(e entry, name string, i int) {
	if strings.Trim(name, "0123456789") == "" && name != strconv.Itoa(i) {
		p.errorf(e.value, "step name %q looks like the index of another step", name).Hint =
			"unnamed steps are called by their index; give this one a name with a letter in it"
	}
}

// condition reads a when: an expression string (shorthand for the expr
// plugin) or {do, with}.
func (p *parser) condition(e entry) *Call {
	v := resolve(e.value)
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!str":
		return p.expr(e, v.Value)
	case v.Kind != yaml.MappingNode:
		p.wrongType(e, "an expression or {do: plugin.function, with: {...}}", true)
		return nil
	}
	f, _ := p.fields(v, "a condition", conditionKeys)
	de, ok := f["do"]
	if !ok {
		p.errorf(e.value, "%s has no do", e.name).Hint = "do names the condition: do: plugin.function"
		return nil
	}
	c, ok := p.call(de, f, abi.KindCondition)
	if !ok {
		return nil
	}
	return &c
}

// expr turns the shorthand `when: "battery < 20"` into the condition it
// means: an expression the host checks here and evaluates itself, so it
// needs no plugin loaded.
func (p *parser) expr(e entry, src string) *Call {
	if strings.TrimSpace(src) == "" {
		p.errorf(e.value, "%s: the expression is empty", e.name).Hint = "leave " + e.name + " out for no condition"
		return nil
	}
	c := &Call{Plugin: "expr", Function: "expr", Pos: p.pos(e.value), WithPos: p.pos(e.value), Expr: src}
	c.With = append(abi.AppendJSONString([]byte(`{"expr":`), src), '}')
	if p.checkExpr(e.value, src) {
		p.exprRefs(e.value, src)
	}
	return c
}

// call reads do: plugin.function and the with: beside it in f.
func (p *parser) call(do entry, f map[string]entry, want abi.Kind) (Call, bool) {
	var c Call
	s, ok := p.str(do)
	if !ok {
		return c, false
	}
	c.Pos, c.WithPos = p.pos(do.value), p.pos(do.value)
	dot := strings.LastIndexByte(s, '.')
	if dot <= 0 || dot == len(s)-1 {
		p.errorf(do.value, "do: %q is not plugin.function", s).Hint = "name the plugin and its function, e.g. do: publish.publish"
		return c, false
	}
	c.Plugin, c.Function = s[:dot], s[dot+1:]
	found := p.check(&c, do.value, want) == nil
	c.With = []byte("{}")
	at, withOK := do.value, true
	if we, has := f["with"]; has {
		at, c.WithPos = we.value, p.pos(we.value)
		c.With, withOK = p.with(we)
	}
	if found && withOK && c.Plugin == "expr" && c.Function == "expr" {
		if we, has := f["with"]; has && we.value.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(we.value.Content); i += 2 {
				if k, v := we.value.Content[i], we.value.Content[i+1]; k.Value == "expr" && v.Kind == yaml.ScalarNode {
					if withOK = p.checkExpr(v, v.Value); withOK {
						p.exprRefs(v, v.Value)
					}
				}
			}
		}
	}
	if found && withOK {
		if we, has := f["with"]; has {
			p.templateRefs(we.value)
		}
		p.checkConfig(&c, at)
	}
	return c, found && withOK
}

// checkExpr holds an expression to the subset the expr plugin evaluates
// (host/exprcheck), reporting a refusal at its place in the file
// (exprPos).
func (p *parser) checkExpr(at *yaml.Node, src string) bool {
	err := exprcheck.Check(src)
	if err == nil {
		return true
	}
	var xe *exprcheck.Error
	if !errors.As(err, &xe) {
		p.errorf(at, "when: %v", err)
		return false
	}
	pos := p.textPos(at, src, xe.Line, xe.Col)
	p.bad = true
	e := &Error{Pos: pos, Msg: "expression: " + xe.Msg, Hint: xe.Hint}
	if k := e.Error(); !p.reported[k] {
		p.reported[k] = true
		p.errs = append(p.errs, e)
	}
	return false
}
