package redistest

import "syscall"

// sysProcAttr asks the kernel to SIGKILL the server if the test binary dies
// first (a test timeout's panic, a ^C), so no server outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
