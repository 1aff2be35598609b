//go:build !linux

package store

// dropPages does nothing outside Linux: the kernel keeps what it keeps.
func dropPages(uintptr, int64, string) error { return nil }
