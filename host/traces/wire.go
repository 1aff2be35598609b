package traces

import (
	"bytes"
	"compress/gzip"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ruled-dev/ruled/host/runlog"
)

// The OTLP messages are written here by hand, field by field, as
// opentelemetry/proto/trace/v1 numbers them: a span straight from the
// node it is made of, with no span object, attribute slice or message
// tree between (the SDK's spans and proto.Marshal cost 0.46× the events/s
// of a daemon not exporting: BenchmarkTraces, RATIONALE.md). The tests
// decode what is written with the official generated types.

// Field numbers of the messages written (trace.proto, common.proto,
// resource.proto, trace_service.proto).
const (
	fRequestResourceSpans = 1 // ExportTraceServiceRequest
	fResourceSpansRes     = 1 // ResourceSpans.resource
	fResourceSpansScope   = 2 // ResourceSpans.scope_spans
	fResourceAttrs        = 1 // Resource.attributes
	fScopeSpansScope      = 1 // ScopeSpans.scope
	fScopeSpansSpans      = 2 // ScopeSpans.spans
	fScopeName            = 1 // InstrumentationScope.name
	fScopeVersion         = 2
	fSpanTraceID          = 1
	fSpanID               = 2
	fSpanParentID         = 4
	fSpanName             = 5
	fSpanKind             = 6
	fSpanStart            = 7
	fSpanEnd              = 8
	fSpanAttrs            = 9
	fSpanStatus           = 15
	fSpanFlags            = 16
	fStatusMessage        = 2
	fStatusCode           = 3
	fKVKey                = 1 // KeyValue
	fKVValue              = 2
	fAnyString            = 1 // AnyValue
	fAnyInt               = 3
	fAnyArray             = 5
	fArrayValues          = 1 // ArrayValue

	kindInternal   = 1 // Span.SpanKind
	kindConsumer   = 5
	statusError    = 2 // Status.StatusCode
	flagHasRemote  = 0x100
	flagRemote     = 0x200
	maxAttrValue   = 1024 // bytes of a string attribute kept, as the SDK's default span limit
	scopeName      = "github.com/ruled-dev/ruled/host/traces"
	spanFlagsTrace = 0x01 // the sampled bit, in a span's flags
)

// clean is s made valid UTF-8 and cut at maxAttrValue bytes on a rune's
// boundary: protobuf strings must be valid, and an error's words may
// carry a plugin's bytes.
func clean(s string) string {
	if len(s) > maxAttrValue {
		cut := maxAttrValue
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// appendString appends field num as a string (clean).
func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, clean(s))
}

// appendKV appends a KeyValue's head as field num: its key, and the tag
// and length of its AnyValue of any bytes, which the caller appends.
func appendKV(b []byte, num protowire.Number, key string, any int) []byte {
	kv := protowire.SizeTag(fKVKey) + protowire.SizeBytes(len(key)) + protowire.SizeTag(fKVValue) + protowire.SizeBytes(any)
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(kv))
	b = protowire.AppendTag(b, fKVKey, protowire.BytesType)
	b = protowire.AppendString(b, key)
	b = protowire.AppendTag(b, fKVValue, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(any))
}

// appendAttr appends a KeyValue of a string as field num: a span's
// attributes (fSpanAttrs) or the resource's (fResourceAttrs).
func appendAttr(b []byte, num protowire.Number, key, val string) []byte {
	val = clean(val)
	b = appendKV(b, num, key, protowire.SizeTag(fAnyString)+protowire.SizeBytes(len(val)))
	b = protowire.AppendTag(b, fAnyString, protowire.BytesType)
	return protowire.AppendString(b, val)
}

// appendIntAttr appends a KeyValue of an integer as a span's attribute.
func appendIntAttr(b []byte, key string, v int64) []byte {
	b = appendKV(b, fSpanAttrs, key, protowire.SizeTag(fAnyInt)+protowire.SizeVarint(uint64(v)))
	b = protowire.AppendTag(b, fAnyInt, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// appendListAttr appends a KeyValue of a list of strings (ids: no
// cutting needed beyond their own bound).
func appendListAttr(b []byte, key string, vals []string) []byte {
	arr := 0
	for _, v := range vals {
		arr += protowire.SizeTag(fArrayValues) + protowire.SizeBytes(protowire.SizeTag(fAnyString)+protowire.SizeBytes(len(v)))
	}
	b = appendKV(b, fSpanAttrs, key, protowire.SizeTag(fAnyArray)+protowire.SizeBytes(arr))
	b = protowire.AppendTag(b, fAnyArray, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(arr))
	for _, v := range vals {
		b = protowire.AppendTag(b, fArrayValues, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(protowire.SizeTag(fAnyString)+protowire.SizeBytes(len(v))))
		b = protowire.AppendTag(b, fAnyString, protowire.BytesType)
		b = protowire.AppendString(b, v)
	}
	return b
}

// spanHead is what every span has: its ids, name, kind and times.
type spanHead struct {
	trace        trace.TraceID
	span, parent trace.SpanID
	remote       bool // the parent is another process's
	sampled      bool
	name         string
	kind         uint64
	start, end   time.Time
}

// appendSpan appends it as a Span message (without its own tag and
// length: the caller's scratch buffer holds one span).
func (e *Exporter) appendSpan(b []byte, it *item) []byte {
	var h spanHead
	var runID, parent, outcome, errText string
	if r := it.run; r != nil {
		runID, parent = r.ID, r.Trace
		psc, _ := Parse(parent)
		h.trace, h.span, h.name, h.kind, h.start, h.end = TraceOf(runID, parent), RunSpan(runID), "run "+r.Rule, kindConsumer, r.Started, r.Ended
		if psc.IsValid() {
			h.parent, h.remote = psc.SpanID(), true
		}
		h.sampled = e.sampled(h.trace, psc)
		outcome, errText = r.Outcome, r.Error
	} else {
		n := &it.node
		runID, parent = n.Run, n.Trace
		psc, _ := Parse(parent)
		h.trace, h.span, h.parent, h.kind, h.start, h.end = TraceOf(runID, parent), NodeSpan(runID, n.Seq), RunSpan(runID), kindInternal, n.Started, n.Ended
		h.name = n.Kind
		if n.Name != "" {
			h.name += " " + n.Name
		}
		h.sampled = e.sampled(h.trace, psc)
		outcome, errText = n.Outcome, n.Error
	}
	b = protowire.AppendTag(b, fSpanTraceID, protowire.BytesType)
	b = protowire.AppendBytes(b, h.trace[:])
	b = protowire.AppendTag(b, fSpanID, protowire.BytesType)
	b = protowire.AppendBytes(b, h.span[:])
	if h.parent.IsValid() {
		b = protowire.AppendTag(b, fSpanParentID, protowire.BytesType)
		b = protowire.AppendBytes(b, h.parent[:])
	}
	b = appendString(b, fSpanName, h.name)
	b = protowire.AppendTag(b, fSpanKind, protowire.VarintType)
	b = protowire.AppendVarint(b, h.kind)
	b = protowire.AppendTag(b, fSpanStart, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(h.start.UnixNano()))
	b = protowire.AppendTag(b, fSpanEnd, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(h.end.UnixNano()))
	if r := it.run; r != nil {
		b = appendAttr(b, fSpanAttrs, "ruled.rule", r.Rule)
		b = appendAttr(b, fSpanAttrs, "ruled.run", r.ID)
		b = appendAttr(b, fSpanAttrs, "ruled.topic", r.Topic)
		if r.Key != "" {
			b = appendAttr(b, fSpanAttrs, "ruled.key", r.Key)
		}
		if r.EventID != "" {
			b = appendAttr(b, fSpanAttrs, "ruled.event.id", r.EventID)
		}
		if r.Parent != "" {
			b = appendAttr(b, fSpanAttrs, "ruled.parent_run", r.Parent)
		}
	} else {
		n := &it.node
		b = appendAttr(b, fSpanAttrs, "ruled.run", n.Run)
		b = appendAttr(b, fSpanAttrs, "ruled.node.kind", n.Kind)
		b = appendIntAttr(b, "ruled.node.seq", int64(n.Seq))
		for _, a := range [...][2]string{{"ruled.step", n.Name}, {"ruled.function", n.Do}, {"ruled.module.digest", n.Digest},
			{"ruled.detail", n.Detail}, {"ruled.by", n.By}} {
			if a[1] != "" {
				b = appendAttr(b, fSpanAttrs, a[0], a[1])
			}
		}
		if n.In > 0 {
			b = appendIntAttr(b, "ruled.input.bytes", int64(n.In))
		}
		if n.Out > 0 {
			b = appendIntAttr(b, "ruled.output.bytes", int64(n.Out))
		}
		if n.Vals > 0 {
			b = appendIntAttr(b, "ruled.values.bytes", int64(n.Vals))
		}
		if len(n.Children) > 0 {
			b = appendListAttr(b, "ruled.children", n.Children)
		}
	}
	b = appendAttr(b, fSpanAttrs, "ruled.outcome", outcome)
	if errText != "" {
		b = appendAttr(b, fSpanAttrs, "ruled.error", errText)
	}
	if failed := outcomeFailed(outcome); failed != "" {
		msg := errText
		if msg == "" {
			msg = failed
		}
		st := appendString(nil, fStatusMessage, msg)
		st = protowire.AppendTag(st, fStatusCode, protowire.VarintType)
		st = protowire.AppendVarint(st, statusError)
		b = protowire.AppendTag(b, fSpanStatus, protowire.BytesType)
		b = protowire.AppendBytes(b, st)
	}
	flags := uint32(flagHasRemote)
	if h.sampled {
		flags |= spanFlagsTrace
	}
	if h.remote {
		flags |= flagRemote
	}
	b = protowire.AppendTag(b, fSpanFlags, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, flags)
}

// outcomeFailed is the status words of an outcome that is an error, ""
// for one that is not: a cancel, a drop, a condition that said no are a
// run doing as told.
func outcomeFailed(outcome string) string {
	switch outcome {
	case runlog.Failed, runlog.Interrupted:
		return outcome
	}
	return ""
}

// head is the request's beginning before its spans: the resource (this
// process) and the scope, worked out once.
func head(cfg Config) (resource, scope []byte) {
	resource = appendAttr(nil, fResourceAttrs, "service.name", cfg.Service)
	if cfg.Version != "" {
		resource = appendAttr(resource, fResourceAttrs, "service.version", cfg.Version)
	}
	if cfg.Instance != "" {
		resource = appendAttr(resource, fResourceAttrs, "service.instance.id", cfg.Instance)
	}
	scope = appendString(nil, fScopeName, scopeName)
	return resource, scope
}

// batch gathers spans, each as a ScopeSpans.spans field, until it is sent.
type batch struct {
	spans   []byte // ScopeSpans.spans fields
	n       int
	scratch []byte
	z       *gzip.Writer
	out     bytes.Buffer
}

// add appends it to the batch.
func (bt *batch) add(e *Exporter, it *item) {
	bt.scratch = e.appendSpan(bt.scratch[:0], it)
	bt.spans = protowire.AppendTag(bt.spans, fScopeSpansSpans, protowire.BytesType)
	bt.spans = protowire.AppendBytes(bt.spans, bt.scratch)
	bt.n++
}

// request is the batch as an ExportTraceServiceRequest, gzipped when
// gz; the batch is empty after. The bytes are the batch's until the next
// request.
func (bt *batch) request(resource, scope []byte, gz bool) []byte {
	ss := protowire.SizeTag(fScopeSpansScope) + protowire.SizeBytes(len(scope)) + len(bt.spans)
	rs := protowire.SizeTag(fResourceSpansRes) + protowire.SizeBytes(len(resource)) + protowire.SizeTag(fResourceSpansScope) + protowire.SizeBytes(ss)
	msg := make([]byte, 0, protowire.SizeTag(fRequestResourceSpans)+protowire.SizeBytes(rs))
	msg = protowire.AppendTag(msg, fRequestResourceSpans, protowire.BytesType)
	msg = protowire.AppendVarint(msg, uint64(rs))
	msg = protowire.AppendTag(msg, fResourceSpansRes, protowire.BytesType)
	msg = protowire.AppendBytes(msg, resource)
	msg = protowire.AppendTag(msg, fResourceSpansScope, protowire.BytesType)
	msg = protowire.AppendVarint(msg, uint64(ss))
	msg = protowire.AppendTag(msg, fScopeSpansScope, protowire.BytesType)
	msg = protowire.AppendBytes(msg, scope)
	bt.out.Reset()
	if !gz {
		bt.out.Write(msg)
		bt.out.Write(bt.spans)
		bt.spans, bt.n = bt.spans[:0], 0
		return bt.out.Bytes()
	}
	if bt.z == nil {
		bt.z, _ = gzip.NewWriterLevel(&bt.out, gzip.BestSpeed)
	} else {
		bt.z.Reset(&bt.out)
	}
	bt.z.Write(msg)
	bt.z.Write(bt.spans)
	bt.z.Close()
	bt.spans, bt.n = bt.spans[:0], 0
	return bt.out.Bytes()
}
