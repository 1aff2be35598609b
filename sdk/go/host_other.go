//go:build !wasip1

package ruled

import (
	"os"
	"time"

	"github.com/ruled-dev/ruled/abi"
)

// Off wasm there is no host: the SDK's logic runs natively (in an author's
// unit tests, and in the SDK's own). During a Native call the host
// functions are Native's in-memory ones; outside one, log lines go to
// stderr, Now is the process clock, and every other host function answers
// StatusUnavailable.

var unavailable = -int32(abi.StatusUnavailable)

func hostLog(level abi.Level, msg string) { os.Stderr.WriteString(msg + "\n") }

func hostNow() int64 {
	if native != nil && !native.Now.IsZero() {
		return native.Now.UnixNano()
	}
	return time.Now().UnixNano()
}

// fill answers a buffer-filling host call the way the wasm host does: the
// value's length, the value copied only when it fits.
func fill(buf, v []byte) int32 {
	if len(v) <= len(buf) {
		copy(buf, v)
	}
	return int32(len(v))
}

func hostEventRaw(buf []byte) int32 {
	if native == nil {
		return unavailable
	}
	return fill(buf, native.raw)
}

func hostPublish(topic string, payload []byte) int32 {
	if native == nil {
		return unavailable
	}
	native.Published = append(native.Published, Published{topic, append([]byte(nil), payload...)})
	return 0
}

func hostKVGet(key string, buf []byte) int32 {
	if native == nil {
		return unavailable
	}
	v, ok := native.KV[key]
	if !ok {
		return -int32(abi.StatusNotFound)
	}
	return fill(buf, v)
}

func hostKVSet(key string, value []byte) int32 {
	if native == nil {
		return unavailable
	}
	if native.KV == nil {
		native.KV = map[string][]byte{}
	}
	native.KV[key] = append([]byte(nil), value...)
	return 0
}

func hostKVDelete(key string) int32 {
	if native == nil {
		return unavailable
	}
	delete(native.KV, key)
	return 0
}

func hostFire(rule string, payload, out []byte) int32 {
	if native == nil {
		return unavailable
	}
	native.Fired = append(native.Fired, Published{rule, append([]byte(nil), payload...)})
	return fill(out, []byte("test-fired-run"))
}

func hostHTTPRequest(req []byte) int32 {
	if native == nil {
		return unavailable
	}
	r, err := abi.ParseHTTPRequest(req)
	if err != nil {
		return -int32(abi.StatusBadInput)
	}
	if native.HTTP == nil {
		return unavailable
	}
	r.Body = append([]byte(nil), r.Body...)
	native.Requests = append(native.Requests, r)
	resp, st := native.HTTP(r)
	if st != abi.StatusOK {
		return -int32(st)
	}
	native.httpResp = abi.AppendHTTPResponse(nil, &resp)
	return int32(len(native.httpResp))
}

func hostHTTPResponse(buf []byte) int32 {
	if native == nil || native.httpResp == nil {
		return -int32(abi.StatusNotFound)
	}
	return fill(buf, native.httpResp)
}
