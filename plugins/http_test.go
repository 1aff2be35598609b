//go:build !wasip1

package plugins_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/outbound"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// TestHTTP: the http plugin, compiled, on the real host and its outbound
// client, against a real local server: the URL, headers and body
// templated from the event, the step's idempotency key sent, a status
// outside ok failing the step, and a host the operator did not allow
// refused before anything is sent.
func TestHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Idempotency-Key")+" "+r.Header.Get("X-Vehicle")+" "+
			r.Header.Get("Content-Type")+" "+string(b))
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/fail") {
			http.Error(w, "the depot is closed\ncome back tomorrow", http.StatusServiceUnavailable)
			return
		}
		if code, ok := strings.CutPrefix(r.URL.Path, "/status/"); ok {
			n, _ := strconv.Atoi(code)
			w.WriteHeader(n)
			return
		}
		io.WriteString(w, `{"slot":"9:00"}`)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	out := outbound.New(outbound.Config{Policy: func(p string) (outbound.Policy, bool) {
		return outbound.Policy{Private: []string{u.Host}}, p == "http"
	}})
	m, _, _ := loadWith(t, "http", wasm.Services{HTTP: out}, abi.CapHTTP)
	ctx := context.Background()

	h, err := m.Configure(ctx, "request", []byte(`{"url":"`+srv.URL+`/book/{{vehicle}}","headers":{"X-Vehicle":"{{vehicle}}"},`+
		`"body":{"vehicle":"{{vehicle}}","level":"{{battery}}"}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Act(ctx, call(t, ev))
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"slot":"9:00"}` {
		t.Errorf("result %q", res)
	}
	want := `POST /book/s-17 run-1/s/0 s-17 application/json {"level":12.5,"vehicle":"s-17"}`
	if len(got) != 1 || got[0] != want {
		t.Fatalf("the server got %q, want %q", got, want)
	}

	fail, err := m.Configure(ctx, "request", []byte(`{"url":"`+srv.URL+`/fail","method":"put","body":"hi {{vehicle}}"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fail.Act(ctx, call(t, ev)); err == nil || !strings.Contains(err.Error(), "status 503: the depot is closed come back tomorrow") {
		t.Errorf("a 503: %v", err)
	}
	if got[1] != "PUT /fail run-1/s/0  text/plain; charset=utf-8 hi s-17" {
		t.Errorf("the server got %q", got[1])
	}
	if _, err := fail.Act(ctx, call(t, ev)); permanent(err) {
		t.Errorf("a 503 says a retry would fail the same way: %v", err)
	}
	// A 4xx but 408, 425 and 429 is the request's fault: not worth a retry.
	for code, perm := range map[int]bool{400: true, 404: true, 422: true, 408: false, 425: false, 429: false, 500: false, 502: false} {
		h, err := m.Configure(ctx, "request", []byte(`{"url":"`+srv.URL+`/status/`+strconv.Itoa(code)+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Act(ctx, call(t, ev)); err == nil || permanent(err) != perm {
			t.Errorf("status %d: permanent %v (%v); want %v", code, permanent(err), err, perm)
		}
	}
	got = got[:2]

	away, err := m.Configure(ctx, "request", []byte(`{"url":"http://192.0.2.1/x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := away.Act(ctx, call(t, ev)); err == nil || !strings.Contains(err.Error(), "denied") ||
		!strings.Contains(err.Error(), "(the host: outbound http refused (host): 192.0.2.1 is not among the plugin's hosts)") {
		t.Errorf("a host not allowed: %v", err)
	}
	if _, err := away.Act(ctx, call(t, ev)); !permanent(err) {
		t.Errorf("a host not allowed is worth a retry: %v", err)
	}
	if len(got) != 2 {
		t.Errorf("a refused request reached the server: %q", got)
	}
	if st := out.Stats(); st.Requests != 11 || st.Refused[outbound.ReasonHost] != 2 {
		t.Errorf("stats %+v", st)
	}

	for _, bad := range []string{`{}`, `{"url":"ftp://x"}`, `{"url":"http://x","body":1}`, `{"url":"http://x","headers":{"a":1}}`,
		`{"url":"http://x","ok":[99]}`} {
		if _, err := m.Configure(ctx, "request", []byte(bad)); err == nil {
			t.Errorf("config %s accepted", bad)
		}
	}
}

// permanent reports whether err says a retry would fail the same way
// (abi.StatusPermanent).
func permanent(err error) bool {
	ce, ok := errors.AsType[*wasm.CallError](err)
	return ok && ce.Permanent()
}

// Without the grant the module does not load: it imports http_request.
func TestHTTPNeedsGrant(t *testing.T) {
	rt, err := wasm.NewRuntime(context.Background(), wasm.Config{CacheDir: plugintest.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	_, err = rt.LoadFile(context.Background(), plugintest.FirstParty(t, "http"), wasm.Options{})
	if err == nil || !strings.Contains(err.Error(), `needs the "http" capability`) {
		t.Fatalf("load without grant: %v", err)
	}
}

// BenchmarkHTTP is one webhook through the http plugin on the host —
// templating, the ABI's encode and decode, the allow-list and address
// checks, the plugin's own connection pool — against the same request
// sent directly with net/http to the same local server, keep-alive on
// both. `make bench` reports plugin − direct: the host's overhead per
// request (target ≤ 100 µs).
func BenchmarkHTTP(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	body := `{"vehicle":"s-17","level":12.5}`
	b.Run("direct", func(b *testing.B) {
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		for range b.N {
			req, _ := http.NewRequest("POST", srv.URL+"/book/s-17", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "run-1/s/0")
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("plugin", func(b *testing.B) {
		out := outbound.New(outbound.Config{Policy: func(string) (outbound.Policy, bool) {
			return outbound.Policy{Private: []string{u.Host}}, true
		}})
		m, _, _ := loadWith(b, "http", wasm.Services{HTTP: out}, abi.CapHTTP)
		ctx := context.Background()
		h, err := m.Configure(ctx, "request", []byte(`{"url":"`+srv.URL+`/book/{{vehicle}}","body":{"vehicle":"{{vehicle}}","level":"{{battery}}"}}`))
		if err != nil {
			b.Fatal(err)
		}
		c := call(b, ev)
		b.ResetTimer()
		for range b.N {
			if _, err := h.Act(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
