package wasm

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// interpreter runs every test on wazero's interpreter (the path 32-bit arm
// devices take): RULED_WASM_INTERPRETER=1 go test ./host/wasm/.
var interpreter = os.Getenv("RULED_WASM_INTERPRETER") == "1"

// services is a hand-written stand-in for the daemon's bus, kv store and
// rule starter.
type services struct {
	mu        sync.Mutex
	published []published
	kv        map[string]string
	fired     []string
	kvDown    bool
}

type published struct {
	from           Origin
	topic, payload string
}

func (s *services) Publish(_ context.Context, from Origin, topic string, payload []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	from.Note("published", topic, string(payload)) // as ingest does, with the event it made
	from.Info, from.call = nil, nil
	s.published = append(s.published, published{from, topic, string(payload)})
	return nil
}

func (s *services) Get(_ context.Context, scope, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kvDown {
		return nil, false, fmt.Errorf("store down")
	}
	v, ok := s.kv[scope+"/"+key]
	return []byte(v), ok, nil
}

func (s *services) Set(_ context.Context, scope, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kvDown {
		return fmt.Errorf("store down")
	}
	if len(value) > 1000 {
		return ErrTooLarge
	}
	if s.kv == nil {
		s.kv = map[string]string{}
	}
	s.kv[scope+"/"+key] = string(value)
	return nil
}

func (s *services) Delete(_ context.Context, scope, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.kv, scope+"/"+key)
	return nil
}

// Do answers an outbound request with its method, URL, idempotency key
// and body echoed back under an X-Answer of 42; a URL with "refused" in it
// is refused as outbound refuses a host not allowed.
func (s *services) Do(_ context.Context, plugin string, req abi.HTTPRequest) (abi.HTTPResponse, error) {
	if strings.Contains(req.URL, "refused") {
		return abi.HTTPResponse{}, refusal{}
	}
	key := ""
	for _, h := range req.Header {
		if h[0] == "Idempotency-Key" {
			key = h[1]
		}
	}
	return abi.HTTPResponse{Status: 200, Header: [][2]string{{"X-Answer", "42"}},
		Body: []byte(req.Method + " " + req.URL + " " + key + " " + string(req.Body))}, nil
}

func (s *services) Fire(_ context.Context, from Origin, rule string, payload []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rule == "missing" {
		return "", ErrNotFound
	}
	s.fired = append(s.fired, rule+" "+string(payload))
	return fmt.Sprintf("exec-%d-from-%s", len(s.fired), from.Info.Run), nil
}

// logSink collects log lines for assertions.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(string(p)))
	return len(p), nil
}

func (l *logSink) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// count is how many lines contain sub.
func (l *logSink) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// tail is the last n lines.
func (l *logSink) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines[max(len(l.lines)-n, 0):], "\n")
}

type env struct {
	rt   *Runtime
	svc  *services
	logs *logSink
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{svc: &services{}, logs: &logSink{}}
	log := hclog.New(&hclog.LoggerOptions{Output: e.logs, Level: hclog.Trace})
	rt, err := NewRuntime(context.Background(), Config{
		CacheDir:    plugintest.CacheDir(),
		Interpreter: interpreter,
		Logger:      log,
		Services:    Services{Publisher: e.svc, KV: e.svc, Firer: e.svc, HTTP: e.svc},
		Clock:       func() time.Time { return time.Unix(1_700_000_000, 0) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	e.rt = rt
	return e
}

func (e *env) load(t testing.TB, path string, o Options) *Module {
	t.Helper()
	m, err := e.rt.LoadFile(context.Background(), path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func configure(t testing.TB, m *Module, fn, config string) *Handle {
	t.Helper()
	h, err := m.Configure(context.Background(), fn, []byte(config))
	if err != nil {
		t.Fatalf("configure %s %s: %v", fn, config, err)
	}
	return h
}

const sampleEvent = `{"id":"evt-000123","type":"temperature","source":"sensor/kitchen","time":"2024-05-01T12:34:56Z","data":{"value":23.5,"unit":"C","battery":87},"tags":["home","kitchen"],"seq":123456}`

func call(t testing.TB, event string) *Call {
	t.Helper()
	c, err := NewCall(abi.CallInfo{
		Pass: 2, Time: 1_714_567_296_000_000_000, Topic: "sensors.kitchen", Rule: "r1",
		Step: "s1", Run: "run-9", Key: "run-9/s1/2",
	}, []byte(event))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// settle waits for goroutines to return to a baseline (timers' goroutines
// and finalizers take a moment).
func settle(t testing.TB, base int) int {
	t.Helper()
	var n int
	for i := 0; i < 100; i++ {
		runtime.GC()
		n = runtime.NumGoroutine()
		if n <= base {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

func goPlugin(t testing.TB, dir string) string { return plugintest.Go(t, dir) }

// asPlugin returns a committed AssemblyScript module.
func asPlugin(t testing.TB, name string) string {
	return plugintest.File(t, "sdk/assemblyscript/build/"+name+".wasm")
}
