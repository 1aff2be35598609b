package otlptest

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is a real OTLP/HTTP endpoint: an httptest server decoding each
// request with the official protobuf types, as a collector does.
type Receiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	res     [][]string // each request's resource attributes, key=value
	headers []http.Header
	answer  func(w http.ResponseWriter) bool
	got     chan struct{}
}

// New starts a Receiver, closed when the test ends.
func New(t testing.TB) *Receiver {
	rc := &Receiver{got: make(chan struct{}, 1000)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf request", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		answer := rc.answer
		rc.headers = append(rc.headers, r.Header.Clone())
		rc.mu.Unlock()
		if answer != nil && answer(w) {
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			z, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = z
		}
		b, _ := io.ReadAll(body)
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		for _, rs := range req.ResourceSpans {
			var keys []string
			for _, kv := range rs.GetResource().GetAttributes() {
				keys = append(keys, kv.Key+"="+kv.Value.GetStringValue())
			}
			rc.res = append(rc.res, keys)
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
		rc.got <- struct{}{}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// Answer, when answer returns true, has answered a request instead of the
// receiver (a refusal, a 503, a hang); nil: every request is taken.
func (rc *Receiver) Answer(answer func(w http.ResponseWriter) bool) {
	rc.mu.Lock()
	rc.answer = answer
	rc.mu.Unlock()
}

// Spans are the spans taken so far, in the order they came.
func (rc *Receiver) Spans() []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...)
}

// Headers are the headers of every request so far, taken or not.
func (rc *Receiver) Headers() []http.Header {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]http.Header(nil), rc.headers...)
}

// Resources are each taken request's resource attributes, key=value.
func (rc *Receiver) Resources() [][]string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([][]string(nil), rc.res...)
}

// Wait returns the spans once at least n were taken, failing the test
// after 20 s.
func (rc *Receiver) Wait(t testing.TB, n int) []*tracepb.Span {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		rc.mu.Lock()
		if len(rc.spans) >= n {
			s := append([]*tracepb.Span(nil), rc.spans...)
			rc.mu.Unlock()
			return s
		}
		rc.mu.Unlock()
		select {
		case <-rc.got:
		case <-deadline:
			rc.mu.Lock()
			defer rc.mu.Unlock()
			t.Fatalf("%d spans arrived in 20 s; want %d", len(rc.spans), n)
		}
	}
}

// Attr is a span's attribute as text: a list joined by commas, an
// integer in decimal; "" when absent.
func Attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			v := kv.Value
			switch {
			case v.GetStringValue() != "":
				return v.GetStringValue()
			case v.GetArrayValue() != nil:
				var b bytes.Buffer
				for i, x := range v.GetArrayValue().Values {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString(x.GetStringValue())
				}
				return b.String()
			default:
				return strconv.FormatInt(v.GetIntValue(), 10)
			}
		}
	}
	return ""
}
