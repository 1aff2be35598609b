package observe

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/seq"
)

// Seen is one event the engine dispatched, as a recorder (ruled record)
// keeps it: when, the event, and whether a rule's plugin published it.
type Seen struct {
	At time.Time `json:"at"` // the engine's clock at dispatch
	// By is "rule/step" when a plugin of this process published the event
	// from that step, "" for an event from outside (ingest, the events
	// file, another process on the Redis bus). A replay feeds the outside
	// events and expects the rest.
	By    string          `json:"by,omitempty"`
	Event json.RawMessage `json:"event"`
	// Trace is the W3C traceparent the event came with (bus.Event.Trace):
	// a capture keeps it, so a recorded event can be found in its trace.
	Trace string `json:"traceparent,omitempty"`
}

// Taps are the recorders watching dispatch. The count is read on every
// event, the rest only while someone records: an idle engine pays one
// atomic load per event. The zero value is ready.
type Taps struct {
	n       atomic.Int32
	mu      sync.Mutex
	fns     map[int]func(Seen)
	next    int
	origins sync.Map // event id → "rule/step", set by Published while n > 0
}

// Tap calls fn with every event dispatched, until cancel. fn runs on the
// dispatching goroutine: it must not block.
func (t *Taps) Tap(fn func(Seen)) (cancel func()) {
	t.mu.Lock()
	if t.fns == nil {
		t.fns = map[int]func(Seen){}
	}
	id := t.next
	t.next++
	t.fns[id] = fn
	t.n.Add(1)
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			delete(t.fns, id)
			t.n.Add(-1)
			t.mu.Unlock()
		})
	}
}

// Watching reports whether anyone taps.
func (t *Taps) Watching() bool { return t.n.Load() > 0 }

// Published notes that the event with id was published by a plugin from
// a step ("rule/step"), while someone records; its dispatch says so.
func (t *Taps) Published(id, by string) {
	if t.n.Load() == 0 {
		return
	}
	t.origins.Store(id, by)
}

// Dispatched tells every tap of e, dispatched at at. A caller whose clock
// costs something asks Watching first: an idle engine then pays one
// atomic load per event, not a clock read.
func (t *Taps) Dispatched(at time.Time, e *bus.Event) {
	if t.n.Load() == 0 {
		return
	}
	s := Seen{At: at, Event: json.RawMessage(e.Raw), Trace: e.Trace}
	if by, ok := t.origins.LoadAndDelete(e.ID); ok {
		s.By = by.(string)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, fn := range t.fns {
		fn(s)
	}
}

// streamBuffer is how many events a stream holds for a slow reader
// before it drops.
const streamBuffer = 4096

// Stream streams every dispatched event as NDJSON (Seen per line) until
// the client goes away or quit is closed. A client that reads too slowly
// loses events rather than holding dispatch up; the stream then carries a
// {"dropped":N} line where they were lost.
func Stream(t *Taps, quit <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fl, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "streaming unsupported", http.StatusInternalServerError)
			return
		}
		ch := make(chan Seen, streamBuffer)
		var dropped atomic.Int64
		cancel := t.Tap(func(s Seen) {
			select {
			case ch <- s:
			default:
				dropped.Add(1)
			}
		})
		defer cancel()
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		fl.Flush()
		enc := json.NewEncoder(w)
		for {
			select {
			case <-r.Context().Done():
				return
			case <-quit:
				return
			case s := <-ch:
				if n := dropped.Swap(0); n > 0 {
					enc.Encode(map[string]int64{"dropped": n})
				}
				if enc.Encode(s) != nil {
					return
				}
				fl.Flush()
			}
		}
	})
}

// ActionCall is one call of an action, as a watcher of actions sees it.
type ActionCall struct {
	Rule, Step, Run string
	Do              string // plugin.function
	Digest          string // the module that ran
	Config          []byte // the step's with:, canonical JSON
	Key             string // the idempotency key
	Pass            uint32
	Event           []byte // the event's JSON
	Result          []byte
	Err             error
}

// Action wraps a step's action so fn sees each call, after it returns:
// do, digest and config say what the step is; the event and result are
// copied, so fn may keep them.
func Action(a seq.Action, do, digest string, config []byte, fn func(ActionCall)) seq.Action {
	return &observed{Action: a, do: do, digest: digest, config: config, fn: fn}
}

type observed struct {
	seq.Action
	do, digest string
	config     []byte
	fn         func(ActionCall)
}

func (o *observed) Act(ctx context.Context, c *seq.Call) ([]byte, error) {
	res, err := o.Action.Act(ctx, c)
	o.fn(ActionCall{Rule: c.Info.Rule, Step: c.Info.Step, Run: c.Info.Run, Do: o.do, Digest: o.digest,
		Config: o.config, Key: c.Info.Key, Pass: c.Info.Pass, Event: append([]byte(nil), c.Raw...),
		Result: append([]byte(nil), res...), Err: err})
	return res, err
}
