package ruled

import (
	"strings"
	"time"

	"github.com/ruled-dev/ruled/abi"
)

// Status re-exports abi.Status: what a host function answered.
type Status = abi.Status

// Level is a log level.
type Level = abi.Level

// Log levels.
const (
	LevelTrace = abi.LevelTrace
	LevelDebug = abi.LevelDebug
	LevelInfo  = abi.LevelInfo
	LevelWarn  = abi.LevelWarn
	LevelError = abi.LevelError
)

// HostError is a host function's refusal.
type HostError struct {
	Op     string // "publish", "kv_get", ...
	Status Status
}

func (e *HostError) Error() string { return e.Op + ": " + e.Status.String() }

// StatusOf returns the status of a *HostError, and false for other errors.
func StatusOf(err error) (Status, bool) {
	if he, ok := err.(*HostError); ok {
		return he.Status, true
	}
	return 0, false
}

func hostErr(op string, r int32) error {
	if r >= 0 {
		return nil
	}
	return &HostError{Op: op, Status: Status(-r)}
}

// Log writes a line to the host's log, tagged with the plugin, function,
// rule and step. Lines over 4 KiB are cut.
func Log(level Level, msg string) { hostLog(level, msg) }

// Now is the time: during a condition, the event's time (so a replayed
// condition decides the same way); during an action, the host's clock,
// which tests may drive.
func Now() time.Time { return time.Unix(0, hostNow()) }

// Publish puts an event with the given JSON object payload on the bus.
// Needs CapPublish; a condition may not publish.
func Publish(topic string, payload []byte) error {
	return hostErr("publish", hostPublish(topic, payload))
}

// KVGet reads key from the plugin's own key-value store. A missing key is
// (nil, false, nil). Needs CapKV.
func KVGet(key string) ([]byte, bool, error) {
	buf := make([]byte, 256)
	for {
		r := hostKVGet(key, buf)
		if r == -int32(abi.StatusNotFound) {
			return nil, false, nil
		}
		if r < 0 {
			return nil, false, hostErr("kv_get", r)
		}
		if int(r) <= len(buf) {
			return buf[:r], true, nil
		}
		buf = make([]byte, r)
	}
}

// KVSet writes key in the plugin's own key-value store. Needs CapKV.
func KVSet(key string, value []byte) error { return hostErr("kv_set", hostKVSet(key, value)) }

// KVDelete removes key; removing a missing key is not an error. Needs CapKV.
func KVDelete(key string) error { return hostErr("kv_delete", hostKVDelete(key)) }

// Fire starts a run of another rule with payload (a JSON object) as its
// trigger event and returns the new run's execution id. Needs CapFire.
func Fire(rule string, payload []byte) (string, error) {
	var buf [abi.MaxExecID]byte
	r := hostFire(rule, payload, buf[:])
	if r < 0 {
		return "", hostErr("fire", r)
	}
	return string(buf[:min(int(r), len(buf))]), nil
}

func eventRaw() []byte {
	buf := make([]byte, 1024)
	for {
		r := hostEventRaw(buf)
		if r < 0 {
			return nil
		}
		if int(r) <= len(buf) {
			return buf[:r]
		}
		buf = make([]byte, r)
	}
}

// Request is an outbound HTTP request (HTTP). Header holds name/value
// pairs in order.
type Request = abi.HTTPRequest

// Response is what HTTP answers: any status the server sent (a 500 is a
// response, not an error), its headers and its whole body.
type Response = abi.HTTPResponse

// HTTP sends req and returns the response. Needs CapHTTP, and the host
// sends only to the hosts the operator allowed the plugin; a condition may
// not make requests. A refused host is a *HostError with StatusDenied, a
// body over the host's bound StatusTooLarge, a request that was not
// answered within the step's deadline StatusUnavailable. Actions run at
// least once: send the Input's Key() as an Idempotency-Key header to make a
// repeat harmless (the http plugin does).
func HTTP(req Request) (Response, error) {
	r := hostHTTPRequest(abi.AppendHTTPRequest(nil, &req))
	if r < 0 {
		return Response{}, hostErr("http_request", r)
	}
	buf := make([]byte, r)
	if n := hostHTTPResponse(buf); n < 0 {
		return Response{}, hostErr("http_response", n)
	} else if int(n) != len(buf) {
		return Response{}, &HostError{Op: "http_response", Status: abi.StatusError}
	}
	resp, err := abi.ParseHTTPResponse(buf)
	if err != nil {
		return Response{}, &HostError{Op: "http_response", Status: abi.StatusBadInput}
	}
	return resp, nil
}

// Header returns the first value of a header named name, without regard
// to case, and "" when there is none.
func Header(h [][2]string, name string) string {
	for _, kv := range h {
		if strings.EqualFold(kv[0], name) {
			return kv[1]
		}
	}
	return ""
}
