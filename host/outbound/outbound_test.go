package outbound

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
)

// resolver answers every name with one address: a DNS that points a
// public-looking name at the device's own loopback.
type resolver struct{ to netip.Addr }

func (r resolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{r.to}, nil
}

// server is a real HTTP server on loopback that counts what reaches it.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64, string) {
	t.Helper()
	var hits atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); h(w, r) }))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	return s, &hits, u.Host
}

func client(policies map[string]Policy) *Client {
	return New(Config{Policy: func(p string) (Policy, bool) { pol, ok := policies[p]; return pol, ok },
		Resolver: resolver{netip.MustParseAddr("127.0.0.1")}})
}

func reason(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

func TestAllowedRequestAndResponse(t *testing.T) {
	_, hits, host := server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo", r.Header.Get("Idempotency-Key"))
		w.WriteHeader(201)
		io.WriteString(w, r.Method+" "+string(b)+" "+r.Header.Get("User-Agent"))
	})
	c := client(map[string]Policy{"hook": {Private: []string{host}}})
	resp, err := c.Do(context.Background(), "hook", abi.HTTPRequest{Method: "POST", URL: "http://" + host + "/x",
		Header: [][2]string{{"Idempotency-Key", "run/step/0"}, {"Host", "evil.example"}}, Body: []byte(`{"a":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 201 || string(resp.Body) != `POST {"a":1} ruled` || hits.Load() != 1 {
		t.Errorf("response %d %q (hits %d)", resp.Status, resp.Body, hits.Load())
	}
	found := false
	for _, h := range resp.Header {
		found = found || h == [2]string{"X-Echo", "run/step/0"}
	}
	if !found {
		t.Errorf("headers %v", resp.Header)
	}
	if st := c.Stats(); st.Requests != 1 || len(st.Refused) != 0 {
		t.Errorf("stats %+v", st)
	}
}

// Each refusal is named, counted, and sends nothing.
func TestRefusals(t *testing.T) {
	_, hits, host := server(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			io.WriteString(w, strings.Repeat("x", 1000))
		case "/away":
			http.Redirect(w, r, "http://elsewhere.test:"+r.Host[strings.LastIndex(r.Host, ":")+1:]+"/", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/headers":
			w.Header().Set("X-Pad", strings.Repeat("p", 200))
			io.WriteString(w, "ok")
		case "/upgrade":
			// A 101 nobody asked for, then silence: the connection is the
			// caller's, and net/http no longer watches the deadline.
			conn, buf, _ := w.(http.Hijacker).Hijack()
			buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n")
			buf.Flush()
			<-r.Context().Done()
			time.Sleep(2 * time.Second)
			conn.Close()
		default:
			io.WriteString(w, "ok")
		}
	})
	port := strings.Split(host, ":")[1]
	policies := map[string]Policy{
		"hook":    {Private: []string{host}, MaxResponse: 100, MaxRequest: 10},
		"public":  {Hosts: []string{"hooks.example.com:*", "127.0.0.1:*"}},
		"web":     {Hosts: []string{"hooks.example.com"}},
		"nothing": {},
	}
	c := client(policies)
	for _, tc := range []struct {
		name, plugin, url string
		body              string
		want              string
		hit               bool
		header            [2]string
	}{
		{"a host not on the list", "hook", "http://other.test:" + port + "/", "", ReasonHost, false, [2]string{}},
		{"a listed name that resolves to loopback", "public", "http://hooks.example.com:" + port + "/", "", ReasonPrivate, false, [2]string{}},
		{"a loopback IP listed but not as private", "public", "http://127.0.0.1:" + port + "/", "", ReasonPrivate, false, [2]string{}},
		{"a port other than the entry's", "hook", "http://127.0.0.1:1/", "", ReasonHost, false, [2]string{}},
		{"a scheme that is not http", "hook", "file:///etc/passwd", "", ReasonScheme, false, [2]string{}},
		{"a relative URL", "hook", "/x", "", ReasonScheme, false, [2]string{}},
		{"a plugin with no hosts", "nothing", "http://" + host + "/", "", ReasonNoPolicy, false, [2]string{}},
		{"an unknown plugin", "stranger", "http://" + host + "/", "", ReasonNoPolicy, false, [2]string{}},
		{"a request body over the bound", "hook", "http://" + host + "/", "12345678901", ReasonRequestTooLarge, false, [2]string{}},
		{"a response over the bound", "hook", "http://" + host + "/big", "", ReasonResponseTooLarge, true, [2]string{}},
		{"a redirect to a host not on the list", "hook", "http://" + host + "/away", "", ReasonRedirect, true, [2]string{}},
		{"too many redirects", "hook", "http://" + host + "/loop", "", ReasonRedirect, true, [2]string{}},
		{"an entry without a port, another port", "web", "http://hooks.example.com:6379/", "", ReasonHost, false, [2]string{}},
		{"response headers over the bound", "hook", "http://" + host + "/headers", "", ReasonResponseTooLarge, true, [2]string{}},
		{"a 101 nobody asked for", "hook", "http://" + host + "/upgrade", "", ReasonBadRequest, true, [2]string{}},
		{"a header name with a space", "hook", "http://" + host + "/", "", ReasonBadRequest, false, [2]string{"X Bad", "v"}},
		{"a header value with a line break", "hook", "http://" + host + "/", "", ReasonBadRequest, false, [2]string{"X-A", "v\r\nX-B: w"}},
		{"a URL and headers over the bound", "hook", "http://" + host + "/", "", ReasonRequestTooLarge, false, [2]string{"X-Pad", strings.Repeat("p", MaxHead)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := hits.Load()
			req := abi.HTTPRequest{URL: tc.url, Body: []byte(tc.body)}
			if tc.header[0] != "" {
				req.Header = [][2]string{tc.header}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := c.Do(ctx, tc.plugin, req)
			if got := reason(err); got != tc.want {
				t.Fatalf("refused for %q (%v), want %q", got, err, tc.want)
			}
			if hit := hits.Load() > before; hit != tc.hit {
				t.Errorf("reached the server: %v, want %v", hit, tc.hit)
			}
		})
	}
	st := c.Stats()
	if st.Refused[ReasonPrivate] < 2 || st.Refused[ReasonHost] != 3 || st.Refused[ReasonRedirect] != 2 {
		t.Errorf("stats %+v", st)
	}
	var r *Refusal
	_, err := c.Do(context.Background(), "hook", abi.HTTPRequest{URL: "http://" + host + "/big"})
	if !errors.As(err, &r) || r.Status() != abi.StatusTooLarge {
		t.Errorf("a response over its bound: status %v", err)
	}
}

// A redirect to a host the policy allows is followed.
func TestRedirectToAnAllowedHost(t *testing.T) {
	_, _, to := server(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "arrived") })
	_, _, from := server(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "http://"+to+"/", http.StatusFound) })
	c := client(map[string]Policy{"hook": {Private: []string{from, to}}})
	resp, err := c.Do(context.Background(), "hook", abi.HTTPRequest{URL: "http://" + from + "/"})
	if err != nil || string(resp.Body) != "arrived" {
		t.Fatalf("%q %v", resp.Body, err)
	}
}

// The step's deadline bounds the request: a server that does not answer
// in time fails it (not a refusal: a retry may succeed), and it is counted.
func TestDeadline(t *testing.T) {
	release := make(chan struct{})
	_, _, host := server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := client(map[string]Policy{"hook": {Private: []string{host}}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Do(ctx, "hook", abi.HTTPRequest{URL: "http://" + host + "/"})
	if err == nil || reason(err) != "" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past the deadline: %v", err)
	}
	if st := c.Stats(); st.Failed != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		entry, host, port string
		want              bool
	}{
		{"api.example.com", "api.example.com", "443", true},
		{"API.example.com", "api.example.com", "80", true},
		{"api.example.com", "api.example.com.", "80", true}, // matchAny trims the final dot
		{"api.example.com", "x.api.example.com", "443", false},
		{"*.example.com", "x.example.com", "443", true},
		{"*.example.com", "a.b.example.com", "443", true},
		{"*.example.com", "example.com", "443", false},
		{"*.example.com", "evilexample.com", "443", false},
		{"api.example.com:8443", "api.example.com", "443", false},
		{"api.example.com:8443", "api.example.com", "8443", true},
		{"192.168.1.20", "192.168.1.20", "80", true},
		{"[fd00::1]:80", "fd00::1", "80", true},
		{"192.168.1.20", "192.168.1.2", "80", false},
		{"nas.lan", "nas.lan", "6379", false}, // without a port: 80 and 443 only
		{"nas.lan:*", "nas.lan", "6379", true},
	} {
		if got := matchAny([]string{tc.entry}, tc.host, tc.port); got != tc.want {
			t.Errorf("match(%q, %q, %q) = %v, want %v", tc.entry, tc.host, tc.port, got, tc.want)
		}
	}
}

func TestPublic(t *testing.T) {
	for ip, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "::1": false, "fe80::1": false, "fd00::1": false, "224.0.0.1": false,
		"::ffff:127.0.0.1": false, "64:ff9b::a00:1": false, "2002:c0a8:101::1": false, "2001:0:4136:e378::1": false, "fec0::1": false,
	} {
		if got := public(netip.MustParseAddr(ip).Unmap()); got != want {
			t.Errorf("public(%s) = %v, want %v", ip, got, want)
		}
	}
}

func TestCheckHost(t *testing.T) {
	for entry, ok := range map[string]bool{"api.example.com": true, "*.example.com": true, "10.0.0.1:8080": true, "[::1]:80": true, "nas.lan:*": true,
		"": false, "http://x": false, "a b": false, "x:port": false, "*": false} {
		if err := CheckHost(entry); (err == nil) != ok {
			t.Errorf("CheckHost(%q) = %v", entry, err)
		}
	}
}
