package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ruled-dev/ruled/host/bus"
)

// Scopes are what a token may do. Each request needs one (ScopeOf); a
// token given scopes is refused, with 403 naming the scope, a request
// needing another. The unix socket (its file mode is its guard) and a
// loopback API without tokens may do everything.
const (
	// ScopeRead reads: status, rules, runs and their trees, plugins,
	// pending steps, states, windows, the event stream, /metrics, the
	// console.
	ScopeRead = "read"
	// ScopeEvents sends events (POST /v1/events).
	ScopeEvents = "events"
	// ScopeControl commands rules and runs (pause, kill, rerun, …) and
	// deletes states.
	ScopeControl = "control"
	// ScopeAudit reads the audit trail (GET /v1/audit): who did what,
	// from where.
	ScopeAudit = "audit"
)

// AllScopes are the scopes, in the order the docs list them.
var AllScopes = []string{ScopeRead, ScopeEvents, ScopeControl, ScopeAudit}

// DefaultScopes are a named token's when its line gives none: the least
// that works — it reads, and changes nothing.
var DefaultScopes = []string{ScopeRead}

// ParseScopes reads a token's scopes: words separated by commas, "all"
// for every scope.
func ParseScopes(s string) ([]string, error) {
	var out []string
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		switch {
		case w == "all":
			return slices.Clone(AllScopes), nil
		case slices.Contains(AllScopes, w):
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		default:
			return nil, fmt.Errorf("%q is not a scope: %s, or all", w, strings.Join(AllScopes, ", "))
		}
	}
	return out, nil
}

// WhoAmIPath answers who a request's token is and what it may do, for
// any token: the console hides what its token may not do.
const WhoAmIPath = "/v1/whoami"

// ScopeOf is the scope request r needs; "" for none beyond a valid token
// (WhoAmIPath). A method the API does not read with needs control: what
// is not known to be harmless needs the most.
func ScopeOf(r *http.Request) string {
	p := r.URL.Path
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case p == WhoAmIPath:
			return ""
		case p == AuditPath || strings.HasPrefix(p, AuditPath+"/"):
			return ScopeAudit
		}
		return ScopeRead
	case http.MethodPost:
		if p == bus.IngestPath {
			return ScopeEvents
		}
	}
	return ScopeControl
}

type scopesKey struct{}

// ScopesOf are the scopes the request ctx is of may use: every scope on
// the socket and a loopback API without tokens.
func ScopesOf(ctx context.Context) []string {
	if s, ok := ctx.Value(scopesKey{}).([]string); ok {
		return s
	}
	return AllScopes
}

// WhoAmI is what WhoAmIPath answers.
type WhoAmI struct {
	Token  string   `json:"token,omitempty"` // "" on the socket, or without tokens
	By     string   `json:"by"`              // as a command records its sender
	Scopes []string `json:"scopes"`
}

func whoAmI(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, WhoAmI{Token: TokenName(r.Context()), By: By(r.Context()), Scopes: ScopesOf(r.Context())})
}
