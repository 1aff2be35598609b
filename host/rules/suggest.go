package rules

import (
	"slices"
	"strings"

	suggestpkg "github.com/ruled-dev/ruled/internal/suggest"
)

// synonyms are the words authors bring from other rule engines (Home
// Assistant, GitHub Actions, cron tools) for our keys. Edit distance
// cannot find "after" from "delay"; this table can.
var synonyms = map[string]string{
	"delay": "after", "wait": "after", "sleep": "after",
	"if": "when", "condition": "when", "filter": "when",
	"trigger": "on", "triggers": "on", "topic": "on", "topics": "on", "event": "on", "events": "on",
	"action": "do", "call": "do", "run": "do", "uses": "do", "plugin": "do",
	"config": "with", "args": "with", "params": "with", "options": "with",
	"name": "id", "actions": "steps", "do": "steps", "desc": "description",
	"concurrency": "mode", "limit": "max", "debounce": "cooldown", "throttle": "cooldown",
	"persist": "durable", "persistent": "durable", "cancel": "cancel-on",
}

// suggest returns the candidate the author most likely meant by word, or
// "" when none is close enough to be worth saying.
func suggest(word string, candidates []string) string {
	if s, ok := synonyms[strings.ToLower(word)]; ok && slices.Contains(candidates, s) {
		return s
	}
	return suggestpkg.Word(word, candidates)
}

// Suggest is the candidate the author most likely meant by word (an
// edit or two away, or a synonym other rule engines use), "" for none:
// for other file formats' keys too (host/config's).
func Suggest(word string, candidates []string) string { return suggest(word, candidates) }

// didYouMean is suggest as a hint, "" when there is nothing to suggest.
func didYouMean(word string, candidates []string) string {
	if s := suggest(word, candidates); s != "" {
		return "did you mean " + s + "?"
	}
	return ""
}
