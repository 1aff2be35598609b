package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/host/bus"
)

const goodToken = "0123456789abcdef0123"

func TestCheckBind(t *testing.T) {
	tests := []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8080", "", true},
		{"127.0.0.1:", "", false}, // a variable left unset: no port
		{"127.1.2.3:8080", "", true},
		{"[::1]:8080", "", true},
		{"localhost:8080", "", true},
		{"LOCALHOST:0", "", true},
		{"unix:/run/ruled.sock", "", true},
		{"/run/ruled.sock", "", true},
		{"unix:@ruled", "", false}, // abstract: no file permissions
		{"unix:@ruled", goodToken, true},
		{":8080", "", false},
		{"0.0.0.0:8080", "", false},
		{"[::]:8080", "", false},
		{"192.168.1.10:8080", "", false},
		{"gateway.lan:8080", "", false},
		{"localhost.evil.com:8080", "", false},
		{":8080", goodToken, true},
		{"0.0.0.0:8080", goodToken, true},
		{"192.168.1.10:8080", goodToken, true},
		{"127.0.0.1:8080", goodToken, true},
		{"0.0.0.0:8080", "short", false},
		{"127.0.0.1:8080", "short", false},
		{"", "", false},
		{"127.0.0.1", "", false}, // no port
		{"unix:", "", false},
	}
	for _, tc := range tests {
		err := CheckBind(tc.addr, tc.token)
		if (err == nil) != tc.ok {
			t.Errorf("CheckBind(%q, %q) = %v; want ok %v", tc.addr, tc.token, err, tc.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "api: ") {
			t.Errorf("CheckBind(%q, %q) error %q lacks the bus: prefix", tc.addr, tc.token, err)
		}
	}
	if err := CheckBind("0.0.0.0:8080", ""); !strings.Contains(err.Error(), "needs an API token") {
		t.Errorf("error %q does not say a token is needed", err)
	}
}

func TestZeroGuardRefuses(t *testing.T) {
	reached := false
	h := new(Guard).Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusForbidden || reached {
		t.Errorf("zero Guard: status %d, reached %v; want 403, not reached", rec.Code, reached)
	}
}

func TestNewGuardRefusesOpenBind(t *testing.T) {
	if g, err := NewGuard("0.0.0.0:8080", ""); err == nil {
		t.Errorf("NewGuard on every interface without a token = %v; want an error", g)
	}
}

func TestGuard(t *testing.T) {
	tests := []struct {
		name      string
		addr      string
		token     string
		host      string // request Host; default 127.0.0.1:8080
		auth      string
		status    int
		challenge string
	}{
		{name: "loopback open", addr: "127.0.0.1:8080", status: 200},
		{name: "loopback as localhost", addr: "127.0.0.1:8080", host: "localhost:8080", status: 200},
		{name: "loopback ipv6 host", addr: "[::1]:8080", host: "[::1]:8080", status: 200},
		{name: "loopback rebound name", addr: "127.0.0.1:8080", host: "evil.example:8080", status: 403},
		{name: "socket open", addr: "unix:/run/ruled.sock", host: "anything", status: 200},
		{name: "network no header", addr: "0.0.0.0:8080", token: goodToken, status: 401, challenge: `Bearer realm="ruled"`},
		{name: "network wrong token", addr: "0.0.0.0:8080", token: goodToken, auth: "Bearer " + goodToken + "x",
			status: 401, challenge: `Bearer realm="ruled", error="invalid_token"`},
		{name: "network prefix of token", addr: "0.0.0.0:8080", token: goodToken, auth: "Bearer " + goodToken[:16],
			status: 401, challenge: `Bearer realm="ruled", error="invalid_token"`},
		{name: "network basic auth", addr: "0.0.0.0:8080", token: goodToken, auth: "Basic " + goodToken, status: 401, challenge: `Bearer realm="ruled"`},
		{name: "network empty bearer", addr: "0.0.0.0:8080", token: goodToken, auth: "Bearer ", status: 401, challenge: `Bearer realm="ruled"`},
		{name: "network right token", addr: "0.0.0.0:8080", token: goodToken, auth: "Bearer " + goodToken, host: "gateway.lan:8080", status: 200},
		{name: "scheme case", addr: "192.168.1.10:8080", token: goodToken, auth: "bearer " + goodToken, status: 200},
		{name: "loopback with a token asks for it", addr: "127.0.0.1:8080", token: goodToken, status: 401, challenge: `Bearer realm="ruled"`},
		{name: "loopback with its token", addr: "127.0.0.1:8080", token: goodToken, auth: "Bearer " + goodToken, status: 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGuard(tc.addr, tc.token)
			if err != nil {
				t.Fatal(err)
			}
			reached := false
			h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = true }))
			req := httptest.NewRequest("POST", bus.IngestPath, nil)
			req.Host = "127.0.0.1:8080"
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Errorf("status = %d; want %d (%s)", rec.Code, tc.status, rec.Body)
			}
			if reached != (tc.status == 200) {
				t.Errorf("handler reached = %v; want %v", reached, tc.status == 200)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("WWW-Authenticate = %q; want %q", got, tc.challenge)
			}
			if tc.token != "" && strings.Contains(rec.Body.String(), tc.token) {
				t.Errorf("the response gives the token away: %s", rec.Body)
			}
		})
	}
}

// The guard and the ingest handler together, the way the daemon mounts them.
func TestGuardIngest(t *testing.T) {
	g, err := NewGuard("0.0.0.0:0", goodToken)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	mux := http.NewServeMux()
	mux.Handle(bus.IngestPath, &bus.Ingest{Sink: func(e *bus.Event) error { got = append(got, e.Topic); return nil }})
	srv := httptest.NewServer(g.Wrap(mux))
	defer srv.Close()

	post := func(auth string) int {
		req, _ := http.NewRequest("POST", srv.URL+bus.IngestPath, strings.NewReader(`{"topic":"a"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post(""); s != 401 {
		t.Errorf("without a token: %d; want 401", s)
	}
	if s := post("Bearer " + goodToken); s != 202 {
		t.Errorf("with the token: %d; want 202", s)
	}
	if len(got) != 1 {
		t.Errorf("sink got %v; want one event", got)
	}
}

// TestGuardNamedTokens: each of several tokens lets a request through
// carrying its name; none, a wrong one or a short one does not.
func TestGuardNamedTokens(t *testing.T) {
	ops, ci := "ops-0123456789abcdef", "ci-0123456789abcdef0"
	g, err := NewGuardNamed("0.0.0.0:8080", map[string]string{"ops": ops, "ci": ci})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ auth, want string }{
		{"Bearer " + ops, "ops"}, {"Bearer " + ci, "ci"}, {"Bearer " + ops + "x", ""}, {"", ""},
	} {
		got, reached := "", false
		h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached, got = true, TokenName(r.Context()) }))
		req := httptest.NewRequest("POST", bus.IngestPath, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
		if reached != (tc.want != "") || got != tc.want {
			t.Errorf("%q: reached %v as %q; want %q", tc.auth, reached, got, tc.want)
		}
	}
	if _, err := NewGuardNamed("0.0.0.0:8080", map[string]string{"ops": ops, "weak": "short"}); err == nil || !strings.Contains(err.Error(), `token "weak"`) {
		t.Errorf("a short named token: %v", err)
	}
}

// TestGuardScopes: a token given scopes makes the requests they allow and
// gets 403 naming the scope for the others; a token given none (the
// default) and the unix socket make every request.
func TestGuardScopes(t *testing.T) {
	toks := map[string]string{"dash": "dash-0123456789abcdef", "sensor": "sensor-0123456789abcd",
		"ops": "ops-0123456789abcdef0", "root": "root-0123456789abcdef"}
	g, err := NewGuardScoped("0.0.0.0:8080", toks, map[string][]string{"dash": {ScopeRead}, "sensor": {ScopeEvents},
		"ops": {ScopeRead, ScopeControl}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewGuardScoped("0.0.0.0:8080", toks, map[string][]string{"dash": {"admin"}}); err == nil {
		t.Error("a scope that is not one")
	}
	tests := []struct {
		token, method, path string
		want                int
		scope               string // the 403's
	}{
		{"dash", "GET", "/v1/status", 200, ""},
		{"dash", "GET", "/metrics", 200, ""},
		{"dash", "GET", WhoAmIPath, 200, ""},
		{"dash", "POST", bus.IngestPath, 403, ScopeEvents},
		{"dash", "POST", "/v1/rules/r/pause", 403, ScopeControl},
		{"dash", "DELETE", "/v1/state/scooter/sc-1", 403, ScopeControl},
		{"dash", "GET", AuditPath, 403, ScopeAudit},
		{"sensor", "POST", bus.IngestPath, 200, ""},
		{"sensor", "GET", "/v1/runs", 403, ScopeRead},
		{"sensor", "GET", WhoAmIPath, 200, ""},
		{"ops", "POST", "/v1/runs/x/rerun", 200, ""},
		{"ops", "PUT", "/v1/anything", 200, ""}, // an unknown method needs control
		{"ops", "POST", bus.IngestPath, 403, ScopeEvents},
		{"root", "GET", AuditPath, 200, ""},
		{"root", "POST", bus.IngestPath, 200, ""},
	}
	for _, tc := range tests {
		var scopes []string
		h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { scopes = ScopesOf(r.Context()) }))
		req := httptest.NewRequest(tc.method, tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+toks[tc.token])
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s %s %s: %d; want %d", tc.token, tc.method, tc.path, rec.Code, tc.want)
			continue
		}
		if tc.want == 403 {
			var body map[string]string
			json.Unmarshal(rec.Body.Bytes(), &body)
			if body["scope"] != tc.scope || !strings.Contains(body["error"], "needs the "+tc.scope+" scope") ||
				!strings.Contains(rec.Header().Get("WWW-Authenticate"), "insufficient_scope") {
				t.Errorf("%s %s %s: %s %q", tc.token, tc.method, tc.path, rec.Body.String(), rec.Header().Get("WWW-Authenticate"))
			}
		} else if tc.token == "root" && len(scopes) != len(AllScopes) {
			t.Errorf("root's scopes %v", scopes)
		}
	}
}

func ExampleParseScopes() {
	for _, s := range []string{"read", "events,read", "all", "admin"} {
		sc, err := ParseScopes(s)
		fmt.Println(sc, err)
	}
	// Output:
	// [read] <nil>
	// [events read] <nil>
	// [read events control audit] <nil>
	// [] "admin" is not a scope: read, events, control, audit, or all
}
