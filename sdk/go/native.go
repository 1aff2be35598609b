//go:build !wasip1

package ruled

import (
	"errors"
	"time"

	"github.com/ruled-dev/ruled/abi"
)

// Native calls this plugin's registered functions in the test's own
// process, through the same configure/when/act code the wasm exports run,
// against a host kept in memory: an author's unit tests run in
// microseconds, with a debugger, and sdk/ruletest's Plugin runs the same
// table against the compiled module to show both agree.
//
// A Native serves one call at a time (the SDK's exports are single
// threaded, as in wasm) and grants everything: capability grants are
// checked by the host, so test them on the compiled module.
type Native struct {
	// Now is what Now() answers during a call. default: the process clock.
	Now time.Time
	// Info is the call's header (rule, step, run, idempotency key); its
	// zero fields are filled with "test" values.
	Info abi.CallInfo
	// Context is the run's context as JSON, what the call sees under
	// steps., vars., states., previous. and sun.:
	// `{"steps":{"quote":{"price":3}},"vars":{"limit":20},"states":{"door":{"open":true}}}`.
	// "" is none.
	Context string
	// KV is the plugin's key-value store, created on first use.
	KV map[string][]byte
	// Published are the events the plugin published, in order.
	Published []Published
	// Fired are the rules the plugin fired, with their payloads.
	Fired []Published
	// HTTP answers the plugin's outbound requests (HTTP); nil: every
	// request gets StatusUnavailable. A test can forward to an httptest
	// server, or refuse with StatusDenied as the host does for a host the
	// plugin may not reach.
	HTTP func(Request) (Response, abi.Status)
	// Requests are the outbound requests the plugin made, in order.
	Requests []Request

	raw      []byte // the current call's event
	httpResp []byte // the last request's encoded response
}

// Published is an event a plugin published (or a run it fired: Topic is
// then the rule).
type Published struct {
	Topic   string
	Payload []byte
}

// CallError is a configure, when or act that did not answer OK natively:
// the status and the plugin's text, as the host would report them.
type CallError struct {
	Status abi.Status
	Text   string
}

func (e *CallError) Error() string { return e.Status.String() + ": " + e.Text }

// native is the Native serving the current call; nil outside one.
var native *Native

// When configures function with configJSON ("" is {}) and asks it about
// eventJSON.
func (n *Native) When(function, configJSON, eventJSON string) (bool, error) {
	st, err := n.call(function, configJSON, eventJSON, abi.KindCondition)
	return st == abi.StatusTrue, err
}

// Act configures function with configJSON ("" is {}) and runs it on
// eventJSON, returning its result.
func (n *Native) Act(function, configJSON, eventJSON string) ([]byte, error) {
	if _, err := n.call(function, configJSON, eventJSON, abi.KindAction); err != nil {
		return nil, err
	}
	return append([]byte(nil), result...), nil
}

func (n *Native) call(function, configJSON, eventJSON string, k abi.Kind) (abi.Status, error) {
	if native != nil {
		return 0, errors.New("ruled: Native: one call at a time")
	}
	if configJSON == "" {
		configJSON = "{}"
	}
	cv, err := abi.AppendJSONView(nil, []byte(configJSON), true)
	if err != nil {
		return 0, errors.New("ruled: Native: config: " + err.Error())
	}
	view, err := abi.ParseView(cv)
	if err != nil {
		return 0, err
	}
	st, h := configure(abi.AppendConfigureInput(nil, function, view))
	if st != abi.StatusOK {
		return st, &CallError{st, string(errText)}
	}
	defer release(h)
	info := n.Info
	for p, def := range map[*string]string{&info.Rule: "test", &info.Step: "test", &info.Run: "test-run", &info.Key: "test-run/test/0"} {
		if *p == "" {
			*p = def
		}
	}
	ev, err := abi.AppendJSONView(nil, []byte(eventJSON), false)
	if err != nil {
		return 0, errors.New("ruled: Native: event: " + err.Error())
	}
	var ctx []byte
	if n.Context != "" {
		if ctx, err = abi.AppendJSONView(nil, []byte(n.Context), false); err != nil {
			return 0, errors.New("ruled: Native: context: " + err.Error())
		}
	}
	input := abi.AppendCallInput(nil, &info, ev, ctx)
	native, n.raw = n, []byte(eventJSON)
	defer func() { native = nil }()
	if k == abi.KindCondition {
		st = when(h, input)
	} else {
		st = act(h, input)
	}
	if st != abi.StatusOK && st != abi.StatusTrue {
		return st, &CallError{st, string(errText)}
	}
	return st, nil
}
