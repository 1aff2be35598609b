package suggest

import "strings"

// Word returns the candidate the author most likely meant by word — a
// third of its letters or fewer edited away, at least one —, or "" when
// none is close enough to be worth saying. Case and _ for - are no edit.
func Word(word string, candidates []string) string {
	w := strings.ReplaceAll(strings.ToLower(word), "_", "-")
	best, bestD := "", max(1, len(w)/3)+1
	for _, c := range candidates {
		if d := Distance(w, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the optimal string alignment distance between a and b: the
// edits (insert, delete, substitute, swap two neighbours) that turn one into
// the other. Swaps count once because "stpes" is one slip, not two.
func Distance(a, b string) int {
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
