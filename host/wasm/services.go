package wasm

import (
	"context"
	"errors"

	"github.com/ruled-dev/ruled/abi"
)

// Services are what actions reach through host functions. A nil service
// makes its host functions answer StatusUnavailable.
type Services struct {
	Publisher Publisher
	KV        KV
	Firer     Firer
	HTTP      HTTP
}

// HTTP sends a plugin's outbound request (outbound.Client), checked
// against what the operator allowed plugin; ctx ends at the calling step's
// deadline. An error with a Status() abi.Status method gives the guest
// that status (a refused host: StatusDenied).
type HTTP interface {
	Do(ctx context.Context, plugin string, req abi.HTTPRequest) (abi.HTTPResponse, error)
}

// Origin says which call a service request comes from.
type Origin struct {
	Plugin   string // the module's name, which also scopes its kv
	Digest   string
	Function string
	Info     *abi.CallInfo // the call's header; read it, do not keep it
	call     *Call
}

// OriginOf is the Origin of a service call made for c by the host
// itself, not by a module's host call: its Info is c's, and it owes c
// what c takes (Call.Owed).
func OriginOf(c *Call) Origin { return Origin{Info: &c.Info, call: c} }

// Note tells the calling step's execution log what a service did for it,
// in a line (parts joined by spaces): a Publisher notes the event as it
// went on the bus ("published <topic> <event>"), which only it knows (it
// sets the topic, the id). Nothing when no one listens (Call.Effects).
func (o Origin) Note(parts ...string) { o.call.noteEffect(parts...) }

// NextPublish numbers the call's publishes, from 0, in the order it
// made them: with the call's key, the published event's id (a re-run of
// the step publishes the same events under the same ids). -1 when the
// Origin is no call's.
func (o Origin) NextPublish() int {
	if o.call == nil {
		return -1
	}
	n := o.call.Published
	o.call.Published++
	return n
}

// Owe hands the call a wait its caller runs before the call's result
// counts (Call.Owed): false when the call takes none, and the service
// waits itself.
func (o Origin) Owe(wait func() error) bool {
	if o.call == nil || o.call.Owed == nil {
		return false
	}
	*o.call.Owed = append(*o.call.Owed, wait)
	return true
}

// Hops and Chain are the calling run's trigger's (Call.Hops): 0 and ""
// outside a run's call.
func (o Origin) Hops() int {
	if o.call == nil {
		return 0
	}
	return o.call.Hops
}

// Trace is the calling step's traceparent (Call.Trace): "" outside a
// run's step, or when no trace is sent.
func (o Origin) Trace() string {
	if o.call == nil {
		return ""
	}
	return o.call.Trace
}

func (o Origin) Chain() string {
	if o.call == nil {
		return ""
	}
	return o.call.Chain
}

// Publisher puts a plugin's event on the bus. The host has already refused
// reserved topics and checked that payload is a JSON object.
type Publisher interface {
	Publish(ctx context.Context, from Origin, topic string, payload []byte) error
}

// KV is the plugin key-value store. scope is the plugin's name: no plugin
// reaches another's keys. Get reports a missing key with found == false.
type KV interface {
	Get(ctx context.Context, scope, key string) (value []byte, found bool, err error)
	Set(ctx context.Context, scope, key string, value []byte) error
	Delete(ctx context.Context, scope, key string) error
}

// Firer starts a run of another rule and returns its execution id.
type Firer interface {
	Fire(ctx context.Context, from Origin, rule string, payload []byte) (execID string, err error)
}

// Errors a service returns to give the guest a precise status. Any other
// error reaches the guest as StatusUnavailable.
var (
	ErrNotFound = errors.New("not found")   // StatusNotFound
	ErrTooLarge = errors.New("too large")   // StatusTooLarge
	ErrDenied   = errors.New("not allowed") // StatusDenied
	ErrBadInput = errors.New("bad input")   // StatusBadInput
)

func statusOf(err error) abi.Status {
	var st interface{ Status() abi.Status }
	switch {
	case err == nil:
		return abi.StatusOK
	case errors.As(err, &st):
		return st.Status()
	case errors.Is(err, ErrNotFound):
		return abi.StatusNotFound
	case errors.Is(err, ErrTooLarge):
		return abi.StatusTooLarge
	case errors.Is(err, ErrDenied):
		return abi.StatusDenied
	case errors.Is(err, ErrBadInput):
		return abi.StatusBadInput
	}
	return abi.StatusUnavailable
}
