package bus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/ruled-dev/ruled/internal/traceparent"
)

// IngestPath is where the daemon mounts Ingest.
const IngestPath = "/v1/events"

// DefaultMaxBody bounds an ingest request's body. default for Ingest.MaxBody.
const DefaultMaxBody = 8 << 20

// maxListed bounds the rejections a response lists, so that a body of a
// million bad lines does not answer with a hundred megabytes.
const maxListed = 100

// Ingest is the handler for POST /v1/events. The body is one event
// (Content-Type application/json) or newline-delimited events
// (application/x-ndjson or application/ndjson; blank lines skipped). Each
// event is decoded with Decoder and handed to Sink, in order.
//
// The answer is always JSON, an IngestResult, with a status that says what a
// client should do next:
//
//	202 Accepted         every event was taken.
//	207 Multi-Status     some were taken and some refused, listed by line.
//	                     Do not resend the body: the taken ones would be
//	                     taken twice. Fix and resend the refused lines.
//	400 Bad Request      none was taken (all refused, or the body held none).
//	405, 415             not a POST; not a JSON or NDJSON body. Nothing taken.
//	413                  the body is over MaxBody. Nothing taken.
//	503 + Retry-After    Sink failed (ruled is stopping, or its queue is full).
//	                     Lines before UnprocessedFrom were handled as listed;
//	                     resend from that line on.
//
// The body is read whole before the first event is decoded, so a request
// holds up to MaxBody of memory while it is served.
//
// Ingest does not authenticate: mount it behind a Guard, and on TCP behind
// a Limiter: MaxBody and the Decoder's MaxSize bound one request, the
// Limiter how many.
//
// Its fields must not change once it serves; it is safe for concurrent use.
type Ingest struct {
	// Sink takes each accepted event, on the request's goroutine. It should
	// queue the event and return at once. A *Rejection from it refuses that
	// event (listed like a decoding refusal); any other error stops the
	// request with 503. Required.
	Sink func(*Event) error
	// SinkAll, when set, takes the events of an NDJSON body in groups of
	// up to MaxGroup, in order, instead of Sink one by one: it returns how
	// many of them it took, in order, and the error that stopped it at the
	// next (as Sink's other errors: 503). A group lets the taker write
	// what it must keep of them together (the journal: one commit, not one
	// an event). A line refused by decoding ends the group before it, so a
	// 503 still means that nothing after UnprocessedFrom was handled.
	SinkAll func([]*Event) (int, error)
	// Decoder decodes each event. default: a zero Decoder.
	Decoder *Decoder
	// Counters, when set, counts every event accepted and refused.
	Counters *Counters
	// MaxBody bounds the request body in bytes. default: DefaultMaxBody.
	MaxBody int64
}

// IngestResult is the body of every Ingest response.
type IngestResult struct {
	// Accepted counts the events Sink took.
	Accepted int `json:"accepted"`
	// Rejected lists refused events by line (1 for a JSON body), in order,
	// the first 100 of them; never null.
	Rejected []LineRejection `json:"rejected"`
	// RejectedNotListed counts refusals beyond those listed.
	RejectedNotListed int `json:"rejected_not_listed,omitempty"`
	// Error says why the request failed as a whole (405, 413, 415, 503, or
	// a 400 for a body without events).
	Error string `json:"error,omitempty"`
	// UnprocessedFrom is, on a 503, the first line not handled.
	UnprocessedFrom int `json:"unprocessed_from,omitempty"`
}

// LineRejection is one refused event in an IngestResult.
type LineRejection struct {
	Line   int    `json:"line"`
	Reason Reason `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// ServeHTTP serves one request as described on Ingest.
func (h *Ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res := IngestResult{Rejected: []LineRejection{}}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		res.Error = fmt.Sprintf("bus: method %s not allowed: POST events", r.Method)
		writeResult(w, http.StatusMethodNotAllowed, &res)
		return
	}
	ndjson, ok := eventMediaType(r.Header.Get("Content-Type"))
	if !ok {
		res.Error = "bus: Content-Type must be application/json (one event) or application/x-ndjson (one event a line)"
		writeResult(w, http.StatusUnsupportedMediaType, &res)
		return
	}
	max := h.MaxBody
	if max <= 0 {
		max = DefaultMaxBody
	}
	body, tooLarge, err := readBody(w, r, max)
	if err != nil {
		res.Error = err.Error()
		status := http.StatusBadRequest
		if tooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		writeResult(w, status, &res)
		return
	}

	// A W3C traceparent header puts the runs the body's events trigger
	// under the sender's span; one that is not a traceparent, or two, is
	// none (the recommendation: a receiver then starts a trace anew).
	in := ingester{dec: h.Decoder, sink: h.Sink, counters: h.Counters, onReject: res.list, single: !ndjson}
	if tp := r.Header.Values(traceparent.Header); len(tp) == 1 {
		in.trace = traceparent.Canonical(tp[0])
	}
	if in.dec == nil {
		in.dec = &defaultDecoder
	}
	if ndjson {
		in.sinkAll = h.SinkAll
		res.UnprocessedFrom, err = in.readLines(r.Context(), bytes.NewReader(body))
	} else if _, err = in.take(1, body); err != nil {
		res.UnprocessedFrom = 1
	}
	res.Accepted = in.accepted

	switch {
	case err != nil:
		res.Error = err.Error()
		w.Header().Set("Retry-After", "1")
		writeResult(w, http.StatusServiceUnavailable, &res)
	case in.accepted == 0 && in.rejected == 0:
		res.Error = "bus: no event in the body"
		writeResult(w, http.StatusBadRequest, &res)
	case in.rejected == 0:
		writeResult(w, http.StatusAccepted, &res)
	case in.accepted == 0:
		writeResult(w, http.StatusBadRequest, &res)
	default:
		writeResult(w, http.StatusMultiStatus, &res)
	}
}

func (res *IngestResult) list(line int, err error) {
	if len(res.Rejected) == maxListed {
		res.RejectedNotListed++
		return
	}
	lr := LineRejection{Line: line, Reason: ReasonOf(err), Detail: err.Error()}
	var rej *Rejection
	if errors.As(err, &rej) {
		lr.Detail = rej.Detail
	}
	res.Rejected = append(res.Rejected, lr)
}

// readBody reads the whole body, refusing more than max bytes, before any
// event is decoded: a 413 then means that nothing was taken.
func readBody(w http.ResponseWriter, r *http.Request, max int64) (b []byte, tooLarge bool, err error) {
	if r.ContentLength <= max {
		b, err = io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	}
	if r.ContentLength > max || errors.As(err, new(*http.MaxBytesError)) {
		return nil, true, fmt.Errorf("bus: body over %d bytes: send fewer events a request", max)
	}
	if err != nil {
		return nil, false, fmt.Errorf("bus: read body: %w", err)
	}
	return b, false, nil
}

// eventMediaType says whether ct is NDJSON, or JSON, or neither (ok false).
func eventMediaType(ct string) (ndjson, ok bool) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false, false
	}
	switch mt {
	case "application/json":
		return false, true
	case "application/x-ndjson", "application/ndjson":
		return true, true
	}
	return false, false
}

func writeResult(w http.ResponseWriter, status int, res *IngestResult) {
	b, _ := json.Marshal(res) // plain fields: cannot fail
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
