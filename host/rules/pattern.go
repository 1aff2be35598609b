package rules

import (
	"errors"
	"strings"
)

// Pattern is a topic pattern: segments split at '.', where `*` matches one
// segment and a final `>` one or more. Patterns never match topics under the
// reserved "ruled." prefix.
type Pattern string

// Match reports whether topic matches p.
func (p Pattern) Match(topic string) bool {
	if strings.HasPrefix(topic, "ruled.") {
		return false
	}
	ps, ts := string(p), topic
	for {
		pseg, prest, pmore := strings.Cut(ps, ".")
		if pseg == ">" && !pmore {
			return ts != ""
		}
		tseg, trest, tmore := strings.Cut(ts, ".")
		if pseg != "*" && pseg != tseg {
			return false
		}
		if !pmore || !tmore {
			return pmore == tmore
		}
		ps, ts = prest, trest
	}
}

// Literal reports whether p has no wildcard, so it can be indexed by topic.
func (p Pattern) Literal() bool {
	return !strings.ContainsAny(string(p), "*>")
}

// ParsePattern checks s as a topic pattern (the rule format's `on:`), for
// the patterns that come from elsewhere: a config's routes.
func ParsePattern(s string) (Pattern, error) {
	if msg, hint := checkPattern(s); msg != "" {
		return "", errors.New(msg + " (" + hint + ")")
	}
	return Pattern(s), nil
}
