package api

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/ruled-dev/ruled/host/status"
)

// DefaultPendingLimit is how many waiting steps GET /v1/pending answers
// with when the request names no limit; MaxPendingLimit is the most it
// answers with. Whoever sends events decides how many steps wait (up to
// max-keys a rule): 100,000 waiting steps were ~30 MB of JSON for every
// poll of the console's page. The store is still read whole to find the
// soonest; the answer is what is bounded.
const (
	DefaultPendingLimit = 1000
	MaxPendingLimit     = 100_000
)

// TotalHeader is the header of GET /v1/pending's answer that says how
// many waiting steps matched, of which the answer lists the soonest.
const TotalHeader = "X-Ruled-Total"

// ParsePendingQuery reads GET /v1/pending's rule= (one rule's steps; ""
// every rule's) and limit= (DefaultPendingLimit when absent).
func ParsePendingQuery(q url.Values) (rule string, limit int, err error) {
	rule, limit = q.Get("rule"), DefaultPendingLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > MaxPendingLimit {
			return "", 0, fmt.Errorf("limit %q: want a number from 1 to %d", s, MaxPendingLimit)
		}
		limit = n
	}
	return rule, limit, nil
}

// PendingPage keeps the records of rule ("" every rule's), the first
// limit of them — they come soonest first —, and says how many matched.
func PendingPage(recs []status.PendingRecord, rule string, limit int) ([]status.PendingRecord, int) {
	if rule != "" {
		kept := recs[:0:0]
		for _, p := range recs {
			if p.Rule == rule {
				kept = append(kept, p)
			}
		}
		recs = kept
	}
	total := len(recs)
	if limit > 0 && len(recs) > limit {
		recs = recs[:limit]
	}
	return recs, total
}
