//go:build !linux

package reload

// background runs fn; lowering a thread's priority is Linux-only here.
func background(fn func()) { fn() }
