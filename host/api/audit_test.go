package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ruled-dev/ruled/host/audit"
)

type recorder struct {
	mu sync.Mutex
	es []audit.Entry
}

func (r *recorder) Record(e audit.Entry) { r.mu.Lock(); r.es = append(r.es, e); r.mu.Unlock() }

// TestAudited: a command is recorded with who, from where and its status,
// served or refused; a read, and a request no route takes, are not; a
// token refused for its scope is recorded once a second, the rest
// counted into its next entry.
func TestAudited(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/rules/{id}/{command}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "nope" {
			http.Error(w, "no such rule", http.StatusNotFound)
		}
	})
	mux.HandleFunc("GET /v1/status", func(http.ResponseWriter, *http.Request) {})
	rec := &recorder{}
	toks := map[string]string{"ops": "ops-0123456789abcdef", "dash": "dash-0123456789abcdef"}
	g, err := NewGuardScoped("0.0.0.0:1", toks, map[string][]string{"dash": {ScopeRead}})
	if err != nil {
		t.Fatal(err)
	}
	h := g.WithAudit(rec).Wrap(Audited(mux, rec))
	send := func(token, method, path string) {
		req := httptest.NewRequest(method, path, nil)
		req.RemoteAddr = "10.0.0.5:4000"
		req.Header.Set("Authorization", "Bearer "+toks[token])
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	send("ops", "POST", "/v1/rules/r/pause")
	send("ops", "POST", "/v1/rules/nope/pause")
	send("ops", "GET", "/v1/status")
	send("ops", "PUT", "/v1/nothing")
	for range 20 {
		send("dash", "POST", "/v1/rules/r/kill")
	}
	var got []string
	for _, e := range rec.es {
		got = append(got, e.Who+" "+e.From+" "+e.Detail)
	}
	want := []string{
		"token ops 10.0.0.5:4000 POST /v1/rules/r/pause → 200",
		"token ops 10.0.0.5:4000 POST /v1/rules/nope/pause → 404",
		"token dash 10.0.0.5:4000 POST /v1/rules/r/kill → 403 (needs the control scope)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
