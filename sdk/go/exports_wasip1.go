//go:build wasip1

package ruled

import (
	"unsafe"

	"github.com/ruled-dev/ruled/abi"
)

// The ABI v1 exports. Each converts guest pointers to slices and hands over
// to dispatch.go.

//go:wasmexport ruled_abi_version
func exportABIVersion() int32 { return abi.Version }

//go:wasmexport ruled_alloc
func exportAlloc(size int32) int32 {
	if size < 0 {
		return 0
	}
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(alloc(uint32(size))))))
}

//go:wasmexport ruled_describe
func exportDescribe() int64 { return pack(describe()) }

//go:wasmexport ruled_configure
func exportConfigure(ptr, n int32) int64 {
	st, h := configure(view(ptr, n))
	return int64(abi.PackConfigure(st, h))
}

//go:wasmexport ruled_release
func exportRelease(h int32) { release(uint32(h)) }

//go:wasmexport ruled_when
func exportWhen(h, ptr, n int32) int32 { return int32(when(uint32(h), view(ptr, n))) }

//go:wasmexport ruled_act
func exportAct(h, ptr, n int32) int32 { return int32(act(uint32(h), view(ptr, n))) }

//go:wasmexport ruled_result
func exportResult() int64 { return pack(result) }

//go:wasmexport ruled_error
func exportError() int64 { return pack(errText) }

func view(ptr, n int32) []byte {
	if n <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(ptr))), n)
}

func pack(b []byte) int64 {
	if len(b) == 0 {
		return 0
	}
	return int64(abi.Pack(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), uint32(len(b))))
}
