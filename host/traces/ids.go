package traces

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"

	"github.com/ruled-dev/ruled/internal/traceparent"
)

// Parse reads a W3C traceparent value as the span a run's trace goes
// under (internal/traceparent's rules); false: none, and the run is a
// trace of its own.
func Parse(s string) (trace.SpanContext, bool) {
	c, ok := traceparent.Parse(s)
	if !ok {
		return trace.SpanContext{}, false
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: c.Trace, SpanID: c.Span,
		TraceFlags: trace.TraceFlags(c.Flags & 1), Remote: true}), true
}

func format(t trace.TraceID, s trace.SpanID, sampled bool) string {
	c := traceparent.Context{Trace: t, Span: s}
	if sampled {
		c.Flags = 1
	}
	return c.String()
}

// TraceOf is the trace a run is in: its trigger's (parent, a canonical
// traceparent) or, with none, one of its own whose id is the run's id
// (ruled's run ids are 32 hex digits, the last 16 random, as a trace id's
// are meant to be; any other id is hashed). An operator finds a run's
// trace by its id.
func TraceOf(run, parent string) trace.TraceID {
	if sc, ok := Parse(parent); ok {
		return sc.TraceID()
	}
	var t trace.TraceID
	if len(run) == 32 {
		if _, err := hex.Decode(t[:], []byte(run)); err == nil && t.IsValid() {
			return t
		}
	}
	sum := sha256.Sum256([]byte("ruled run\x00" + run))
	copy(t[:], sum[:16])
	return t
}

// RunSpan is the span id of a run's own span: the parent of its nodes'.
func RunSpan(run string) trace.SpanID { return spanID(run, 0) }

// NodeSpan is the span id of node seq (1 and up) of a run.
func NodeSpan(run string, seq int) trace.SpanID { return spanID(run, seq) }

// spanID is FNV-1a (64 bits) over the run's id and the node's number (0:
// the run's own span). Not a secret, not random: two processes must work
// out the same id, and the ids of one trace must differ, which 64 bits
// of a good hash over a few hundred nodes do (a sha256 here was 3 % of a
// daemon's CPU while exporting every run).
func spanID(run string, seq int) trace.SpanID {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := 0; i < len(run); i++ {
		h = (h ^ uint64(run[i])) * prime
	}
	for i := 0; i < 8; i++ { // the number's eight bytes after the id's
		h = (h ^ uint64(byte(seq>>(8*i)))) * prime
	}
	var id trace.SpanID
	binary.BigEndian.PutUint64(id[:], h)
	if !id.IsValid() { // an id of zeros is no id
		id[7] = 1
	}
	return id
}
