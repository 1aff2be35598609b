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

	"github.com/ruled-dev/ruled/host/wasm"
)

// A plugin's own limits win over the defaults, every one of them
// (init-timeout and stack-kb were parsed and not used).
func TestLimitsFor(t *testing.T) {
	c := Config{Limits: wasm.Limits{Timeout: time.Second, InitTimeout: 5 * time.Second, StackBytes: 64 << 10, Fuel: 7},
		Plugins: map[string]PluginConfig{"p": {Limits: wasm.Limits{Timeout: 2 * time.Second, InitTimeout: 3 * time.Second,
			StackBytes: 256 << 10, MemoryPages: 64, Instances: 2}}}}
	tests := []struct {
		plugin string
		want   wasm.Limits
	}{
		{"p", wasm.Limits{Timeout: 2 * time.Second, InitTimeout: 3 * time.Second, StackBytes: 256 << 10, MemoryPages: 64, Fuel: 7, Instances: 2}},
		{"q", c.Limits},
	}
	for _, tc := range tests {
		if got := c.limitsFor(tc.plugin); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.plugin, got, tc.want)
		}
		if got := c.pluginOptions(tc.plugin); got.Name != tc.plugin || got.Limits != tc.want {
			t.Errorf("%s: options %+v", tc.plugin, got)
		}
	}
}

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

// TestValidateDeployed: --redis with neither directory means deployed
// rules and plugins; Validate is idempotent; mixing is refused.
func TestValidateDeployed(t *testing.T) {
	tests := []struct {
		name     string
		c        Config
		err      string
		deployed bool
	}{
		{"redis, no directories", Config{RedisURL: "redis://x", DataDir: "/d"}, "", true},
		{"directories", Config{RedisURL: "redis://x", DataDir: "/d", RulesDir: "r", PluginsDir: "p"}, "", false},
		{"rules only", Config{RedisURL: "redis://x", DataDir: "/d", RulesDir: "r"}, "--plugins required", false},
		{"no redis", Config{DataDir: "/d"}, "--rules, --plugins required", false},
		{"deployed without redis", Config{Deployed: true, DataDir: "/d"}, "need --redis", false},
		{"deployed with a directory", Config{Deployed: true, RedisURL: "redis://x", DataDir: "/d", RulesDir: "r"}, "give neither", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.c.Deployed != tc.deployed {
				t.Errorf("deployed %v; want %v", tc.c.Deployed, tc.deployed)
			}
			if tc.deployed && (tc.c.RulesDir != filepath.Join("/d", "deployed", "rules") || tc.c.PluginsDir != filepath.Join("/d", "deployed", "plugins")) {
				t.Errorf("directories %s, %s", tc.c.RulesDir, tc.c.PluginsDir)
			}
			if err := tc.c.Validate(); err != nil {
				t.Errorf("a second Validate: %v", err)
			}
		})
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
