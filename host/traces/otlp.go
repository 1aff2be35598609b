package traces

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// client posts OTLP/HTTP requests (protobuf, gzip) to one collector. It
// is ruled's own, not the SDK's otlptracehttp: that exporter links gRPC
// and its gateway (46.0 MB against 30.9 MB for the daemon with the SDK
// alone, RATIONALE.md), for a request that is one POST.
type client struct {
	url     string
	headers [][2]string
	http    *http.Client

	mu     sync.Mutex
	cancel context.CancelFunc // the request in flight's; abort calls it
	gone   bool
}

func newClient(cfg Config) (*client, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("traces: the endpoint %q is not an http:// or https:// URL of a collector (http://localhost:4318)", cfg.Endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	for _, h := range cfg.Headers {
		if h[0] == "" || strings.ContainsAny(h[0], " \t\r\n:") || strings.ContainsAny(h[1], "\r\n") {
			return nil, fmt.Errorf("traces: header %q is not a name and a value", h[0])
		}
	}
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: cfg.Timeout}).DialContext,
		MaxIdleConns: 2, IdleConnTimeout: time.Minute, TLSHandshakeTimeout: cfg.Timeout, ResponseHeaderTimeout: cfg.Timeout}
	return &client{url: u.String(), headers: cfg.Headers, http: &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// maxAnswer bounds what is read of a collector's answer.
const maxAnswer = 64 << 10

// post sends one request of n spans: how many the collector said it
// rejected, and on an error how long to wait before trying again (0: the
// exporter's backoff; -1: not again, the collector refused the request).
func (c *client) post(body []byte, n int) (rejected int, retryAfter time.Duration, err error) {
	c.mu.Lock()
	if c.gone {
		c.mu.Unlock()
		return 0, -1, errors.New("traces: stopped")
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.mu.Unlock()
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, -1, err
	}
	for _, h := range c.headers {
		req.Header.Add(h[0], h[1])
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	switch {
	case resp.StatusCode == http.StatusOK:
		rejected, msg := partial(answer)
		if rejected > 0 {
			return min(int(rejected), n), 0, fmt.Errorf("traces: the collector rejected %d of %d spans: %s", rejected, n, msg)
		}
		return 0, 0, nil
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		wait := time.Duration(0)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return 0, wait, fmt.Errorf("traces: the collector answered %s", resp.Status)
	default:
		return 0, -1, fmt.Errorf("traces: the collector refused the request: %s%s", resp.Status, said(answer))
	}
}

// said is a refusal's body in a line, bounded, when it is text.
func said(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' && r != '\t' || r == 0xfffd }) {
		return ""
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return ": " + s
}

// partial reads an ExportTraceServiceResponse's partial_success: the
// spans the collector rejected and its words. Anything it cannot read is
// no rejection (the request was answered 200).
func partial(b []byte) (rejected int64, msg string) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, ""
		}
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return 0, ""
			}
			b = b[n:]
			continue
		}
		ps, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return 0, ""
		}
		b = b[n:]
		for len(ps) > 0 {
			pnum, ptyp, m := protowire.ConsumeTag(ps)
			if m < 0 {
				return 0, ""
			}
			ps = ps[m:]
			switch {
			case pnum == 1 && ptyp == protowire.VarintType:
				v, m := protowire.ConsumeVarint(ps)
				if m < 0 {
					return 0, ""
				}
				rejected, ps = int64(v), ps[m:]
			case pnum == 2 && ptyp == protowire.BytesType:
				v, m := protowire.ConsumeBytes(ps)
				if m < 0 {
					return 0, ""
				}
				msg, ps = string(v), ps[m:]
			default:
				m = protowire.ConsumeFieldValue(pnum, ptyp, ps)
				if m < 0 {
					return 0, ""
				}
				ps = ps[m:]
			}
		}
	}
	return rejected, msg
}

// abort ends the request in flight and refuses the next: a stop that
// cannot wait for the collector any longer.
func (c *client) abort() {
	c.mu.Lock()
	c.gone = true
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
}

// errCause is a failure's kind for the warning's rate limit: the status
// or the network, never the words (which name addresses and ports).
func errCause(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne):
		return "network"
	case err == nil:
		return ""
	}
	s := err.Error()
	if i := strings.Index(s, "answered "); i >= 0 {
		return s[i:min(len(s), i+12)]
	}
	if i := strings.Index(s, "refused the request: "); i >= 0 {
		return s[i:min(len(s), i+24)]
	}
	return "other"
}

// encode is spans as an ExportTraceServiceRequest, gzipped: one resource
// (this process) and one scope. The request message is written by hand —
// field 1, repeated ResourceSpans — so that its package (and gRPC, which
// its generated service code imports) stays out of the binary.
func encode(spans []sdktrace.ReadOnlySpan) []byte {
	rs := &tracepb.ResourceSpans{Resource: &resourcepb.Resource{}}
	if res := spans[0].Resource(); res != nil {
		rs.Resource.Attributes = keyValues(res.Attributes())
		rs.SchemaUrl = res.SchemaURL()
	}
	scope := spans[0].InstrumentationScope()
	ss := &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: scope.Name, Version: scope.Version}}
	for _, s := range spans {
		ss.Spans = append(ss.Spans, spanOf(s))
	}
	rs.ScopeSpans = []*tracepb.ScopeSpans{ss}
	b, err := proto.Marshal(rs)
	if err != nil { // only a message with invalid UTF-8 fails, and attribute strings are made valid
		b = nil
	}
	msg := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), b)
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
	w.Write(msg)
	w.Close()
	return z.Bytes()
}

func spanOf(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	sp := &tracepb.Span{TraceId: tid[:], SpanId: sid[:], Name: valid(s.Name()), Kind: tracepb.Span_SpanKind(s.SpanKind()),
		StartTimeUnixNano: uint64(s.StartTime().UnixNano()), EndTimeUnixNano: uint64(s.EndTime().UnixNano()),
		Attributes: keyValues(s.Attributes()), DroppedAttributesCount: uint32(s.DroppedAttributes()),
		Flags: uint32(sc.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)}
	if p := s.Parent(); p.IsValid() {
		pid := p.SpanID()
		sp.ParentSpanId = pid[:]
		if p.IsRemote() {
			sp.Flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
	}
	switch st := s.Status(); st.Code {
	case codes.Error:
		sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: valid(st.Description)}
	case codes.Ok:
		sp.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	}
	for _, l := range s.Links() {
		lt, ls := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		sp.Links = append(sp.Links, &tracepb.Span_Link{TraceId: lt[:], SpanId: ls[:], Attributes: keyValues(l.Attributes),
			Flags: uint32(l.SpanContext.TraceFlags())})
	}
	return sp
}

func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: valid(string(kv.Key)), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRINGSLICE:
		var vals []*commonpb.AnyValue
		for _, s := range v.AsStringSlice() {
			vals = append(vals, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: valid(s)}})
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: valid(v.Emit())}}
}

// valid is s with invalid UTF-8 replaced: protobuf strings must be valid,
// and an error's words may carry a plugin's bytes.
func valid(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
