package api

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// SameOrigin refuses, with 403, a request that changes something (any
// method but GET, HEAD and OPTIONS) sent by a web page of another origin:
// one whose Origin header names another scheme, host or port than the
// request's own Host, or whose Sec-Fetch-Site says cross-site or
// same-site. Without a token, the API on a loopback address trusts the
// host's users — and any page one of them opens could otherwise POST to
// it: a form or a text/plain fetch needs no CORS preflight, and one such
// request once put a rule to sleep until 2036. Requests without either
// header (the CLI, curl, other programs) pass: a browser always sends
// Origin with a cross-origin POST.
//
// It is the first line; the second is that state-changing endpoints
// require a JSON body (application/json is not a type a form or a simple
// fetch may send, so a browser asks first, with a preflight this API never
// answers).
func SameOrigin(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			h.ServeHTTP(w, r)
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			deny(w, http.StatusForbidden, "", "api: a request from another site is refused (Sec-Fetch-Site: "+site+")")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r) {
			deny(w, http.StatusForbidden, "", "api: a request from another origin is refused (Origin: "+o+")")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin (a serialized origin, or "null") is
// the one r was sent to: r's scheme, and r's Host for its host and port.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null", a file:// page, garbage
	}
	if r.Host == "" {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && withPort(u) == withPort(&url.URL{Scheme: scheme, Host: r.Host})
}

// withPort is u's host with its port, the scheme's default when it has none.
func withPort(u *url.URL) string {
	if u.Port() != "" {
		return strings.ToLower(u.Host)
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return strings.ToLower(net.JoinHostPort(u.Hostname(), port))
}

// ConnLimit bounds the connections an HTTP server holds at once: Wrap its
// listener, and set its ConnState to the limit's. At the bound, an idle
// keep-alive connection is closed to make room; when every one is busy,
// Accept waits for one to end. A flood of clients that open connections
// and trickle their requests (800 of them held 817 goroutines) is bounded
// to the limit, while clients that leave idle connections behind (one
// transport a request) never lock the others out.
//
// Share, when set, bounds the connections one address holds: 300 clients
// on one address trickling their headers held every place, and /readyz
// timed out (issue 38). A connection past its address's share closes an
// idle one of that address, or is closed at once and counted (Refused).
type ConnLimit struct {
	// Share is the most connections one address (its IP) may hold; 0:
	// no share (the unix socket, whose peers are the daemon's own user).
	Share int
	// OnRefuse, when set, hears each connection closed past its
	// address's share (to log it, folded).
	OnRefuse func(addr string)

	max      int
	mu       sync.Mutex
	room     *sync.Cond
	open     int
	evicting int // idle connections closed to make room, not yet gone
	idle     map[*limitConn]bool
	byAddr   map[string]int // open connections by address, when Share is set
	refused  uint64         // connections closed past their address's share
	shut     bool
}

// NewConnLimit returns a limit of n connections.
func NewConnLimit(n int) *ConnLimit {
	l := &ConnLimit{max: n, idle: map[*limitConn]bool{}, byAddr: map[string]int{}}
	l.room = sync.NewCond(&l.mu)
	return l
}

// Wrap returns ln, accepting within the limit. Closing it ends a wait.
func (l *ConnLimit) Wrap(ln net.Listener) net.Listener { return &limitListener{Listener: ln, l: l} }

// ConnState is the server's ConnState hook: it tells idle connections
// from busy ones, and gives a closed one's place back.
func (l *ConnLimit) ConnState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateIdle:
		l.idle[lc] = true
		l.room.Signal() // a waiting Accept may close it
	case http.StateActive:
		delete(l.idle, lc)
	case http.StateHijacked, http.StateClosed:
		delete(l.idle, lc)
		if !lc.gone {
			lc.gone = true
			l.open--
			if lc.evicted {
				l.evicting--
			}
			l.leaveLocked(lc.addr)
			l.room.Signal()
		}
	}
}

// leaveLocked gives an address's place back.
func (l *ConnLimit) leaveLocked(addr string) {
	if addr == "" {
		return
	}
	if l.byAddr[addr]--; l.byAddr[addr] <= 0 {
		delete(l.byAddr, addr)
	}
}

// Refused is how many connections were closed past their address's share.
func (l *ConnLimit) Refused() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// Open is how many connections are open now.
func (l *ConnLimit) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

type limitListener struct {
	net.Listener
	l *ConnLimit
}

func (ll *limitListener) Accept() (net.Conn, error) {
	l := ll.l
	l.mu.Lock()
	for l.open >= l.max && !l.shut {
		if l.evicting == 0 {
			var victim *limitConn
			for c := range l.idle {
				victim = c
				break
			}
			if victim != nil {
				delete(l.idle, victim)
				victim.evicted = true
				l.evicting++
				l.mu.Unlock()
				victim.Close() // its ConnState(StateClosed) makes the room
				l.mu.Lock()
				continue
			}
		}
		l.room.Wait()
	}
	if l.shut {
		l.mu.Unlock()
		return nil, net.ErrClosed
	}
	l.open++
	l.mu.Unlock()
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			l.mu.Lock()
			l.open--
			l.room.Signal()
			l.mu.Unlock()
			return nil, err
		}
		if lc, ok := l.admit(c); ok {
			return lc, nil
		}
	}
}

// admit takes c within its address's share (ConnLimit.Share): past it,
// an idle connection of the address is closed to make room, or c is
// closed and counted. The place Accept took for c stays for the next.
func (l *ConnLimit) admit(c net.Conn) (*limitConn, bool) {
	if l.Share <= 0 {
		return &limitConn{Conn: c}, true
	}
	addr := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	l.mu.Lock()
	if l.byAddr[addr] >= l.Share {
		var victim *limitConn
		for v := range l.idle {
			if v.addr == addr {
				victim = v
				break
			}
		}
		if victim == nil {
			l.refused++
			l.mu.Unlock()
			c.Close()
			if l.OnRefuse != nil {
				l.OnRefuse(addr)
			}
			return nil, false
		}
		// The idle one's place is its address's: it goes, c comes.
		delete(l.idle, victim)
		victim.evicted = true
		l.evicting++
		l.mu.Unlock()
		victim.Close()
		l.mu.Lock()
	}
	l.byAddr[addr]++
	l.mu.Unlock()
	return &limitConn{Conn: c, addr: addr}, true
}

func (ll *limitListener) Close() error {
	ll.l.mu.Lock()
	ll.l.shut = true
	ll.l.room.Broadcast()
	ll.l.mu.Unlock()
	return ll.Listener.Close()
}

// limitConn is an accepted connection, with its limit's bookkeeping
// (guarded by the limit's lock).
type limitConn struct {
	net.Conn
	addr    string // the peer's IP, when the limit has a share
	evicted bool   // closed by Accept to make room
	gone    bool   // its place was given back
}

// NetConn is the connection accepted, as crypto/tls's Conn names its own:
// the API reads a unix peer's credentials from it.
func (c *limitConn) NetConn() net.Conn { return c.Conn }
