package api

import (
	"net"
	"strconv"
	"syscall"
)

// peerUID is the uid of the process at the other end of u (SO_PEERCRED).
func peerUID(u *net.UnixConn) string {
	raw, err := u.SyscallConn()
	if err != nil {
		return "unix socket"
	}
	by := "unix socket"
	raw.Control(func(fd uintptr) {
		if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			by = "uid " + strconv.Itoa(int(cred.Uid))
		}
	})
	return by
}
