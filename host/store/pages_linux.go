package store

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// dropPages takes the n bytes mapped at addr out of the process
// (MADV_DONTNEED: a shared, read-only file map, so the next read faults
// the same bytes in again) and asks the kernel to drop the file's clean
// pages from its cache (POSIX_FADV_DONTNEED).
func dropPages(addr uintptr, n int64, path string) error {
	if n > 0 {
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, addr, uintptr(n), syscall.MADV_DONTNEED); e != 0 {
			return os.NewSyscallError("madvise", e)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return os.NewSyscallError("fadvise", unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
}
