package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/wasm"
)

// Seen is one event the daemon dispatched, as a recorder (ruled record)
// keeps it: when, the event, and whether a rule's plugin published it.
type Seen struct {
	At time.Time `json:"at"` // the daemon's clock at dispatch
	// By is "rule/step" when a plugin of this process published the event
	// from that step, "" for an event from outside (ingest, the events
	// file, another process on the Redis bus). A replay feeds the outside
	// events and expects the rest.
	By    string          `json:"by,omitempty"`
	Event json.RawMessage `json:"event"`
}

// taps are the recorders watching dispatch. The count is read on every
// event, the rest only while someone records: an idle daemon pays one
// atomic load per event.
type taps struct {
	n       atomic.Int32
	mu      sync.Mutex
	fns     map[int]func(Seen)
	next    int
	origins sync.Map // event id → "rule/step", set by publisher while n > 0
}

// Tap calls fn with every event the daemon dispatches, in either bus mode,
// until cancel. fn runs on the dispatching goroutine: it must not block.
func (d *Daemon) Tap(fn func(Seen)) (cancel func()) {
	t := &d.taps
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

// markOrigin notes that a plugin published e from a step, while someone
// records.
func (d *Daemon) markOrigin(e *bus.Event, from wasm.Origin) {
	if d.taps.n.Load() == 0 || from.Info == nil {
		return
	}
	by := from.Info.Rule
	if from.Info.Step != "" {
		by += "/" + from.Info.Step
	}
	d.taps.origins.Store(e.ID, by)
}

func (d *Daemon) tap(e *bus.Event) {
	t := &d.taps
	if t.n.Load() == 0 {
		return
	}
	s := Seen{At: d.sch.Now(), Event: json.RawMessage(e.Raw)}
	if by, ok := t.origins.LoadAndDelete(e.ID); ok {
		s.By = by.(string)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, fn := range t.fns {
		fn(s)
	}
}

// serveWatch streams every dispatched event as NDJSON (Seen per line) until
// the client goes away or the daemon stops. A client that reads too slowly
// loses events rather than holding dispatch up; the stream then carries a
// {"dropped":N} line where they were lost.
func (d *Daemon) serveWatch(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch := make(chan Seen, 4096)
	var dropped atomic.Int64
	cancel := d.Tap(func(s Seen) {
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
		case <-d.quit:
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
}

// ActionCall is one call of an action, as Config.ObserveAction sees it.
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

// observed wraps a step's action so Config.ObserveAction sees each call.
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

// observe wraps st's action when the config asks to see action calls.
func (d *Daemon) observe(st *seq.CompiledStep, with []byte) {
	if d.cfg.ObserveAction == nil {
		return
	}
	st.Action = &observed{Action: st.Action, do: st.Do, digest: st.Digest, config: with, fn: d.cfg.ObserveAction}
}
