package api_test

import (
	"fmt"
	"net/url"
	"time"

	"github.com/ruled-dev/ruled/host/api"
)

// ExampleParseRunFilter reads GET /v1/runs's query as `ruled log ls`
// sends it: "since" is a time or a duration back from now.
func ExampleParseRunFilter() {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	q, _ := url.ParseQuery("rule=low-battery&outcome=failed&since=90m&limit=20")
	f, err := api.ParseRunFilter(q, now)
	fmt.Println(f.Rule, f.Outcome, f.Since.Format(time.Kitchen), f.Limit, err)
	_, err = api.ParseRunFilter(url.Values{"limit": {"-1"}}, now)
	fmt.Println(err)
	// Output:
	// low-battery failed 10:30AM 20 <nil>
	// limit "-1": want a positive number
}
