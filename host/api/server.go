package api

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/ruled-dev/ruled/host/console"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// SocketName is the API's unix socket in the data dir. The CLI's status,
// pending and rule commands talk to a running daemon through it; its file
// permissions (0600) are its access control.
const SocketName = "ruled.sock"

// ServerConfig says where the API listens and how the TCP side is guarded.
type ServerConfig struct {
	// Socket is the unix socket's path: always served, mode 0600.
	Socket string
	// HTTPAddr serves the API on TCP too; "" does not.
	HTTPAddr string
	// Token is the TCP API's bearer token, named "default"; Tokens are
	// more, by name (NewGuardNamed: one is required off loopback).
	// A command says which token sent it.
	Token  string
	Tokens map[string]string
	// Scopes are what each named token may do (NewGuardScoped); a token
	// it does not name, and the default one, may do everything.
	Scopes map[string][]string
	// TLSCert and TLSKey, both set, serve the TCP API over TLS.
	TLSCert, TLSKey string
	// Rate and Burst bound each client's requests to the TCP API
	// (Limiter; zero: its defaults).
	Rate  float64
	Burst int
	// ConnsPerAddr is how many of the TCP listener's connections one
	// client address may hold (ConnLimit.Share). default:
	// maxConnsPerAddr; behind a proxy every client has its address.
	ConnsPerAddr int
	// Audit, when set, records every command: served (Audited) or
	// refused for its token's scope.
	Audit Recorder
	// Warn is told of a configuration that works but should not be used
	// (a token sent in clear); nil says nothing.
	Warn func(msg string, args ...any)
}

// Server is the API served: on the unix socket always, on TCP when asked.
// Its goroutines (one per listener) end with Close.
type Server struct {
	socket  string
	servers []*http.Server
	limit   *Limiter   // the TCP API's, nil without one
	conns   *ConnLimit // the TCP API's, nil without one
	tcp     net.Addr   // where the TCP API listens
	warns   lograte.Limiter
}

// Serve serves h as cfg says. No page of another origin may change
// anything (SameOrigin), on the socket as on TCP; on TCP the rate
// limit comes before the token check — a flood of bad tokens is a flood
// like any other — and the console's public files need no token.
func Serve(cfg ServerConfig, h http.Handler) (*Server, error) {
	s := &Server{socket: cfg.Socket}
	os.Remove(s.socket) // a stale socket from a process that died
	ln, err := net.Listen("unix", s.socket)
	if err != nil {
		return nil, errors.New("daemon: api socket: " + err.Error())
	}
	os.Chmod(s.socket, 0o600)
	h = SameOrigin(Audited(h, cfg.Audit))
	s.start(ln, h, peerOf, NewConnLimit(maxConns))
	if cfg.HTTPAddr == "" {
		return s, nil
	}
	tokens := map[string]string{}
	for name, tok := range cfg.Tokens {
		tokens[name] = tok
	}
	if cfg.Token != "" {
		if _, taken := tokens["default"]; taken {
			s.Close()
			return nil, errors.New(`daemon: the tokens file names a token "default", the name $RULED_TOKEN's takes`)
		}
		for name, tok := range tokens {
			if tok == cfg.Token {
				// One token, two names and two sets of scopes: which
				// would a request carry? Refused, as the file refuses it.
				s.Close()
				return nil, fmt.Errorf("daemon: $RULED_TOKEN is the tokens file's token %q: give each its own", name)
			}
		}
		tokens["default"] = cfg.Token
	}
	g, err := NewGuardScoped(cfg.HTTPAddr, tokens, cfg.Scopes)
	if err != nil {
		s.Close()
		return nil, err
	}
	if cfg.Audit != nil {
		g = g.WithAudit(cfg.Audit)
	}
	tl, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		s.Close()
		return nil, errors.New("daemon: http: " + err.Error())
	}
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			tl.Close()
			s.Close()
			return nil, errors.New("daemon: tls: " + err.Error())
		}
		tl = tls.NewListener(tl, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	} else if len(tokens) > 0 && !OnLoopback(cfg.HTTPAddr) && cfg.Warn != nil {
		cfg.Warn("the API's token travels in clear: serve it over TLS (--tls-cert, --tls-key) or behind a TLS proxy",
			"http", cfg.HTTPAddr)
	}
	s.limit = &Limiter{Rate: cfg.Rate, Burst: cfg.Burst}
	s.tcp = tl.Addr()
	who := func(net.Conn) string { return "tcp" } // with a token, By names it (TokenName)
	// The console's own files and the health probes need no token: they
	// say nothing of the daemon (a load balancer's probe has no token).
	s.conns = NewConnLimit(maxConns)
	s.conns.Share = cmp.Or(min(cfg.ConnsPerAddr, maxConns), maxConnsPerAddr)
	s.conns.OnRefuse = func(addr string) {
		if folded, ok := s.warns.Allow("share"); ok && cfg.Warn != nil {
			cfg.Warn("http: a connection closed: its address holds its share of the API's connections (http-conns-per-address)", "address", addr,
				"share", s.conns.Share, "of", maxConns, "folded", folded, "next-log-within", lograte.Every.String())
		}
	}
	s.start(tl, s.limit.Wrap(g.WithPublic(append(console.Public, "/healthz", "/readyz")...).Wrap(h)), who, s.conns)
	return s, nil
}

// maxConns bounds the connections one listener of the API holds at once
// (ConnLimit: an idle one is closed to make room), readTimeout the
// time a request may take to arrive, body included, and idleTimeout how
// long a keep-alive connection stays open unused: 800 clients trickling
// their bodies held 817 goroutines. A stream (GET /v1/events/watch) is
// unaffected: it is the response that lasts.
//
// maxConnsPerAddr is one address's share of the TCP listener's places:
// 300 clients of one address trickling their headers held all 256 and
// /readyz timed out. A probe from any other address gets in; on the
// same machine as the flood, /readyz is answered on the unix socket,
// whose listener has places of its own. readHeaderTimeout closes a
// connection whose request line and headers have not come.
const (
	maxConns          = 256
	maxConnsPerAddr   = maxConns / 4
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	idleTimeout       = 60 * time.Second
)

// start serves h on ln; who names a connection's sender for the commands
// it sends (By).
func (s *Server) start(ln net.Listener, h http.Handler, who func(net.Conn) string, lim *ConnLimit) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		IdleTimeout: idleTimeout, ConnState: lim.ConnState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, byKey{}, who(c)) }}
	s.servers = append(s.servers, srv)
	go srv.Serve(lim.Wrap(ln)) // ended by Close
}

// Addr is where the TCP API listens, "" when it does not.
func (s *Server) Addr() string {
	if s == nil || s.tcp == nil {
		return ""
	}
	return s.tcp.String()
}

// Socket is the unix socket's path.
func (s *Server) Socket() string { return s.socket }

// Refused counts the TCP API's requests refused by the rate limit.
func (s *Server) Refused() uint64 {
	if s == nil || s.limit == nil {
		return 0
	}
	return s.limit.Refused()
}

// ConnsRefused counts the TCP API's connections closed past their
// address's share (maxConnsPerAddr).
func (s *Server) ConnsRefused() uint64 {
	if s == nil || s.conns == nil {
		return 0
	}
	return s.conns.Refused()
}

// Close stops serving (requests in flight get 5 s) and removes the socket.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, srv := range s.servers {
		errs = append(errs, srv.Shutdown(ctx))
	}
	os.Remove(s.socket)
	return errors.Join(errs...)
}
