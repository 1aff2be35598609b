package daemon

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHTTPRateLimit: the TCP API refuses a client past its rate with 429
// and Retry-After, counts it, and the unix socket is not limited.
func TestHTTPRateLimit(t *testing.T) {
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), oneRule)
	d := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"),
		HTTPAddr: "127.0.0.1:0", HTTPRate: 0.01, HTTPBurst: 2})
	var codes []int
	for range 3 {
		resp, err := http.Get("http://" + d.Addr() + "/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Errorf("codes %v; want two served, the third refused", codes)
	}
	if n := d.Status().HTTPRefused; n != 1 {
		t.Errorf("refused %d; want 1", n)
	}
	c := socketClient(filepath.Join(dir, "data"))
	for range 5 {
		resp, err := c.Get("http://ruled/v1/status")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("socket: %v %v", resp, err)
		}
		resp.Body.Close()
	}
}

// TestTLS: with a certificate and key the TCP API speaks TLS, and only
// TLS; the socket is unchanged.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := selfSigned(t, dir)
	writeRules(t, filepath.Join(dir, "rules"), oneRule)
	d := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"),
		HTTPAddr: "127.0.0.1:0", TLSCert: certFile, TLSKey: keyFile})
	pem, _ := os.ReadFile(certFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	resp, err := c.Get("https://" + d.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz over TLS: %s", resp.Status)
	}
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + d.Addr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP was served on the TLS port")
		}
	}
	if _, err := New(Config{RulesDir: "r", PluginsDir: "p", DataDir: dir, TLSCert: certFile}, nil); err == nil {
		t.Error("a certificate without a key was accepted")
	}
}

// selfSigned writes a certificate for localhost and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile
}

// TestSlowClientsLeaveRoom: 300 clients of one address open connections
// and trickle their headers (issue 38: they held all 256 places and
// /readyz timed out). One address holds at most its share; the rest are
// closed at once and counted; /readyz answers from another address and
// on the unix socket meanwhile.
func TestSlowClientsLeaveRoom(t *testing.T) {
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), oneRule)
	d := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"),
		HTTPAddr: "127.0.0.1:0"})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 300 {
		c, err := net.DialTimeout("tcp", d.Addr(), 5*time.Second)
		if err != nil {
			break // the listener's backlog is full: as good as held
		}
		c.Write([]byte("GET /readyz HTTP/1.1\r\nHost: x\r\nX-Slow: ")) // and never the rest
		conns = append(conns, c)
	}
	eventually(t, "connections past the share refused", func() bool { return d.Status().HTTPConnsRefused >= 300-64 })
	other := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	resp, err := other.Get("http://" + d.Addr() + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz from another address under the flood: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = socketClient(filepath.Join(dir, "data")).Get("http://ruled/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz on the socket under the flood: %v %v", resp, err)
	}
	resp.Body.Close()
	if !strings.Contains(d.logs.String(), "its address holds its share") {
		t.Error("no log line says connections were closed past the share")
	}
	if n := strings.Count(d.logs.String(), "its address holds its share"); n > 3 {
		t.Errorf("the refusal logged %d times; want it folded to one a second", n)
	}
}
