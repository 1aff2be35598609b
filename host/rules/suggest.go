package rules

import (
	"slices"
	"strings"
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
	w := strings.ReplaceAll(strings.ToLower(word), "_", "-")
	best, bestD := "", max(1, len(w)/3)+1
	for _, c := range candidates {
		if d := distance(w, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
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

// distance is the optimal string alignment distance between a and b: the
// edits (insert, delete, substitute, swap two neighbours) that turn one into
// the other. Swaps count once because "stpes" is one slip, not two.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		// Names are short; a long word is nobody's typo and would cost
		// quadratic time.
		return max(len(a), len(b))
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
