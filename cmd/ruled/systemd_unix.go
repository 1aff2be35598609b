//go:build unix

package main

import (
	"os"
	"syscall"
)

// fileID is f's device and inode numbers, as $JOURNAL_STREAM gives them.
func fileID(f *os.File) (dev, ino uint64, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true //nolint:unconvert // their types differ by platform
}

// ownDir reports whether dir is this user's (or does not exist yet, and
// will be).
func ownDir(dir string) bool {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return os.IsNotExist(err)
	}
	return int(st.Uid) == os.Getuid()
}
