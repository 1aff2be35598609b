package daemon

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/syncbuf"
)

// pluginsDir is the first-party and example plugins in one directory.
func pluginsDir(t testing.TB) string { return plugintest.ExampleDir(t) }

// cacheInto points a data dir's compilation cache at the tests' shared one,
// so each daemon in a test does not compile the plugins again.
func cacheInto(t testing.TB, data string) {
	t.Helper()
	os.MkdirAll(filepath.Join(data, "cache"), 0o755)
	if err := os.Symlink(plugintest.CacheDir(), filepath.Join(data, "cache", "wazero")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	os.MkdirAll(plugintest.CacheDir(), 0o755)
}

func writeRules(t testing.TB, dir, yaml string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// socketClient talks HTTP to the daemon whose data dir is data, through
// its API socket.
func socketClient(data string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return net.Dial("unix", filepath.Join(data, api.SocketName))
	}}}
}

type testDaemon struct {
	*Daemon
	logs *syncbuf.Buffer
	mu   sync.Mutex
	seen []*bus.Event
}

var grants = map[string]PluginConfig{"publish": {Grant: []abi.Capability{abi.CapPublish}},
	"fire":      {Grant: []abi.Capability{abi.CapFire}},
	"versioned": {},
	"scooter":   {Grant: []abi.Capability{abi.CapPublish, abi.CapKV}}}

func startDaemon(t testing.TB, cfg Config) *testDaemon {
	t.Helper()
	if cfg.Plugins == nil {
		cfg.Plugins = grants
	}
	cacheInto(t, cfg.DataDir)
	td := &testDaemon{logs: &syncbuf.Buffer{}}
	var out io.Writer = td.logs
	if testing.Verbose() {
		out = io.MultiWriter(td.logs, os.Stderr)
	}
	d, err := New(cfg, hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Debug}))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	td.Daemon = d
	t.Cleanup(func() { d.Stop() })
	if cancel, err := d.Watch(func(e *bus.Event) {
		td.mu.Lock()
		td.seen = append(td.seen, e)
		td.mu.Unlock()
	}); err == nil {
		t.Cleanup(cancel)
	}
	return td
}

func (td *testDaemon) send(t testing.TB, js string) {
	t.Helper()
	e, err := td.Decoder().Decode([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if err := td.Publish(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// topics lists the topics of events seen on the bus that start with prefix.
func (td *testDaemon) topics(prefix string) []string {
	td.mu.Lock()
	defer td.mu.Unlock()
	var out []string
	for _, e := range td.seen {
		if strings.HasPrefix(e.Topic, prefix) {
			out = append(out, e.Topic)
		}
	}
	return out
}

// waitTimer waits until the virtual clock's next callback is d away: a
// durable step's timer is armed just after its record is written, and an
// Advance between the two would leave the timer behind.
func waitTimer(t testing.TB, clk interface{ Next() (time.Duration, bool) }, d time.Duration) {
	t.Helper()
	eventually(t, "a timer "+d.String()+" away", func() bool { n, ok := clk.Next(); return ok && n == d })
}

// eventually polls cond for up to 20s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
