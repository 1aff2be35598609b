//go:build !linux

package api

import "net"

// peerUID cannot read a unix peer's credentials here.
func peerUID(*net.UnixConn) string { return "unix socket" }
