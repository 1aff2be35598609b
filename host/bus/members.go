package bus

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/ruled-dev/ruled/abi"
)

// Member is a top-level member of an event object: its name and its value
// as JSON. A nil Value leaves a member of the name out and puts none in
// front (how package state drops a report's "id" and "time").
type Member struct {
	Name  string
	Value []byte
}

// WithMembers returns the JSON object obj with ms in front of its own
// members and any of its members of the same names left out: how a topic
// is put into a payload (an MQTT message's, a plugin's publish). It
// splices bytes — obj's members are copied as they are, in their order —
// where decoding into a map and encoding again cost a profile of MQTT
// ingest a quarter of the process's CPU (issue 40: a payload that had
// its own "topic").
//
// ok is false when obj is not shaped as an object, and then nothing is
// built. It does not check obj is JSON: its callers have (a plugin's
// publish), or the decoder checks what it builds (an MQTT message). Given
// bytes that are not JSON it answers false, or bytes that are not JSON
// either; it never reads past obj.
func WithMembers(obj []byte, ms ...Member) (out []byte, ok bool) {
	out, ok, _ = withMembers(obj, nil, ms)
	return out, ok
}

// WithMembersChecked is WithMembers for an object that is checked whole
// only after (an MQTT message's payload, by the decoder): what the
// decoder would have seen of the members it leaves out is checked here,
// their values by the decoder's rules and each name at most once, so
// that leaving them out hides no fault. The error says which; ok is
// WithMembers'. A payload of its own "topic" was parsed whole once more
// for this: a tenth of MQTT ingest's CPU (issue 39).
func WithMembersChecked(obj []byte, ms ...Member) (out []byte, ok bool, err error) {
	seen := make([]bool, len(ms))
	return withMembers(obj, func(m int, value []byte) error {
		if seen[m] {
			return &abi.SyntaxError{Msg: "duplicate key " + strconv.Quote(ms[m].Name)}
		}
		seen[m] = true
		// In an array, as it is in the object: a level deeper than
		// alone, for the decoder's bound on nesting.
		_, err := abi.AppendJSONView(nil, append(append([]byte{'['}, value...), ']'), false)
		return err
	}, ms)
}

// withMembers is WithMembers, handing each member it leaves out to check
// when not nil (WithMembersChecked).
func withMembers(obj []byte, check func(m int, value []byte) error, ms []Member) (out []byte, ok bool, err error) {
	p := bytes.TrimSpace(obj)
	if len(p) < 2 || p[0] != '{' || p[len(p)-1] != '}' {
		return nil, false, nil
	}
	n := len(p) + 2
	for _, m := range ms {
		n += len(m.Name) + len(m.Value) + 4
	}
	out = make([]byte, 0, n)
	out = append(out, '{')
	wrote := false
	for _, m := range ms {
		if m.Value == nil {
			continue
		}
		if wrote {
			out = append(out, ',')
		}
		out = abi.AppendJSONString(out, m.Name)
		out = append(out, ':')
		out = append(out, m.Value...)
		wrote = true
	}
	if !mentions(p, ms) {
		// None of the names is among obj's keys: its members follow as
		// they are, unscanned (json.Valid was the caller's).
		inner := bytes.TrimSpace(p[1 : len(p)-1])
		if wrote && len(inner) > 0 {
			out = append(out, ',')
		}
		return append(append(out, inner...), '}'), true, nil
	}
	i := 1
	for {
		i = skipSpace(p, i)
		if i >= len(p) {
			return nil, false, nil
		}
		if p[i] == '}' {
			return append(out, '}'), true, nil
		}
		if p[i] == ',' {
			i = skipSpace(p, i+1)
		}
		start := i
		keyEnd, ok := skipString(p, i)
		if !ok {
			return nil, false, nil
		}
		name := p[start:keyEnd]
		i = skipSpace(p, keyEnd)
		if i >= len(p) || p[i] != ':' {
			return nil, false, nil
		}
		valEnd, ok := skipValue(p, skipSpace(p, i+1))
		if !ok {
			return nil, false, nil
		}
		if m := named(name, ms); m < 0 {
			if wrote {
				out = append(out, ',')
			}
			out = append(out, p[start:valEnd]...)
			wrote = true
		} else if check != nil {
			if err := check(m, p[skipSpace(p, i+1):valEnd]); err != nil {
				return nil, true, err
			}
		}
		i = valEnd
	}
}

// mentions reports whether obj may have a key of one of ms's names: it
// holds one of them quoted, or an escape (a name may be spelled with
// one).
func mentions(obj []byte, ms []Member) bool {
	if bytes.IndexByte(obj, '\\') >= 0 {
		return true
	}
	for _, m := range ms {
		if len(obj) >= len(m.Name)+2 {
			for i := 0; ; {
				j := bytes.Index(obj[i:], []byte(m.Name))
				if j < 0 {
					break
				}
				at := i + j
				if at > 0 && obj[at-1] == '"' && at+len(m.Name) < len(obj) && obj[at+len(m.Name)] == '"' {
					return true
				}
				i = at + 1
			}
		}
	}
	return false
}

// named is the index in ms of the member the JSON string key (quoted,
// maybe escaped) names, or -1.
func named(key []byte, ms []Member) int {
	raw := key[1 : len(key)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		for i, m := range ms {
			if string(raw) == m.Name { // compared, not converted: no allocation
				return i
			}
		}
		return -1
	}
	var k string
	if err := json.Unmarshal(key, &k); err != nil {
		return -1
	}
	for i, m := range ms {
		if m.Name == k {
			return i
		}
	}
	return -1
}

func skipSpace(p []byte, i int) int {
	for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string at p[i].
func skipString(p []byte, i int) (int, bool) {
	if i >= len(p) || p[i] != '"' {
		return 0, false
	}
	for i++; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index just past the JSON value at p[i]: a string,
// an object or array (its nesting counted, strings within skipped), or a
// number or literal (up to the next delimiter).
func skipValue(p []byte, i int) (int, bool) {
	if i >= len(p) {
		return 0, false
	}
	switch p[i] {
	case '"':
		return skipString(p, i)
	case '{', '[':
		depth := 0
		for i < len(p) {
			switch p[i] {
			case '"':
				end, ok := skipString(p, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	}
	start := i
	for i < len(p) && p[i] != ',' && p[i] != '}' && p[i] != ']' && p[i] != ' ' && p[i] != '\t' && p[i] != '\n' && p[i] != '\r' {
		i++
	}
	return i, i > start
}
