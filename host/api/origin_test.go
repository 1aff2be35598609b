package api

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestSameOrigin(t *testing.T) {
	h := SameOrigin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	tests := []struct {
		name, method, host, origin, site string
		code                             int
	}{
		{"a read from anywhere", "GET", "127.0.0.1:8080", "http://evil.example", "cross-site", 200},
		{"the CLI: no Origin", "POST", "127.0.0.1:8080", "", "", 200},
		{"the console, same origin", "POST", "127.0.0.1:8080", "http://127.0.0.1:8080", "same-origin", 200},
		{"same origin, default port", "POST", "localhost", "http://localhost:80", "", 200},
		{"same origin, case", "POST", "LocalHost:8080", "http://localhost:8080", "", 200},
		{"another site", "POST", "127.0.0.1:8080", "http://evil.example", "cross-site", 403},
		{"another port", "POST", "127.0.0.1:8080", "http://127.0.0.1:9999", "same-site", 403},
		{"another scheme's port", "POST", "localhost", "https://localhost", "", 403},
		{"a sandboxed page", "POST", "127.0.0.1:8080", "null", "", 403},
		{"cross-site without Origin", "DELETE", "127.0.0.1:8080", "", "cross-site", 403},
		{"a file page", "POST", "127.0.0.1:8080", "file://", "", 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "http://"+tc.host+"/v1/rules/r/pause", nil)
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.site != "" {
				r.Header.Set("Sec-Fetch-Site", tc.site)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.code {
				t.Errorf("%s from %q to %s: %d; want %d (%s)", tc.method, tc.origin, tc.host, w.Code, tc.code, w.Body)
			}
		})
	}
}

// TestConnLimit: with two connections allowed, a third client waits while
// both are busy, an idle keep-alive connection is closed to make room for
// it, and a trickling body is cut at the server's read timeout.
func TestConnLimit(t *testing.T) {
	lim := NewConnLimit(2)
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			<-release
		}
		w.Write([]byte("ok"))
	}))
	srv.Listener = lim.Wrap(srv.Listener)
	srv.Config.ConnState = lim.ConnState
	srv.Start()
	defer srv.Close()
	get := func(path string, c *http.Client) (string, error) {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	busy := func() chan error {
		done := make(chan error, 1)
		go func() { _, err := get("/busy", &http.Client{Transport: &http.Transport{}}); done <- err }()
		return done
	}
	a, b := busy(), busy()
	time.Sleep(50 * time.Millisecond)
	third := make(chan error, 1)
	go func() {
		_, err := get("/", &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second})
		third <- err
	}()
	select {
	case err := <-third:
		t.Fatalf("a third request was served while two connections were busy (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	for _, ch := range []chan error{a, b, third} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	// Now two idle keep-alive connections hold the limit; new clients, one
	// transport each (as a CLI run is), still get in.
	for i := range 5 {
		if _, err := get("/", &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}); err != nil {
			t.Fatalf("client %d behind idle connections: %v", i, err)
		}
	}
	if n := lim.Open(); n > 2 {
		t.Errorf("%d connections open; want at most 2", n)
	}
}

// TestConnShare: an address past its share of the places has an idle
// connection of its own closed to make room, or, with none idle, the new
// one closed and counted; another address is untouched.
func TestConnShare(t *testing.T) {
	lim := NewConnLimit(8)
	lim.Share = 2
	var refusedAddr atomic.Value
	lim.OnRefuse = func(addr string) { refusedAddr.Store(addr) }
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	srv.Listener = lim.Wrap(srv.Listener)
	srv.Config.ConnState = lim.ConnState
	srv.Start()
	defer srv.Close()
	// Two idle keep-alive connections, then a third client: one of the
	// idle ones goes, the client is served.
	for i := range 3 {
		resp, err := (&http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}).Get(srv.URL)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if lim.Refused() != 0 {
		t.Fatalf("%d refused with idle connections to close", lim.Refused())
	}
	// A client has its response before the server marks its connection
	// idle, and an evicted one gives its place back when the server sees
	// it closed: wait for both, or a raw connection below finds the last
	// client's still active and is refused (a flake: 1 run in 15).
	settled := func() bool {
		lim.mu.Lock()
		defer lim.mu.Unlock()
		return len(lim.idle) == 2 && lim.byAddr["127.0.0.1"] == 2
	}
	for deadline := time.Now().Add(5 * time.Second); !settled(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the three clients' connections did not settle to two idle")
		}
	}
	// Busy ones (a request line, never its end) are not closed: past the
	// share a new one is.
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 4 {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET / HTTP/1.1\r\n"))
		held = append(held, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for lim.Refused() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := lim.Refused(); n != 2 || refusedAddr.Load() != "127.0.0.1" {
		t.Errorf("%d refused (last %v); want the two past the share of 127.0.0.1", n, refusedAddr.Load())
	}
	other := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	resp, err := other.Get(srv.URL)
	if err != nil {
		t.Fatalf("another address: %v", err)
	}
	resp.Body.Close()
}
