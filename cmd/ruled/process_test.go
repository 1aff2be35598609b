package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/syncbuf"
)

// TestMain lets the test binary be ruled itself: a test starts it as a
// child process with RULED_BE_MAIN=1, and kills it for real.
func TestMain(m *testing.M) {
	if os.Getenv("RULED_BE_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// proc is a ruled process started by a test.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	data string
	done chan struct{}
}

// startRuled runs `ruled run` with args and waits until it serves.
func startRuled(t *testing.T, data string, args ...string) *proc {
	t.Helper()
	p := spawnRuled(t, data, args...)
	// A cold compilation cache (a fresh clone) compiles each plugin at the
	// first start, which for expr-lang's module under -race and a loaded
	// machine has taken half a minute.
	p.waitLogWithin("ruled running", 1, 3*time.Minute)
	return p
}

// spawnRuled runs `ruled run` with args and returns at once.
func spawnRuled(t *testing.T, data string, args ...string) *proc {
	t.Helper()
	return spawnRuledEnv(t, data, nil, args...)
}

// spawnRuledEnv is spawnRuled with more environment (GOMAXPROCS=1).
func spawnRuledEnv(t *testing.T, data string, env []string, args ...string) *proc {
	t.Helper()
	os.MkdirAll(filepath.Join(data, "cache"), 0o755)
	os.MkdirAll(plugintest.CacheDir(), 0o755)
	os.Symlink(plugintest.CacheDir(), filepath.Join(data, "cache", "wazero")) // share compiled plugins
	return spawnCmd(t, data, []string{os.Args[0]}, append([]string{"RULED_BE_MAIN=1"}, env...), args...)
}

// spawnCmd runs `ruled run` as the command argv (a binary, or an emulator
// and a binary) with more environment, and returns at once.
func spawnCmd(t *testing.T, data string, argv []string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, out: &syncbuf.Buffer{}, data: data, done: make(chan struct{})}
	p.cmd = exec.Command(argv[0], append(append(argv[1:], "run", "--data", data, "--log-level", "debug"), args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

func (p *proc) term() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.t.Fatal("ruled did not stop on SIGTERM")
	}
}

// waitLog waits until the log holds n lines containing s.
func (p *proc) waitLog(s string, n int) {
	p.t.Helper()
	p.waitLogWithin(s, n, 30*time.Second)
}

// waitLogWithin is waitLog with its own timeout.
func (p *proc) waitLogWithin(s string, n int, within time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if strings.Count(p.out.String(), s) >= n {
			return
		}
		select {
		case <-p.done:
			p.t.Fatalf("ruled exited waiting for %d× %q:\n%s", n, s, p.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.t.Fatalf("timed out waiting for %d× %q:\n%s", n, s, p.out.String())
}

func (p *proc) client() *http.Client {
	sock := filepath.Join(p.data, api.SocketName)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return net.Dial("unix", sock)
	}}}
}

func (p *proc) post(events ...string) {
	p.t.Helper()
	resp, err := p.client().Post("http://ruled/v1/events", "application/x-ndjson", strings.NewReader(strings.Join(events, "\n")))
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		p.t.Fatalf("POST /v1/events: %s %s", resp.Status, b.String())
	}
}

func (p *proc) pending() []status.PendingRecord {
	p.t.Helper()
	var recs []status.PendingRecord
	if err := apiGet(context.Background(), p.data, "/v1/pending", &recs); err != nil {
		p.t.Fatal(err)
	}
	return recs
}

// fixture is a rules dir and a plugins dir for process tests: the log
// plugin, and each first-party plugin named in more.
func fixture(t *testing.T, rules string, more ...string) (rulesDir, pluginsDir string) {
	t.Helper()
	dir := t.TempDir()
	rulesDir, pluginsDir = filepath.Join(dir, "rules"), filepath.Join(dir, "plugins")
	os.MkdirAll(rulesDir, 0o755)
	os.MkdirAll(pluginsDir, 0o755)
	os.WriteFile(filepath.Join(rulesDir, "rules.yaml"), []byte(rules), 0o644)
	for _, name := range append([]string{"log"}, more...) {
		b, err := os.ReadFile(plugintest.FirstParty(t, name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(pluginsDir, name+".wasm"), b, 0o644)
	}
	return rulesDir, pluginsDir
}

func events(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"topic":"job.start","n":"%s%d"}`, prefix, i+1)
	}
	return out
}

// fired counts each "FIRED <n>" line in logs.
func fired(logs ...string) map[string]int {
	m := map[string]int{}
	for _, l := range logs {
		for _, line := range strings.Split(l, "\n") {
			if i := strings.Index(line, "FIRED "); i >= 0 {
				f := strings.Fields(line[i+6:])
				if len(f) > 0 {
					m[strings.TrimSuffix(f[0], ":")]++
				}
			}
		}
	}
	return m
}

// waitPending waits until n durable steps are recorded: a step's record is
// written after the step before it returns, a moment after its log line.
func (p *proc) waitPending(n int) {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(p.pending()) < n {
		if time.Now().After(deadline) {
			p.t.Fatalf("%d of %d records written", len(p.pending()), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitNoPending waits until no durable step is recorded: a record is
// removed after its step's action returns, a moment after the action logs.
func (p *proc) waitNoPending() {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for n := len(p.pending()); n != 0; n = len(p.pending()) {
		if time.Now().After(deadline) {
			p.t.Fatalf("%d records left", n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// metricLines returns the lines of p's /metrics that start with one of
// prefixes, or why there are none: what a failing test prints.
func (p *proc) metricLines(prefixes ...string) string {
	resp, err := p.client().Get("http://ruled/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		for _, pre := range prefixes {
			if strings.HasPrefix(l, pre) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
