package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/console"
)

// The console's files come out of the binary with their types and a
// strict policy; what is not there is 404.
func TestHandler(t *testing.T) {
	srv := httptest.NewServer(console.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		path, ctype, has string
		code             int
	}{
		{"/", "text/html", `<script src="/app.js" defer></script>`, 200},
		{"/app.js", "text/javascript", "async function api(path", 200},
		{"/style.css", "text/css", ".state-paused", 200},
		{"/login.html", "text/html", `id="token"`, 200},
		{"/login.js", "text/javascript", "ruled_token=", 200},
		{"/nothing.js", "", "", 404},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(string(b), tc.has) {
			t.Errorf("GET %s: %d %q, has %q: %v", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.has, strings.Contains(string(b), tc.has))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: CSP %q", tc.path, csp)
		}
	}
}

// Behind a guard with a token, the console's own files load without it —
// they show nothing; the page sends a browser without one to the login
// page — and the API they call needs it, from the header or, for a read,
// the cookie the login page sets; a cookie never authorizes a change.
func TestGuardedConsole(t *testing.T) {
	const token = "a-token-of-twenty-chars"
	g, err := api.NewGuard("0.0.0.0:8080", token)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", console.Handler())
	mux.HandleFunc("POST /v1/rules/{id}/{cmd}", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("done")) })
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) })
	srv := httptest.NewServer(g.WithPublic(console.Public...).Wrap(mux))
	defer srv.Close()
	cookie := &http.Cookie{Name: api.TokenCookie, Value: strings.ReplaceAll(token, "-", "%2D")} // as encodeURIComponent may leave it
	for _, tc := range []struct {
		name, method, path string
		bearer             bool
		cookie             *http.Cookie
		code               int
	}{
		{"the page without a token", "GET", "/", false, nil, 200},
		{"the script without a token", "GET", "/app.js", false, nil, 200},
		{"the login page", "GET", console.LoginPath, false, nil, 200},
		{"its script", "GET", "/login.js", false, nil, 200},
		{"the API without a token", "GET", "/v1/status", false, nil, 401},
		{"the API with the cookie", "GET", "/v1/status", false, cookie, 200},
		{"the API with a wrong cookie", "GET", "/v1/status", false, &http.Cookie{Name: api.TokenCookie, Value: "wrong-token-wrong-token"}, 401},
		{"the API with the header", "GET", "/v1/status", true, nil, 200},
		{"a command with the cookie only", "POST", "/v1/rules/r/pause", false, cookie, 401},
		{"a command with the header", "POST", "/v1/rules/r/pause", true, nil, 200},
		{"a POST to the login page", "POST", console.LoginPath, false, nil, 401},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		if tc.bearer {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if tc.cookie != nil {
			req.AddCookie(tc.cookie)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d; want %d", tc.name, resp.StatusCode, tc.code)
		}
	}
}
