package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/ruled-dev/ruled/internal/lograte"
)

// MinTokenLen is the shortest API token CheckBind accepts: a token guards a
// port anyone on the network can reach, and a short one is guessed.
const MinTokenLen = 16

// CheckBind refuses, at startup, an HTTP API that would be open to the
// network: listening anywhere but a loopback address or a unix socket needs a
// token. It also refuses a token shorter than MinTokenLen, wherever it is
// used, and an address it cannot read.
//
// addr is a host:port as net.Listen takes it (":8080" and "0.0.0.0:8080" are
// every interface), or a unix socket as "unix:/path" or an absolute path. A
// socket in the abstract namespace ("unix:@name") has no file permissions,
// so anyone on the host may connect: it needs a token. A host name other
// than "localhost" needs a token too: what it resolves to can change.
func CheckBind(addr, token string) error {
	if token != "" && len(token) < MinTokenLen {
		return fmt.Errorf("api: API token of %d characters: use at least %d", len(token), MinTokenLen)
	}
	where, err := listenPlace(addr)
	if err != nil {
		return err
	}
	if where == onNetwork && token == "" {
		return fmt.Errorf("api: listening on %q needs an API token: without one, only a loopback address (127.0.0.1:port, [::1]:port, localhost:port) or a unix socket is allowed", addr)
	}
	return nil
}

// place is where a listener can be reached from.
type place int

const (
	onNetwork  place = iota
	onLoopback       // TCP on a loopback address
	onSocket         // a unix socket, guarded by its file permissions
)

func listenPlace(addr string) (place, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok || strings.HasPrefix(addr, "/") {
		if !ok {
			path = addr
		}
		switch {
		case path == "":
			return 0, fmt.Errorf("api: listen address %q: no socket path", addr)
		case strings.HasPrefix(path, "@"):
			return onNetwork, nil
		}
		return onSocket, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("api: listen address %q: %w", addr, err)
	}
	if port == "" {
		// "127.0.0.1:" is a variable left unset ($PORT), not a wish for
		// whatever port is free (write :0 for that): clients could not
		// find the API.
		return 0, fmt.Errorf("api: listen address %q has no port: give one (127.0.0.1:9380), or :0 for any free port", addr)
	}
	if loopbackHost(host) {
		return onLoopback, nil
	}
	return onNetwork, nil
}

// OnLoopback reports whether addr (as CheckBind takes it) listens on a
// loopback address or a unix socket: reachable from this host only.
func OnLoopback(addr string) bool {
	where, err := listenPlace(addr)
	return err == nil && where != onNetwork
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Guard authenticates the requests of the daemon's HTTP API, every endpoint
// of it. With a token, every request must carry "Authorization: Bearer
// <token>", wherever the server listens: an operator who set one expects it
// asked for. Without one, requests pass: NewGuard allows that only on a
// loopback address or a unix socket, where the host's own users are trusted.
//
// On a loopback address without a token, a request must also name a loopback
// host in its Host header (localhost, 127.0.0.1, [::1]), or it gets 403: a web
// page whose name an attacker re-points to 127.0.0.1 (DNS rebinding) would
// otherwise reach the API from the operator's browser.
//
// A refused request gets 401 with a WWW-Authenticate header (RFC 6750) and no
// hint of the token. Rate limiting is not done here yet (a later issue).
//
// A Guard is immutable and safe for concurrent use. Make it with NewGuard:
// the zero Guard refuses every request.
type Guard struct {
	tokens []namedToken
	need   bool
	where  place
	public map[string]bool // paths served without a token (WithPublic)
	audit  Recorder        // told of commands refused for their scope (WithAudit)
	// auditRate lets one refused command a token through to the audit
	// trail a second, the rest folded into its count: a read-only token
	// sending 50 refused commands a second must not push every real
	// entry out of a bounded trail.
	auditRate *lograte.Limiter
}

// WithAudit returns a copy of g that records in rec the commands it
// refuses for their token's scope (a read refused is not a command), one
// a token a second, with how many more it refused since.
func (g *Guard) WithAudit(rec Recorder) *Guard {
	c := *g
	c.audit, c.auditRate = rec, &lograte.Limiter{}
	return &c
}

// namedToken is one token the guard accepts, hashed — compared hashed, so
// that the time does not tell the length —, and the name the requests it
// lets through carry (TokenName).
type namedToken struct {
	name   string
	sum    [sha256.Size]byte
	scopes []string // nil: every scope
}

type tokenNameKey struct{}

// TokenName is the name of the token a request came with, "" when it came
// with none (a unix socket, a token-less loopback API): who sent a
// command.
func TokenName(ctx context.Context) string {
	n, _ := ctx.Value(tokenNameKey{}).(string)
	return n
}

// TokenCookie is the cookie a browser may carry the token in instead of
// the Authorization header, for GET and HEAD only: a page load cannot set
// a header, and a cookie must never authorize a change (another site's
// form could make the browser send it; SameSite is the browser's promise,
// not ours).
const TokenCookie = "ruled_token"

// WithPublic returns a copy of g that serves the given paths (exact, GET
// and HEAD) without a token: a login page and what it loads, which show
// nothing of the daemon.
func (g *Guard) WithPublic(paths ...string) *Guard {
	c := *g
	c.public = map[string]bool{}
	for k := range g.public {
		c.public[k] = true
	}
	for _, p := range paths {
		c.public[p] = true
	}
	return &c
}

// NewGuard returns the Guard for a server listening on addr with one
// token (named "default"; "" for none), or CheckBind's error when that
// would leave it open to the network.
func NewGuard(addr, token string) (*Guard, error) {
	var tokens map[string]string
	if token != "" {
		tokens = map[string]string{"default": token}
	}
	return NewGuardNamed(addr, tokens)
}

// NewGuardNamed is NewGuard with any number of named tokens: a request
// with any of them passes, carrying its name (TokenName). Each token is
// held to CheckBind's rules.
func NewGuardNamed(addr string, tokens map[string]string) (*Guard, error) {
	return NewGuardScoped(addr, tokens, nil)
}

// NewGuardScoped is NewGuardNamed with each token's scopes: a token
// scopes names may make only the requests those scopes allow (ScopeOf);
// one it does not name may make every request (the token setting's
// "default", the operator's own).
func NewGuardScoped(addr string, tokens map[string]string, scopes map[string][]string) (*Guard, error) {
	for name, sc := range scopes {
		if _, ok := tokens[name]; !ok {
			return nil, fmt.Errorf("api: scopes for a token %q that is not given", name)
		}
		for _, s := range sc {
			if !slices.Contains(AllScopes, s) {
				return nil, fmt.Errorf("api: token %q: %q is not a scope", name, s)
			}
		}
	}
	if len(tokens) == 0 {
		if err := CheckBind(addr, ""); err != nil {
			return nil, err
		}
	}
	g := &Guard{need: len(tokens) > 0}
	for name, tok := range tokens {
		if err := CheckBind(addr, tok); err != nil {
			return nil, fmt.Errorf("token %q: %w", name, err)
		}
		nt := namedToken{name: name, sum: sha256.Sum256([]byte(tok))}
		if sc, ok := scopes[name]; ok {
			nt.scopes = append([]string{}, sc...)
		}
		g.tokens = append(g.tokens, nt)
	}
	g.where, _ = listenPlace(addr) // CheckBind read it
	return g, nil
}

// Wrap returns h behind the guard.
func (g *Guard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case g.need:
		case g.where == onSocket:
			h.ServeHTTP(w, r)
			return
		case g.where == onLoopback && loopbackHost(requestHost(r)):
			h.ServeHTTP(w, r)
			return
		case g.where == onLoopback:
			deny(w, http.StatusForbidden, "", fmt.Sprintf("api: Host %q is not a loopback name: call this API as localhost or 127.0.0.1", r.Host))
			return
		default: // a zero Guard: NewGuard never leaves the network open
			deny(w, http.StatusForbidden, "", "api: API guard not configured")
			return
		}
		read := r.Method == http.MethodGet || r.Method == http.MethodHead
		if read && g.public[r.URL.Path] {
			h.ServeHTTP(w, r)
			return
		}
		got, ok := bearer(r.Header.Get("Authorization"))
		if c, err := r.Cookie(TokenCookie); !ok && read && err == nil && c.Value != "" {
			got, ok = c.Value, true
			if v, err := url.QueryUnescape(c.Value); err == nil {
				got = v // the console's login page sets it URI-encoded
			}
		}
		if !ok {
			deny(w, http.StatusUnauthorized, `Bearer realm="ruled"`, "api: this API needs a bearer token")
			return
		}
		sum := sha256.Sum256([]byte(got))
		var tok *namedToken
		for i := range g.tokens { // every one compared: the time does not tell which matched
			if subtle.ConstantTimeCompare(sum[:], g.tokens[i].sum[:]) == 1 {
				tok = &g.tokens[i]
			}
		}
		if tok == nil {
			deny(w, http.StatusUnauthorized, `Bearer realm="ruled", error="invalid_token"`, "api: wrong token")
			return
		}
		ctx := context.WithValue(r.Context(), tokenNameKey{}, tok.name)
		if tok.scopes != nil {
			if need := ScopeOf(r); need != "" && !slices.Contains(tok.scopes, need) {
				denyScope(w, tok, need)
				if g.audit != nil && need == ScopeControl {
					if folded, ok := g.auditRate.Allow(tok.name); ok {
						why := "needs the control scope"
						if folded > 0 {
							why += fmt.Sprintf("; %d more refused since", folded)
						}
						g.audit.Record(commandEntry(r.WithContext(ctx), http.StatusForbidden, why))
					}
				}
				return
			}
			ctx = context.WithValue(ctx, scopesKey{}, tok.scopes)
		}
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// requestHost is r's Host without its port.
func requestHost(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.Host); err == nil {
		return host
	}
	return strings.Trim(r.Host, "[]")
}

func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// denyScope refuses a request its token's scopes do not allow: 403,
// naming the scope it needs (RFC 6750's insufficient_scope).
func denyScope(w http.ResponseWriter, tok *namedToken, need string) {
	has := strings.Join(tok.scopes, ", ")
	if has == "" {
		has = "none"
	}
	w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="ruled", error="insufficient_scope", scope=%q`, need))
	b, _ := json.Marshal(map[string]string{"scope": need,
		"error": fmt.Sprintf("api: token %q may not do this: it needs the %s scope (it has %s)", tok.name, need, has)})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	w.Write(append(b, '\n'))
}

func deny(w http.ResponseWriter, status int, challenge, msg string) {
	if challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
