package scenario

import (
	"encoding/json"
	"strings"
)

// subset reports whether got has everything want has: every field of a
// wanted object, recursively; lists element by element, of equal length;
// anything else equal. Values are what encoding/json decodes.
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !subset(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		return want == got
	}
}

// decode is JSON as subset compares it; nil for what does not decode.
func decode(b []byte) any {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v
}

// topicMatches: pattern is a topic, or a prefix ending in *.
func topicMatches(pattern, topic string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(topic, p)
	}
	return pattern == topic
}

// canonical is an event's payload for comparing two runs: keys sorted, the
// ignored fields and the topic left out.
func canonical(raw []byte, ignore []string) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return string(raw)
	}
	delete(m, "topic")
	for _, f := range ignore {
		delete(m, f)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
