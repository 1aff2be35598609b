package api

import (
	"context"
	"net"
)

type byKey struct{}

// By is who sent the request ctx is of, for the audit of a command: "uid
// N" on the unix socket (the peer's credentials, which the kernel vouches
// for), "token NAME" on TCP behind a token (the guard's TokenName),
// "tcp" on a TCP API without one, "" outside the API's servers (a test's
// handler).
func By(ctx context.Context) string {
	if name := TokenName(ctx); name != "" {
		return "token " + name
	}
	by, _ := ctx.Value(byKey{}).(string)
	return by
}

// peerOf names a unix socket's peer by its uid (peerUID), "unix socket"
// where the platform cannot say.
func peerOf(c net.Conn) string {
	for {
		if u, ok := c.(*net.UnixConn); ok {
			return peerUID(u)
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return "unix socket"
		}
		c = w.NetConn()
	}
}
