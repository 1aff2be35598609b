package api_test

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/status"
)

// GET /v1/pending answers at most limit records (1,000 unless asked),
// the soonest, of one rule when asked, and says how many matched.
func TestPendingPage(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	var recs []status.PendingRecord
	for i := range 2500 {
		rule := "a"
		if i%5 == 0 {
			rule = "b"
		}
		recs = append(recs, status.PendingRecord{Run: strconv.Itoa(i), Rule: rule, Due: t0.Add(time.Duration(i) * time.Second)})
	}
	tests := []struct {
		url          string
		status       int
		n, total     int
		first, ruled string
	}{
		{"/v1/pending", 200, api.DefaultPendingLimit, 2500, "0", ""},
		{"/v1/pending?limit=3", 200, 3, 2500, "0", ""},
		{"/v1/pending?limit=3&rule=b", 200, 3, 500, "0", "b"},
		{"/v1/pending?rule=a", 200, api.DefaultPendingLimit, 2000, "1", "a"},
		{"/v1/pending?rule=nope", 200, 0, 0, "", ""},
		{"/v1/pending?limit=100000", 200, 2500, 2500, "0", ""},
		{"/v1/pending?limit=0", 400, 0, 0, "", ""},
		{"/v1/pending?limit=100001", 400, 0, 0, "", ""},
		{"/v1/pending?limit=x", 400, 0, 0, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			h := api.Handler(&engine{pending: recs}, api.Routes{})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", tc.url, nil))
			if rec.Code != tc.status {
				t.Fatalf("%d %s; want %d", rec.Code, rec.Body, tc.status)
			}
			if tc.status != 200 {
				return
			}
			var got []status.PendingRecord
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			total, _ := strconv.Atoi(rec.Header().Get(api.TotalHeader))
			if len(got) != tc.n || total != tc.total || got == nil {
				t.Fatalf("%d records, total %d; want %d of %d", len(got), total, tc.n, tc.total)
			}
			if len(got) > 0 && got[0].Run != tc.first {
				t.Errorf("first %s; want %s (the soonest)", got[0].Run, tc.first)
			}
			for _, p := range got {
				if tc.ruled != "" && p.Rule != tc.ruled {
					t.Fatalf("a record of rule %s in rule %s's page", p.Rule, tc.ruled)
				}
			}
		})
	}
}
