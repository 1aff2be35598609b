//go:build wasip1

package ruled

import (
	"unsafe"

	"github.com/ruled-dev/ruled/abi"
)

// Imports of ABI v1's host functions. The linker drops the ones a plugin
// never reaches, so a plugin that does not publish does not import publish,
// and needs no grant for it.

//go:wasmimport ruled log
func importLog(level, ptr, n int32)

//go:wasmimport ruled now
func importNow() int64

//go:wasmimport ruled event_raw
func importEventRaw(ptr, cap int32) int32

//go:wasmimport ruled publish
func importPublish(tp, tn, pp, pn int32) int32

//go:wasmimport ruled kv_get
func importKVGet(kp, kn, bp, bc int32) int32

//go:wasmimport ruled kv_set
func importKVSet(kp, kn, vp, vn int32) int32

//go:wasmimport ruled kv_delete
func importKVDelete(kp, kn int32) int32

//go:wasmimport ruled fire
func importFire(rp, rn, pp, pn, op, oc int32) int32

//go:wasmimport ruled http_request
func importHTTPRequest(rp, rn int32) int32

//go:wasmimport ruled http_response
func importHTTPResponse(bp, bc int32) int32

func sptr(s string) (int32, int32) {
	return int32(uintptr(unsafe.Pointer(unsafe.StringData(s)))), int32(len(s))
}

func bptr(b []byte) (int32, int32) {
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), int32(len(b))
}

func hostLog(level abi.Level, msg string) {
	p, n := sptr(msg)
	importLog(int32(level), p, n)
}

func hostNow() int64 { return importNow() }

func hostEventRaw(buf []byte) int32 {
	p, n := bptr(buf)
	return importEventRaw(p, n)
}

func hostPublish(topic string, payload []byte) int32 {
	tp, tn := sptr(topic)
	pp, pn := bptr(payload)
	return importPublish(tp, tn, pp, pn)
}

func hostKVGet(key string, buf []byte) int32 {
	kp, kn := sptr(key)
	bp, bn := bptr(buf)
	return importKVGet(kp, kn, bp, bn)
}

func hostKVSet(key string, value []byte) int32 {
	kp, kn := sptr(key)
	vp, vn := bptr(value)
	return importKVSet(kp, kn, vp, vn)
}

func hostKVDelete(key string) int32 {
	kp, kn := sptr(key)
	return importKVDelete(kp, kn)
}

func hostFire(rule string, payload, out []byte) int32 {
	rp, rn := sptr(rule)
	pp, pn := bptr(payload)
	op, on := bptr(out)
	return importFire(rp, rn, pp, pn, op, on)
}

func hostHTTPRequest(req []byte) int32 {
	p, n := bptr(req)
	return importHTTPRequest(p, n)
}

func hostHTTPResponse(buf []byte) int32 {
	p, n := bptr(buf)
	return importHTTPResponse(p, n)
}
