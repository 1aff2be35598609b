package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestIngest(t *testing.T) {
	const (
		jsonCT   = "application/json"
		ndjsonCT = "application/x-ndjson"
	)
	tests := []struct {
		name     string
		method   string
		ct       string
		body     string
		status   int
		accepted int
		rejected string // lines and reasons, as fmt prints them
		topics   string // what reached the sink
		errText  string // in IngestResult.Error
	}{
		{name: "one json event", ct: jsonCT, body: `{"topic":"a","v":1}`,
			status: 202, accepted: 1, rejected: "[]", topics: "[a]"},
		{name: "json with charset", ct: "application/json; charset=utf-8", body: "{\"topic\":\"a\"}\n",
			status: 202, accepted: 1, rejected: "[]", topics: "[a]"},
		{name: "json not an object", ct: jsonCT, body: `[{"topic":"a"}]`,
			status: 400, rejected: "[{1 not an object}]", topics: "[]"},
		{name: "json reserved", ct: jsonCT, body: `{"topic":"ruled.triggers.changed"}`,
			status: 400, rejected: "[{1 reserved topic}]", topics: "[]"},
		{name: "json empty body", ct: jsonCT, body: ``,
			status: 400, rejected: "[{1 not json}]", topics: "[]"},
		{name: "json over the event limit", ct: jsonCT, body: `{"topic":"a","pad":"` + strings.Repeat("x", 300) + `"}`,
			status: 400, rejected: "[{1 too large}]", topics: "[]"},
		{name: "ndjson all good", ct: ndjsonCT, body: "{\"topic\":\"a\"}\n\n{\"topic\":\"b\"}\n",
			status: 202, accepted: 2, rejected: "[]", topics: "[a b]"},
		{name: "application/ndjson", ct: "application/ndjson", body: "{\"topic\":\"a\"}\n{\"topic\":\"b\"}",
			status: 202, accepted: 2, rejected: "[]", topics: "[a b]"},
		{name: "ndjson mixed", ct: ndjsonCT, body: "{\"topic\":\"a\"}\nnope\n{\"topic\":\"b\"}\n{\"topic\":\"a.*\"}\n",
			status: 207, accepted: 2, rejected: "[{2 not json} {4 bad field}]", topics: "[a b]"},
		{name: "ndjson all bad", ct: ndjsonCT, body: "nope\n{}\n",
			status: 400, rejected: "[{1 not json} {2 no topic}]", topics: "[]"},
		{name: "ndjson blank only", ct: ndjsonCT, body: "\n \n",
			status: 400, rejected: "[]", topics: "[]", errText: "no event"},
		{name: "ndjson long line", ct: ndjsonCT, body: "{\"topic\":\"a\"}\n" + strings.Repeat("x", 500) + "\n{\"topic\":\"b\"}\n",
			status: 207, accepted: 2, rejected: "[{2 too large}]", topics: "[a b]"},
		{name: "sink refuses one", ct: ndjsonCT, body: "{\"topic\":\"a\"}\n{\"topic\":\"refuse\"}\n",
			status: 207, accepted: 1, rejected: "[{2 no rule}]", topics: "[a]"},
		{name: "sink full", ct: ndjsonCT, body: "{\"topic\":\"a\"}\nnope\n{\"topic\":\"full\"}\n{\"topic\":\"b\"}\n",
			status: 503, accepted: 1, rejected: "[{2 not json}]", topics: "[a]", errText: "line 3: queue full"},
		{name: "sink full on json", ct: jsonCT, body: `{"topic":"full"}`,
			status: 503, rejected: "[]", topics: "[]", errText: "queue full"},
		{name: "body over the cap", ct: ndjsonCT, body: strings.Repeat("{\"topic\":\"a\"}\n", 100),
			status: 413, rejected: "[]", topics: "[]", errText: "body over 1024 bytes"},
		{name: "get", method: "GET", status: 405, rejected: "[]", topics: "[]", errText: "method GET"},
		{name: "put", method: "PUT", ct: jsonCT, body: `{"topic":"a"}`, status: 405, rejected: "[]", topics: "[]"},
		{name: "form", ct: "application/x-www-form-urlencoded", body: `{"topic":"a"}`,
			status: 415, rejected: "[]", topics: "[]", errText: "application/x-ndjson"},
		{name: "no content type", body: `{"topic":"a"}`, status: 415, rejected: "[]", topics: "[]"},
		{name: "text", ct: "text/plain", body: `{"topic":"a"}`, status: 415, rejected: "[]", topics: "[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var topics []string
			var counters Counters
			h := &Ingest{
				Decoder:  &Decoder{MaxSize: 256},
				Counters: &counters,
				MaxBody:  1024,
				Sink: func(e *Event) error {
					switch e.Topic {
					case "refuse":
						return &Rejection{Reason: "no rule", Detail: "nothing listens"}
					case "full":
						return errors.New("queue full")
					}
					topics = append(topics, e.Topic)
					return nil
				},
			}
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, IngestPath, strings.NewReader(tc.body))
			if tc.ct != "" {
				req.Header.Set("Content-Type", tc.ct)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			if rec.Code != tc.status {
				t.Errorf("status = %d; want %d (body %s)", rec.Code, tc.status, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q; want application/json", ct)
			}
			var res IngestResult
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if res.Accepted != tc.accepted {
				t.Errorf("accepted = %d; want %d", res.Accepted, tc.accepted)
			}
			var rej []string
			for _, r := range res.Rejected {
				rej = append(rej, fmt.Sprintf("{%d %s}", r.Line, r.Reason))
				if r.Detail == "" {
					t.Errorf("line %d rejected without a detail", r.Line)
				}
			}
			if got := "[" + strings.Join(rej, " ") + "]"; got != tc.rejected {
				t.Errorf("rejected = %s; want %s", got, tc.rejected)
			}
			if res.Rejected == nil {
				t.Errorf("rejected is null; want []")
			}
			if got := fmt.Sprint(topics); got != tc.topics {
				t.Errorf("sink got %s; want %s", got, tc.topics)
			}
			if !strings.Contains(res.Error, tc.errText) || (tc.errText == "" && res.Error != "" && tc.status < 300) {
				t.Errorf("error = %q; want it to hold %q", res.Error, tc.errText)
			}
			if s := counters.Snapshot(); s.Accepted != uint64(tc.accepted) || s.TotalRejected() != uint64(len(res.Rejected)) {
				t.Errorf("counters = %+v; want %d accepted, %d rejected", s, tc.accepted, len(res.Rejected))
			}
			switch tc.status {
			case 405:
				if got := rec.Header().Get("Allow"); got != "POST" {
					t.Errorf("Allow = %q; want POST", got)
				}
			case 503:
				if rec.Header().Get("Retry-After") == "" {
					t.Error("503 without Retry-After")
				}
				if res.UnprocessedFrom == 0 {
					t.Error("503 without unprocessed_from")
				}
			}
		})
	}
}

func TestIngestUnprocessedFrom(t *testing.T) {
	h := &Ingest{Sink: func(e *Event) error {
		if e.Topic == "full" {
			return errors.New("queue full")
		}
		return nil
	}}
	req := httptest.NewRequest("POST", IngestPath, strings.NewReader("{\"topic\":\"a\"}\n\n{\"topic\":\"full\"}\n"))
	req.Header.Set("Content-Type", "application/x-ndjson")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var res IngestResult
	json.Unmarshal(rec.Body.Bytes(), &res)
	if rec.Code != 503 || res.UnprocessedFrom != 3 || res.Accepted != 1 {
		t.Errorf("got %d %+v; want 503, unprocessed from line 3, 1 accepted", rec.Code, res)
	}
}

func TestIngestListsAtMost100(t *testing.T) {
	h := &Ingest{Sink: func(*Event) error { return nil }}
	req := httptest.NewRequest("POST", IngestPath, strings.NewReader(strings.Repeat("x\n", 250)+"{\"topic\":\"a\"}\n"))
	req.Header.Set("Content-Type", "application/x-ndjson")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var res IngestResult
	json.Unmarshal(rec.Body.Bytes(), &res)
	if rec.Code != 207 || len(res.Rejected) != 100 || res.RejectedNotListed != 150 || res.Accepted != 1 {
		t.Errorf("got %d, %d listed, %d not listed, %d accepted; want 207, 100, 150, 1",
			rec.Code, len(res.Rejected), res.RejectedNotListed, res.Accepted)
	}
}

// Over a real connection, a chunked body (no Content-Length) is capped too.
func TestIngestChunkedOverCap(t *testing.T) {
	var n int
	srv := httptest.NewServer(&Ingest{MaxBody: 1024, Sink: func(*Event) error { n++; return nil }})
	defer srv.Close()
	pr, pw := io.Pipe()
	go func() {
		for range 200 {
			pw.Write([]byte("{\"topic\":\"a\"}\n"))
		}
		pw.Close()
	}()
	resp, err := http.Post(srv.URL+IngestPath, "application/x-ndjson", pr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 || n != 0 {
		t.Errorf("status %d, %d events taken; want 413, 0", resp.StatusCode, n)
	}
}

// TestIngestSinkAll: an NDJSON body goes to SinkAll in groups, in order;
// a line refused by decoding ends the group before it, so that a 503's
// UnprocessedFrom still follows every refusal listed; a group SinkAll
// stops part-way is answered from the event it stopped at.
func TestIngestSinkAll(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		stopAt     string // SinkAll refuses the event of this topic and those after
		groups     string // the groups SinkAll was handed, by topic
		code       int
		accepted   int
		rejected   []int // lines
		unresolved int   // UnprocessedFrom
	}{
		{"one group", `{"topic":"a"}` + "\n" + `{"topic":"b"}` + "\n\n" + `{"topic":"c"}`, "", "a b c", 202, 3, nil, 0},
		{"a refusal between two groups", `{"topic":"a"}` + "\nnot json\n" + `{"topic":"b"}`, "", "a | b", 207, 2, []int{2}, 0},
		{"stopped in a group", `{"topic":"a"}` + "\n" + `{"topic":"b"}` + "\n" + `{"topic":"full"}` + "\n" + `{"topic":"c"}`, "full", "a b full c", 503, 2, nil, 3},
		{"stopped after a refusal", "not json\n" + `{"topic":"full"}` + "\n" + `{"topic":"c"}`, "full", "full c", 503, 0, []int{1}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var groups []string
			h := &Ingest{Sink: func(*Event) error { t.Error("Sink called with SinkAll set"); return nil },
				SinkAll: func(es []*Event) (int, error) {
					var g []string
					for _, e := range es {
						g = append(g, e.Topic)
					}
					groups = append(groups, strings.Join(g, " "))
					for i, e := range es {
						if e.Topic == tc.stopAt {
							return i, errors.New("queue full")
						}
					}
					return len(es), nil
				}}
			req := httptest.NewRequest("POST", IngestPath, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/x-ndjson")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var res IngestResult
			json.Unmarshal(rec.Body.Bytes(), &res)
			var lines []int
			for _, r := range res.Rejected {
				lines = append(lines, r.Line)
			}
			if got := strings.Join(groups, " | "); got != tc.groups {
				t.Errorf("groups %q; want %q", got, tc.groups)
			}
			if rec.Code != tc.code || res.Accepted != tc.accepted || res.UnprocessedFrom != tc.unresolved || !slices.Equal(lines, tc.rejected) {
				t.Errorf("got %d %+v; want %d, %d accepted, rejected lines %v, unprocessed from %d",
					rec.Code, res, tc.code, tc.accepted, tc.rejected, tc.unresolved)
			}
		})
	}
}

// TestIngestSinkAllGroupSize: a long body is handed on MaxGroup events
// at a time.
func TestIngestSinkAllGroupSize(t *testing.T) {
	var sizes []int
	h := &Ingest{SinkAll: func(es []*Event) (int, error) { sizes = append(sizes, len(es)); return len(es), nil }}
	body := strings.Repeat(`{"topic":"a"}`+"\n", 2*MaxGroup+88)
	req := httptest.NewRequest("POST", IngestPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-ndjson")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if want := []int{MaxGroup, MaxGroup, 88}; rec.Code != 202 || !slices.Equal(sizes, want) {
		t.Errorf("%d, groups of %v; want 202, groups of %v", rec.Code, sizes, want)
	}
}

// TestIngestTraceparent: a traceparent header gives every event of the
// body its canonical value; a malformed one, or two, give none.
func TestIngestTraceparent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name    string
		headers []string
		want    string
	}{
		{"one", []string{tp}, tp},
		{"a later version", []string{"01" + tp[2:] + "-more"}, tp},
		{"malformed", []string{strings.ToUpper(tp)}, ""},
		{"two", []string{tp, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, ""},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			h := &Ingest{Sink: func(e *Event) error { got = append(got, e.Trace); return nil }}
			req := httptest.NewRequest(http.MethodPost, IngestPath, strings.NewReader("{\"topic\":\"a\"}\n{\"topic\":\"b\"}\n"))
			req.Header.Set("Content-Type", "application/x-ndjson")
			for _, v := range tc.headers {
				req.Header.Add("traceparent", v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusAccepted || len(got) != 2 || got[0] != tc.want || got[1] != tc.want {
				t.Errorf("%d, traces %q; want both %q", w.Code, got, tc.want)
			}
		})
	}
}

// TestIngestTwoEventsAsJSON: two events posted as application/json (one
// event's type) are refused with a hint at NDJSON's; one line of NDJSON
// with two objects is refused without it.
func TestIngestTwoEventsAsJSON(t *testing.T) {
	for _, tc := range []struct {
		ct   string
		hint bool
	}{{"application/json", true}, {"application/x-ndjson", false}} {
		h := &Ingest{Decoder: &Decoder{MaxSize: 256}, MaxBody: 1024, Sink: func(*Event) error { return nil }}
		req := httptest.NewRequest(http.MethodPost, IngestPath, strings.NewReader(`{"topic":"a"} {"topic":"b"}`))
		req.Header.Set("Content-Type", tc.ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var res IngestResult
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || len(res.Rejected) != 1 {
			t.Fatalf("%s: %s (%v)", tc.ct, rec.Body, err)
		}
		if got := strings.Contains(res.Rejected[0].Detail, "application/x-ndjson"); got != tc.hint {
			t.Errorf("%s: detail %q; hint at NDJSON %v, want %v", tc.ct, res.Rejected[0].Detail, got, tc.hint)
		}
	}
}
