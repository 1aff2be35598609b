package traces

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// Config is what an Exporter sends, where, and its bounds.
type Config struct {
	// Endpoint is the collector's OTLP/HTTP address: a URL whose path, when
	// it has none, is /v1/traces (http://localhost:4318 posts to
	// http://localhost:4318/v1/traces). Required.
	Endpoint string
	// Headers go with every request (an API key, a tenant): name, value.
	Headers [][2]string
	// Ratio is the share of runs with no incoming trace context that are
	// sent (0 to 1, by trace id: a run is sent whole or not at all). A run
	// whose trigger came with a traceparent follows its sampled flag.
	Ratio float64
	// MaxQueue bounds the spans waiting to be sent; one past it is
	// dropped and counted (default 2,048).
	MaxQueue int
	// MaxBatch bounds the spans of one request (default 512).
	MaxBatch int
	// Interval is the longest a span waits for its batch to fill (default
	// 1s).
	Interval time.Duration
	// Timeout bounds one request (default 10s). A failed request is tried
	// again three times, 1, 2 and 4 s apart (or as the collector's
	// Retry-After says, up to 30 s), then its spans are counted failed.
	Timeout time.Duration
	// Uncompressed sends requests as they are, not gzipped: for a
	// collector on the device or its network, where bytes are cheap and
	// the device's CPU is not (gzip was 7 % of a daemon's CPU while
	// exporting every run).
	Uncompressed bool
	// Resource names this process: service.name (default "ruled"),
	// service.version, service.instance.id.
	Service, Version, Instance string
	// Warn is told a failure, at most once a second a cause; nil: nowhere.
	Warn func(msg string, args ...any)
}

// Stats counts an Exporter's spans.
type Stats struct {
	Exported uint64 `json:"exported"` // the collector took them
	Dropped  uint64 `json:"dropped"`  // the queue was full
	Failed   uint64 `json:"failed"`   // a request failed for good, or the collector refused them
	Queued   int    `json:"queued"`   // waiting now
	// LastError is the last failure's words, "" when the last request
	// went through.
	LastError string `json:"last_error,omitempty"`
}

// Exporter sends runs as traces (the package comment). Run and Node are
// the execution log's Tracer methods and never block; StepParent is
// asked by a step for the traceparent it sends on.
type Exporter struct {
	cfg             Config
	client          *client
	ratio           sdktrace.Sampler // the SDK's TraceIDRatioBased
	resource, scope []byte           // each request's, written once (head)
	batch           batch            // the loop's
	pending         atomic.Int64     // spans in the batch, for Stats

	mu     sync.Mutex
	queue  []item
	spare  []item       // the array the loop gave back: the next queue
	taken  atomic.Int64 // items the loop took and has not written as spans yet
	closed bool
	wake   chan struct{}
	flush  chan chan struct{}
	stop   chan struct{}
	done   chan struct{}

	warned                    lograte.Limiter
	exported, dropped, failed atomic.Uint64
	lastErr                   atomic.Pointer[string]
}

// item is a closed node or an ended run, waiting to be a span: what the
// span says, the node's values as their sizes and its words cut to a
// span's bound, so that a collector that is down holds MaxQueue spans'
// worth, not the nodes' inputs and outputs.
type item struct {
	run  *runlog.Run // nil: a node
	node spanNode
}

// spanNode is the part of a runlog.Node a span says.
type spanNode struct {
	Run, Trace, Kind, Name, Do, Digest, Detail, By, Outcome, Error string
	Seq                                                            int
	Started, Ended                                                 time.Time
	In, Out, Vals                                                  int // the sizes of the node's Input, Output, Values
	Children                                                       []string
}

// maxChildren bounds the child runs a span names.
const maxChildren = 32

func nodeOf(n *runlog.Node) spanNode {
	return spanNode{Run: n.Run, Trace: n.Trace, Kind: n.Kind, Name: cut(n.Name), Do: n.Do, Digest: n.Digest[:min(len(n.Digest), runlog.DigestLen)],
		Detail: cut(n.Detail), By: cut(n.By), Outcome: n.Outcome, Error: cut(n.Error), Seq: n.Seq, Started: n.Started, Ended: n.Ended,
		In: len(n.Input), Out: len(n.Output), Vals: len(n.Values), Children: n.Children[:min(len(n.Children), maxChildren)]}
}

// cut is s at most maxAttrValue bytes (clean cuts on a rune's boundary
// when the span is written).
func cut(s string) string {
	if len(s) > maxAttrValue+4 {
		return s[:maxAttrValue+4]
	}
	return s
}

// New starts an Exporter; Close stops it.
func New(cfg Config) (*Exporter, error) {
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 2048
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 512
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Service == "" {
		cfg.Service = "ruled"
	}
	if !(cfg.Ratio >= 0 && cfg.Ratio <= 1) { // NaN too
		return nil, errors.New("traces: the sampling ratio is from 0 to 1, not " + strconv.FormatFloat(cfg.Ratio, 'g', -1, 64))
	}
	cl, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	e := &Exporter{cfg: cfg, client: cl, ratio: sdktrace.TraceIDRatioBased(cfg.Ratio),
		wake: make(chan struct{}, 1), flush: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	e.resource, e.scope = head(cfg)
	go e.loop()
	return e, nil
}

// sampled is whether a run of trace t under parent is sent: the parent's
// flag, or the ratio. Every span of the run is decided the same.
func (e *Exporter) sampled(t trace.TraceID, parent trace.SpanContext) bool {
	if parent.IsValid() {
		return parent.IsSampled()
	}
	return e.ratio.ShouldSample(sdktrace.SamplingParameters{TraceID: t}).Decision == sdktrace.RecordAndSample
}

// StepParent is the traceparent a step sends on while it runs: its node's
// span (seq) in its run's trace (parent, the trigger's traceparent, or
// ""). An outbound request carries it as a header, an event the step
// publishes or fires carries it on, and the run that event triggers is a
// span under the step.
func (e *Exporter) StepParent(run, parent string, seq int) string {
	sc, _ := Parse(parent)
	t := TraceOf(run, parent)
	return format(t, NodeSpan(run, seq), e.sampled(t, sc))
}

// Run hears a run entry: an ended run becomes its span. Never blocks.
func (e *Exporter) Run(r runlog.Run) {
	if r.Outcome == runlog.Running || !e.sends(r.ID, r.Trace) {
		return
	}
	r.Error = cut(r.Error)
	e.put(item{run: &r})
}

// Node hears a node: a closed one becomes a span. Never blocks.
func (e *Exporter) Node(n runlog.Node) {
	if n.Ended.IsZero() || n.Outcome == runlog.Open || n.Outcome == runlog.Held || !e.sends(n.Run, n.Trace) {
		return
	}
	e.put(item{node: nodeOf(&n)})
}

// sends is whether run's spans are sent (sampled): decided before they
// take a place in the queue, so a ratio below 1 costs the runs not sent
// nothing but this.
func (e *Exporter) sends(run, parent string) bool {
	if e.cfg.Ratio >= 1 && parent == "" {
		return true
	}
	sc, _ := Parse(parent)
	return e.sampled(TraceOf(run, parent), sc)
}

func (e *Exporter) put(it item) {
	e.mu.Lock()
	if e.closed || len(e.queue)+int(e.taken.Load()) >= e.cfg.MaxQueue {
		e.mu.Unlock()
		e.dropped.Add(1)
		return
	}
	e.queue = append(e.queue, it)
	full := len(e.queue) >= e.cfg.MaxBatch
	e.mu.Unlock()
	if !full {
		// The loop's ticker takes it within Interval: waking the loop for
		// each span cost a daemon sending a tenth of its runs as much as
		// one sending all (a wake-up a span, a goroutine switch each).
		return
	}
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Endpoint is where the Exporter posts, a password in the URL shown as
// xxxxx: for logs and status.
func (e *Exporter) Endpoint() string { return e.client.shown }

// Stats is what the Exporter has done so far.
func (e *Exporter) Stats() Stats {
	e.mu.Lock()
	q := len(e.queue) + int(e.taken.Load())
	e.mu.Unlock()
	s := Stats{Exported: e.exported.Load(), Dropped: e.dropped.Load(), Failed: e.failed.Load(), Queued: q + int(e.pending.Load())}
	if p := e.lastErr.Load(); p != nil {
		s.LastError = *p
	}
	return s
}

// Flush returns once what was queued before it was sent (or failed for
// good), or ctx ended: for a benchmark that charges the export to the
// runs that made it, and a test.
func (e *Exporter) Flush(ctx context.Context) {
	done := make(chan struct{})
	select {
	case e.flush <- done:
	case <-e.done:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Close sends what is queued, waiting at most until ctx ends (a collector
// that does not answer holds a stop that long, no longer), and stops the
// Exporter's goroutine. What is not sent by then is counted failed.
func (e *Exporter) Close(ctx context.Context) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		<-e.done
		return
	}
	e.closed = true
	e.mu.Unlock()
	close(e.stop)
	select {
	case <-e.done:
	case <-ctx.Done():
		e.client.abort()
		<-e.done
	}
}

// loop makes spans of what is queued and sends them in batches: woken
// when a batch's worth is queued, and every Interval for the rest.
func (e *Exporter) loop() {
	defer close(e.done)
	tick := time.NewTicker(e.cfg.Interval)
	defer tick.Stop()
	for {
		stopping, ticked := false, false
		var flushed chan struct{}
		select {
		case <-e.wake: // a batch's worth is queued
		case <-tick.C:
			ticked = true
		case flushed = <-e.flush:
		case <-e.stop:
			stopping = true
		}
		// The queue is taken whole and its array given back once done
		// (two arrays, swapped: nothing copied or allocated a turn); what
		// is taken still counts against MaxQueue until it is a span, so a
		// collector that hangs holds the queue and the batch in flight,
		// no more.
		e.mu.Lock()
		q := e.queue
		e.queue, e.spare = e.spare[:0], nil
		e.taken.Store(int64(len(q)))
		e.mu.Unlock()
		for i := range q {
			e.batch.add(e, &q[i])
			e.pending.Add(1)
			e.taken.Add(-1)
			q[i] = item{}
			if e.batch.n >= e.cfg.MaxBatch {
				e.sendBatch()
			}
		}
		e.mu.Lock()
		e.spare = q[:0]
		e.mu.Unlock()
		if ticked || flushed != nil || stopping { // what waited its Interval goes now, not at the next tick
			e.sendBatch()
		}
		if flushed != nil {
			close(flushed)
		}
		if stopping {
			return
		}
	}
}

// sendBatch sends the batch's spans, if any.
func (e *Exporter) sendBatch() {
	n := e.batch.n
	if n == 0 {
		return
	}
	body := bytes.Clone(e.batch.request(e.resource, e.scope, !e.cfg.Uncompressed)) // the client may read it after a failed Do returns
	e.send(body, n)
	e.pending.Add(-int64(n)) // queued (Stats) until sent or failed
}

// maxWait bounds one wait before a request is tried again, whatever a
// collector's Retry-After says.
const maxWait = 30 * time.Second

// send posts a request of n spans, trying again as Config.Timeout says;
// counts them.
func (e *Exporter) send(body []byte, n int) {
	wait := time.Second
	for try := 0; ; try++ {
		rejected, why, retryAfter, err := e.client.post(body, n)
		if err == nil {
			e.exported.Add(uint64(n - rejected))
			if rejected > 0 {
				e.failed.Add(uint64(rejected))
				e.lastErr.Store(&why)
				if folded, ok := e.warned.Allow("rejected"); ok && e.cfg.Warn != nil {
					e.cfg.Warn("traces: the collector rejected spans", "endpoint", e.client.shown, "spans", rejected, "said", why, "folded", folded)
				}
			} else {
				e.lastErr.Store(nil)
			}
			return
		}
		msg := err.Error()
		e.lastErr.Store(&msg)
		if folded, ok := e.warned.Allow(errCause(err)); ok && e.cfg.Warn != nil {
			e.cfg.Warn("traces: the collector did not take spans", "endpoint", e.client.shown, "spans", n,
				"error", msg, "folded", folded)
		}
		if retryAfter < 0 || try == 3 {
			e.failed.Add(uint64(n))
			return
		}
		if retryAfter > 0 {
			wait = retryAfter
		}
		wait = min(wait, maxWait)
		select {
		case <-time.After(wait):
		case <-e.stop:
			e.failed.Add(uint64(n))
			return
		}
		wait *= 2
	}
}
