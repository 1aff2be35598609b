package api

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ruled-dev/ruled/host/runlog"
)

// ParseRunFilter reads GET /v1/runs's query: rule, outcome, since (RFC 3339
// or a duration back from now, "1h"), limit.
func ParseRunFilter(q map[string][]string, now time.Time) (runlog.Filter, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	f := runlog.Filter{Rule: get("rule"), Outcome: get("outcome")}
	switch f.Outcome {
	case "", runlog.OK, runlog.Failed, runlog.Cancelled, runlog.Dropped, runlog.Running, runlog.Interrupted, runlog.Unlogged:
	default:
		return f, fmt.Errorf("outcome %q: want ok, failed, cancelled, dropped, interrupted, unlogged or running", f.Outcome)
	}
	if s := get("since"); s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			f.Since = t
		} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
			f.Since = now.Add(-d)
		} else {
			return f, fmt.Errorf("since %q: want an RFC 3339 time or a duration such as 2h", s)
		}
	}
	if s := get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return f, fmt.Errorf("limit %q: want a positive number", s)
		}
		f.Limit = n
	}
	return f, nil
}
