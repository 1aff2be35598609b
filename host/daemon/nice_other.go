//go:build !linux

package daemon

// background runs fn; lowering a thread's priority is Linux-only here.
func background(fn func()) { fn() }
