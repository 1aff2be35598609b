package reload

import (
	"runtime"
	"syscall"
)

// background runs fn on an OS thread of its own at the lowest scheduling
// priority. A reload compiles and starts a module — for a Go plugin about a
// tenth of a second of CPU — and on a two-core device it would otherwise
// compete as an equal with the workers serving rules: the calls in flight
// during a reload should not be the ones that wait.
func background(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()
	old, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err == nil {
		syscall.Setpriority(syscall.PRIO_PROCESS, tid, 19)
		// Getpriority's raw answer is 20 - nice on Linux.
		defer syscall.Setpriority(syscall.PRIO_PROCESS, tid, 20-old)
	}
	fn()
}
