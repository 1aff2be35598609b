package traces

import (
	"context"
	"encoding/hex"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/internal/otlptest"
)

const sender = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func hexOf(b []byte) string { return hex.EncodeToString(b) }

// TestRunSpans: a run's nodes and its end become spans of one trace — the
// run's id without a sender's traceparent, the sender's with one — with
// the run's span their parent, the sender's span the run's, and the ids a
// step sends on (StepParent) the ids its span has.
func TestRunSpans(t *testing.T) {
	rc := otlptest.New(t)
	x, err := New(Config{Endpoint: rc.URL, Ratio: 1, Interval: 20 * time.Millisecond, Headers: [][2]string{{"x-api-key", "k1"}},
		Service: "ruled-test", Version: "v9", Instance: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close(context.Background())
	t0 := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ run, parent string }{
		{"018f3a2b4c5d0001a1b2c3d4e5f60718", ""},
		{"018f3a2b4c5d0002a1b2c3d4e5f60718", sender},
	} {
		x.Run(runlog.Run{ID: tc.run, Rule: "lamp", Topic: "door", Started: t0, Outcome: runlog.Running, Trace: tc.parent}) // not a span yet
		x.Node(runlog.Node{Run: tc.run, Seq: 1, Kind: runlog.KindTrigger, Name: "door", Started: t0, Ended: t0, Outcome: runlog.OK, Trace: tc.parent})
		x.Node(runlog.Node{Run: tc.run, Seq: 2, Kind: runlog.KindStep, Name: "notify", Do: "http.post", Digest: "abcd", Started: t0,
			Outcome: runlog.Open, Trace: tc.parent}) // open: no span
		x.Node(runlog.Node{Run: tc.run, Seq: 2, Kind: runlog.KindStep, Name: "notify", Do: "http.post", Digest: "abcd", Started: t0,
			Ended: t0.Add(time.Second), Outcome: runlog.Failed, Error: "503 from the lamp", Input: []byte(`{"a":1}`), Trace: tc.parent,
			Children: []string{"c1", "c2"}})
		x.Run(runlog.Run{ID: tc.run, Rule: "lamp", Topic: "door", Key: "front", Started: t0, Ended: t0.Add(2 * time.Second),
			Outcome: runlog.Failed, Error: "503 from the lamp", Trace: tc.parent})
	}
	spans := rc.Wait(t, 6)
	if len(spans) != 6 {
		t.Fatalf("%d spans; want 6 (an open node and a running run are none)", len(spans))
	}
	for i, tc := range []struct{ run, parent string }{
		{"018f3a2b4c5d0001a1b2c3d4e5f60718", ""},
		{"018f3a2b4c5d0002a1b2c3d4e5f60718", sender},
	} {
		trig, step, run := spans[3*i], spans[3*i+1], spans[3*i+2]
		wantTrace := tc.run
		if tc.parent != "" {
			wantTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		}
		for _, s := range []*tracepb.Span{trig, step, run} {
			if got := hexOf(s.TraceId); got != wantTrace {
				t.Errorf("%s: trace %s; want %s", s.Name, got, wantTrace)
			}
		}
		runSpan := RunSpan(tc.run)
		if hexOf(run.SpanId) != hexOf(runSpan[:]) || run.Name != "run lamp" || run.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
			t.Errorf("run span %s %x %v", run.Name, run.SpanId, run.Kind)
		}
		wantParent := ""
		if tc.parent != "" {
			wantParent = "00f067aa0ba902b7"
		}
		if got := hexOf(run.ParentSpanId); got != wantParent {
			t.Errorf("run span's parent %q; want %q", got, wantParent)
		}
		for _, s := range []*tracepb.Span{trig, step} {
			if hexOf(s.ParentSpanId) != hexOf(runSpan[:]) {
				t.Errorf("%s: parent %x; want the run's span %s", s.Name, s.ParentSpanId, runSpan)
			}
		}
		if step.Name != "step notify" || otlptest.Attr(step, "ruled.function") != "http.post" || otlptest.Attr(step, "ruled.module.digest") != "abcd" ||
			otlptest.Attr(step, "ruled.outcome") != "failed" || otlptest.Attr(step, "ruled.children") != "c1,c2" || otlptest.Attr(step, "ruled.input.bytes") != "7" || otlptest.Attr(step, "ruled.node.seq") != "2" {
			t.Errorf("step span %s: %v", step.Name, step.Attributes)
		}
		if step.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || step.Status.GetMessage() != "503 from the lamp" {
			t.Errorf("step span's status %v", step.Status)
		}
		if d := step.EndTimeUnixNano - step.StartTimeUnixNano; d != uint64(time.Second) {
			t.Errorf("step span lasted %d ns; want the node's second", d)
		}
		// What the step sent on while it ran names its span.
		tp := x.StepParent(tc.run, tc.parent, 2)
		if want := "00-" + wantTrace + "-" + hexOf(step.SpanId) + "-01"; tp != want {
			t.Errorf("StepParent %q; want %q", tp, want)
		}
		if otlptest.Attr(run, "ruled.key") != "front" || otlptest.Attr(run, "ruled.rule") != "lamp" || otlptest.Attr(run, "ruled.run") != tc.run {
			t.Errorf("run span's attributes %v", run.Attributes)
		}
	}
	h, attrs := rc.Headers()[0], rc.Resources()[0]
	slices.Sort(attrs)
	res := strings.Join(attrs, " ")
	if h.Get("x-api-key") != "k1" || h.Get("Content-Encoding") != "gzip" {
		t.Errorf("request headers %v", h)
	}
	if res != "service.instance.id=p1 service.name=ruled-test service.version=v9" {
		t.Errorf("resource %s", res)
	}
	if st := statsWhen(x, func(s Stats) bool { return s.Exported == 6 }); st.Exported != 6 || st.Dropped != 0 || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestSampling: a run without a sender's trace is sent by the ratio, whole
// or not at all; under a sender's trace, by its sampled flag.
func TestSampling(t *testing.T) {
	rc := otlptest.New(t)
	x, err := New(Config{Endpoint: rc.URL, Ratio: 0, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	unsampled := strings.TrimSuffix(sender, "01") + "00"
	for i, parent := range []string{"", unsampled, sender} {
		run := "018f3a2b4c5d000" + string(rune('a'+i)) + "a1b2c3d4e5f60718"
		x.Node(runlog.Node{Run: run, Seq: 1, Kind: runlog.KindTrigger, Started: t0, Ended: t0, Outcome: runlog.OK, Trace: parent})
		x.Run(runlog.Run{ID: run, Rule: "r", Started: t0, Ended: t0, Outcome: runlog.OK, Trace: parent})
		if got, want := strings.HasSuffix(x.StepParent(run, parent, 2), "-01"), parent == sender; got != want {
			t.Errorf("StepParent under %q sampled %v; want %v", parent, got, want)
		}
	}
	x.Close(context.Background())
	spans := rc.Spans()
	if len(spans) != 2 {
		t.Fatalf("%d spans; want the sampled sender's run's 2", len(spans))
	}
	for _, s := range spans {
		if hexOf(s.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("span %s of trace %x sent", s.Name, s.TraceId)
		}
	}
	if _, err := New(Config{Endpoint: rc.URL, Ratio: 1.5}); err == nil {
		t.Error("a ratio of 1.5 taken")
	}
}

// TestCollectorDown: a collector that never answers costs the queue and
// one batch — spans past MaxQueue are dropped and counted, the runs never
// wait — and Close returns when its context ends; one that answers 503
// is tried again as its Retry-After says, and a 400 is not.
func TestCollectorDown(t *testing.T) {
	hang := make(chan struct{})
	rc := otlptest.New(t)
	rc.Answer(func(w http.ResponseWriter) bool { <-hang; return true })
	defer close(hang)
	x, err := New(Config{Endpoint: rc.URL, Ratio: 1, MaxQueue: 100, MaxBatch: 10, Interval: 10 * time.Millisecond, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i := range 100_000 {
		x.Node(runlog.Node{Run: "018f3a2b4c5d0001a1b2c3d4e5f60718", Seq: i + 1, Kind: runlog.KindStep, Name: "s", Started: t0, Ended: t0,
			Outcome: runlog.OK, Detail: strings.Repeat("x", 100)})
	}
	took := time.Since(start)
	st := x.Stats()
	if st.Dropped < 100_000-110 || st.Queued > 110 { // the queue (the items taken among them) and a batch in flight
		t.Errorf("stats %+v after 100,000 nodes with the collector hanging; want all but the queue and a batch dropped", st)
	}
	t.Logf("100,000 nodes told in %v with the collector hanging: %+v", took, st)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	closing := time.Now()
	x.Close(ctx)
	if d := time.Since(closing); d > 2*time.Second {
		t.Errorf("Close took %v with its context ending after 300ms", d)
	}

	// 503 with Retry-After 1: tried again, then taken.
	rc2 := otlptest.New(t)
	tries := 0
	rc2.Answer(func(w http.ResponseWriter) bool {
		tries++
		if tries == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	y, err := New(Config{Endpoint: rc2.URL, Ratio: 1, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	y.Run(runlog.Run{ID: "018f3a2b4c5d0001a1b2c3d4e5f60718", Rule: "r", Started: t0, Ended: t0, Outcome: runlog.OK})
	rc2.Wait(t, 1)
	y.Close(context.Background())
	if st := y.Stats(); st.Exported != 1 || st.Failed != 0 || tries != 2 {
		t.Errorf("after a 503: %+v, %d tries", st, tries)
	}

	// 400: refused, not tried again, counted failed with the words.
	rc3 := otlptest.New(t)
	rc3.Answer(func(w http.ResponseWriter) bool { http.Error(w, "bad tenant", http.StatusBadRequest); return true })
	z, err := New(Config{Endpoint: rc3.URL, Ratio: 1, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	z.Run(runlog.Run{ID: "018f3a2b4c5d0001a1b2c3d4e5f60718", Rule: "r", Started: t0, Ended: t0, Outcome: runlog.OK})
	statsWhen(z, func(s Stats) bool { return s.Failed > 0 })
	z.Close(context.Background())
	if st := z.Stats(); st.Failed != 1 || !strings.Contains(st.LastError, "400") || !strings.Contains(st.LastError, "bad tenant") {
		t.Errorf("after a 400: %+v", st)
	}
	if n := len(rc3.Headers()); n != 1 {
		t.Errorf("a 400 was tried %d times", n)
	}
}

// TestPartial: spans a collector says it rejected are counted failed.
func TestPartial(t *testing.T) {
	b := []byte{0x0a, 0x08, 0x08, 0x03, 0x12, 0x04, 'f', 'u', 'l', 'l'}
	if n, msg := partial(b); n != 3 || msg != "full" {
		t.Errorf("partial = %d %q", n, msg)
	}
	if n, _ := partial([]byte{0xff}); n != 0 {
		t.Errorf("a garbled answer rejected %d", n)
	}
}

func TestBadEndpoint(t *testing.T) {
	for _, ep := range []string{"", "localhost:4318", "ftp://x", "http://"} {
		if _, err := New(Config{Endpoint: ep}); err == nil {
			t.Errorf("endpoint %q taken", ep)
		}
	}
}

// TestTraceOf: a run's own trace is its id; another id is hashed; a
// sender's traceparent wins; span ids differ by node.
func TestTraceOf(t *testing.T) {
	for _, tc := range []struct{ run, parent, want string }{
		{"018f3a2b4c5d0001a1b2c3d4e5f60718", "", "018f3a2b4c5d0001a1b2c3d4e5f60718"},
		{"018f3a2b4c5d0001a1b2c3d4e5f60718", sender, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"018f3a2b4c5d0001a1b2c3d4e5f60718", "garbage", "018f3a2b4c5d0001a1b2c3d4e5f60718"},
	} {
		if got := TraceOf(tc.run, tc.parent); got.String() != tc.want {
			t.Errorf("TraceOf(%q, %q) = %s; want %s", tc.run, tc.parent, got, tc.want)
		}
	}
	if a, b := TraceOf("sched-1", ""), TraceOf("sched-2", ""); !a.IsValid() || a == b {
		t.Errorf("hashed ids %s %s", a, b)
	}
	if NodeSpan("r", 1) == NodeSpan("r", 2) || NodeSpan("r", 1) == RunSpan("r") || NodeSpan("r", 1) != NodeSpan("r", 1) {
		t.Error("span ids collide or vary")
	}
}

// statsWhen is x's stats once ok says so, or after 10 s.
func statsWhen(x *Exporter, ok func(Stats) bool) Stats {
	deadline := time.Now().Add(10 * time.Second)
	for !ok(x.Stats()) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return x.Stats()
}

// TestUncompressed: compression none sends the protobuf as it is, and a
// collector reads the same spans.
func TestUncompressed(t *testing.T) {
	rc := otlptest.New(t)
	x, err := New(Config{Endpoint: rc.URL, Ratio: 1, Uncompressed: true, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	x.Run(runlog.Run{ID: "018f3a2b4c5d0001a1b2c3d4e5f60718", Rule: "r", Started: t0, Ended: t0, Outcome: runlog.OK})
	spans := rc.Wait(t, 1)
	x.Close(context.Background())
	if h := rc.Headers()[0]; h.Get("Content-Encoding") != "" || spans[0].Name != "run r" {
		t.Errorf("Content-Encoding %q, span %q", h.Get("Content-Encoding"), spans[0].Name)
	}
}

// TestPartialSuccess: spans a collector takes but rejects are counted
// failed with its words, the rest exported, and the request is not sent
// again (OTLP: a partial success is not retried).
func TestPartialSuccess(t *testing.T) {
	rc := otlptest.New(t)
	rc.Answer(func(w http.ResponseWriter) bool {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write([]byte{0x0a, 0x0c, 0x08, 0x01, 0x12, 0x08, 't', 'o', 'o', ' ', 'o', 'l', 'd', '!'}) // partial_success{rejected_spans: 1, error_message: "too old!"}
		return true
	})
	x, err := New(Config{Endpoint: rc.URL, Ratio: 1, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for i := range 3 {
		x.Node(runlog.Node{Run: "018f3a2b4c5d0001a1b2c3d4e5f60718", Seq: i + 1, Kind: runlog.KindStep, Started: t0, Ended: t0, Outcome: runlog.OK})
	}
	st := statsWhen(x, func(s Stats) bool { return s.Exported+s.Failed == 3 })
	time.Sleep(1500 * time.Millisecond) // a retry would come after 1 s
	x.Close(context.Background())
	if st.Exported != 2 || st.Failed != 1 || !strings.Contains(st.LastError, "too old!") || len(rc.Headers()) != 1 {
		t.Errorf("stats %+v after %d requests; want 2 exported, 1 failed with the collector's words, one request", st, len(rc.Headers()))
	}
}

func TestParseHeaders(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: name: value; ... or "error"
	}{
		{"x-api-key=k1", "x-api-key: k1"},
		{"authorization=Bearer abc def, x-tenant = acme", "authorization: Bearer abc def; x-tenant: acme"},
		{"x-list=a%2Cb%25", "x-list: a,b%"},
		{"", ""},
		{"x a=1", "error"},
		{"novalue", "error"},
		{"x=%zz", "error"},
		{"x=a%00b", "error"},
		{"x=a\x7fb", "error"},
		{"Host=evil", "error"},
		{"content-encoding=br", "error"},
	} {
		hs, err := ParseHeaders(tc.in)
		var got []string
		for _, h := range hs {
			got = append(got, h[0]+": "+h[1])
		}
		g := strings.Join(got, "; ")
		if err != nil {
			g = "error"
		}
		if g != tc.want {
			t.Errorf("ParseHeaders(%q) = %q (%v); want %q", tc.in, g, err, tc.want)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://localhost:4318", "http://localhost:4318/v1/traces"},
		{"https://otel.example/custom/path?x=1", "https://otel.example/custom/path?x=1"},
		{"http://localhost:99999", ""},
		{"http://:4318", ""},
		{"ftp://x", ""},
		{"localhost:4318", ""},
	} {
		u, err := CheckEndpoint(tc.in)
		got := ""
		if err == nil {
			got = u.String()
		}
		if got != tc.want {
			t.Errorf("CheckEndpoint(%q) = %q (%v); want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestEndpointShown: a password in the endpoint is not shown.
func TestEndpointShown(t *testing.T) {
	x, err := New(Config{Endpoint: "http://user:s3cret@127.0.0.1:1/v1/traces", Ratio: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close(context.Background())
	if e := x.Endpoint(); strings.Contains(e, "s3cret") || !strings.Contains(e, "user:xxxxx@") {
		t.Errorf("Endpoint() = %q", e)
	}
}
