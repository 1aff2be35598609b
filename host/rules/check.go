package rules

import (
	"strconv"
	"strings"
	"unicode"
)

// checkPattern says what is wrong with a topic pattern, "" if nothing, and
// how to fix it.
func checkPattern(s string) (msg, hint string) {
	const example = "topics are words joined by dots, e.g. scooter.telemetry or scooter.*.battery"
	if s == "" {
		return "empty topic pattern", example
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return strconv.Quote(s) + " contains a space or control character", example
	}
	segs := strings.Split(s, ".")
	for i, seg := range segs {
		switch {
		case seg == "":
			return strconv.Quote(s) + " has an empty segment", example
		case seg == ">" && i < len(segs)-1:
			return strconv.Quote(s) + `: ">" must be the last segment`, `">" matches one or more segments at the end; "*" matches one anywhere`
		case seg != "*" && seg != ">" && strings.ContainsAny(seg, "*>"):
			return strconv.Quote(s) + ": a wildcard must be a whole segment", `"*" matches one segment, a final ">" one or more`
		}
	}
	if len(segs) > 1 && segs[0] == "ruled" {
		return strconv.Quote(s) + " can only match reserved ruled. topics",
			"rules never see ruled. topics: they carry the daemon's own commands and notices"
	}
	return "", ""
}

// checkPath says what is wrong with an event field path, "" if nothing.
// Paths are abi view paths: keys joined by '.', with '~0' for '~', '~1'
// for '.' and '~2' for an empty key.
func checkPath(s string) string {
	if s == "" {
		return "it is empty"
	}
	for _, seg := range strings.Split(s, ".") {
		if seg == "" {
			return "it has an empty segment"
		}
		for i := 0; i < len(seg); i++ {
			if seg[i] == '~' && (i+1 == len(seg) || seg[i+1] < '0' || seg[i+1] > '2') {
				return `"~" must be followed by 0, 1 or 2`
			}
		}
	}
	return ""
}
