package ruletest

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/wasm"
)

// Plugin is one compiled plugin loaded on its own, outside any daemon,
// with a host kept in memory: the compiled twin of the Go SDK's
// ruled.Native, with the same fields and methods, so one table test can
// run a plugin's functions natively and in the sandbox and show they
// agree (examples/scooter/plugin/plugin_test.go).
type Plugin struct {
	// Now is what the plugin's now() answers. default: the process clock.
	Now time.Time
	// Info is the call's header; its zero fields get "test" values, as
	// ruled.Native gives them.
	Info abi.CallInfo
	// KV is the plugin's key-value store.
	KV map[string][]byte
	// Published are the events the plugin published, in order.
	Published []Published
	// Fired are the rules the plugin fired (Topic is the rule).
	Fired []Published

	t  T
	rt *wasm.Runtime
	m  *wasm.Module
	mu sync.Mutex
}

// Published is an event a plugin published, or a run it fired.
type Published struct {
	Topic   string
	Payload []byte
}

// LoadPlugin loads a plugin (a .wasm file or a Go package directory, as in
// Options.Plugins) granted what its functions declare, as `ruled call`
// does. It is closed with the test.
func LoadPlugin(t T, src string) *Plugin {
	t.Helper()
	path := src
	if !strings.HasSuffix(src, ".wasm") {
		var err error
		if path, err = BuildGo(src); err != nil {
			t.Fatalf("%v", err)
		}
	}
	p := &Plugin{t: t, KV: map[string][]byte{}}
	ctx := context.Background()
	rt, err := wasm.NewRuntime(ctx, wasm.Config{CacheDir: CacheDir("wazero"), Clock: p.now,
		Services: wasm.Services{Publisher: p, KV: p, Firer: p}})
	if err != nil {
		t.Fatalf("ruletest: %v", err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	probe, err := rt.LoadFile(ctx, path, wasm.Options{Grant: abi.Capabilities, Limits: wasm.Limits{Instances: 1}})
	if err != nil {
		t.Fatalf("ruletest: plugin %s: %v", src, err)
	}
	grant := probe.Declared()
	probe.Close(ctx)
	if p.m, err = rt.LoadFile(ctx, path, wasm.Options{Grant: grant, Limits: wasm.Limits{Timeout: 5 * time.Second, Instances: 1}}); err != nil {
		t.Fatalf("ruletest: plugin %s: %v", src, err)
	}
	p.rt = rt
	return p
}

// When configures function with configJSON ("" is {}) and asks it about
// eventJSON.
func (p *Plugin) When(function, configJSON, eventJSON string) (bool, error) {
	h, c, err := p.prepare(function, configJSON, eventJSON)
	if err != nil {
		return false, err
	}
	defer h.Close()
	return h.When(context.Background(), c)
}

// Act configures function with configJSON ("" is {}) and runs it on
// eventJSON, returning its result.
func (p *Plugin) Act(function, configJSON, eventJSON string) ([]byte, error) {
	h, c, err := p.prepare(function, configJSON, eventJSON)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return h.Act(context.Background(), c)
}

func (p *Plugin) prepare(function, configJSON, eventJSON string) (*wasm.Handle, *wasm.Call, error) {
	var cfg []byte
	if configJSON != "" {
		cfg = []byte(configJSON)
	}
	h, err := p.m.Configure(context.Background(), function, cfg)
	if err != nil {
		return nil, nil, err
	}
	info := p.Info
	for ptr, def := range map[*string]string{&info.Rule: "test", &info.Step: "test", &info.Run: "test-run", &info.Key: "test-run/test/0"} {
		if *ptr == "" {
			*ptr = def
		}
	}
	c, err := wasm.NewCall(info, []byte(eventJSON))
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return h, c, nil
}

func (p *Plugin) now() time.Time {
	if p.Now.IsZero() {
		return time.Now()
	}
	return p.Now
}

// Publish implements wasm.Publisher.
func (p *Plugin) Publish(_ context.Context, _ wasm.Origin, topic string, payload []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Published = append(p.Published, Published{topic, append([]byte(nil), payload...)})
	return nil
}

// Fire implements wasm.Firer.
func (p *Plugin) Fire(_ context.Context, _ wasm.Origin, rule string, payload []byte) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Fired = append(p.Fired, Published{rule, append([]byte(nil), payload...)})
	return "test-fired-run", nil
}

// Get implements wasm.KV.
func (p *Plugin) Get(_ context.Context, _, key string) ([]byte, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.KV[key]
	return v, ok, nil
}

// Set implements wasm.KV.
func (p *Plugin) Set(_ context.Context, _, key string, value []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.KV[key] = append([]byte(nil), value...)
	return nil
}

// Delete implements wasm.KV.
func (p *Plugin) Delete(_ context.Context, _, key string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.KV, key)
	return nil
}
