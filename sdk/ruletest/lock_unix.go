//go:build unix

package ruletest

import (
	"os"
	"syscall"
)

// lockFile holds an exclusive lock on path until the returned func is
// called, so two test binaries do not build one plugin at once. A lock
// that cannot be had is no lock: the build then runs twice, harmlessly.
func lockFile(path string) func() {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
