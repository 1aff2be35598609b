package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/ingest"
	"github.com/ruled-dev/ruled/host/outbound"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/wasm"
)

const callUsage = `Usage: ruled call <module.wasm> <function> [flags]

Calls one condition or action of a plugin once and prints what it answered:
"true" or "false" for a condition, the result for an action. publish and
fire are printed to stderr instead of reaching a bus; kv lives for the call.
http is sent for real, to the hosts --http-allow names (none by default),
under the daemon's rules (outbound http in docs/config.md).

Flags:
`

func cmdCall(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("call", stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), callUsage); fs.PrintDefaults() }
	var configs multi
	eventFile := fs.String("event", "", "the trigger event, a JSON file (- for stdin). default: {}")
	fs.Var(&configs, "config", "a config value `key=value` (repeatable; value is JSON if it parses, else a string; dots in key nest)")
	configFile := fs.String("config-file", "", "the config, a JSON file")
	timeout := fs.Duration("timeout", time.Second, "the call's deadline")
	pages := fs.Uint("memory-pages", 512, "the plugin's memory cap in 64 KiB pages")
	fuel := fs.Int64("fuel", 0, "the call's fuel budget (0: unlimited, the deadline still applies)")
	grant := fs.String("grant", "declared", "capabilities to grant: a comma list of publish,kv,fire,http, \"declared\" for what the module declares, or \"none\"")
	allow := fs.String("http-allow", "", "hosts the plugin may send http requests to, a comma list (api.example.com, *.example.com, host:port)")
	allowPrivate := fs.String("http-allow-private", "", "hosts the plugin may reach on a private, loopback or link-local address, by name, a comma list")
	interp := fs.Bool("interpreter", false, "use wazero's interpreter instead of its compiler")
	cacheDir := cacheFlags(fs)
	rule := fs.String("rule", "call", "the rule id the call claims to serve")
	level := fs.String("log-level", "info", "plugin log level: trace, debug, info, warn, error")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return usageError("call needs a module and a function")
	}
	config, err := buildConfig(*configFile, configs)
	if err != nil {
		return err
	}
	event := []byte("{}")
	if *eventFile != "" {
		if event, err = readInput(*eventFile, stdin); err != nil {
			return err
		}
	}
	svc := &cliServices{out: stderr}
	log := hclog.New(&hclog.LoggerOptions{Name: "ruled", Output: stderr, Level: hclog.LevelFromString(*level)})
	policy := outbound.Policy{Hosts: commaList(*allow), Private: commaList(*allowPrivate)}
	web := outbound.New(outbound.Config{Policy: func(string) (outbound.Policy, bool) { return policy, true }, Log: log.Named("http")})
	rt, err := wasm.NewRuntime(ctx, wasm.Config{
		CacheDir: cacheDir(), Interpreter: *interp, Logger: log,
		Services: wasm.Services{Publisher: svc, KV: svc, Firer: svc, HTTP: web},
	})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	caps, err := grants(ctx, rt, *grant, pos[0])
	if err != nil {
		return err
	}
	m, err := rt.LoadFile(ctx, pos[0], wasm.Options{Grant: caps, Limits: wasm.Limits{
		Timeout: *timeout, MemoryPages: uint32(*pages), Fuel: *fuel, Instances: 1}})
	if err != nil {
		return err
	}
	h, err := m.Configure(ctx, pos[1], config)
	if err != nil {
		return err
	}
	c, err := newCall(*rule, event)
	if err != nil {
		return fmt.Errorf("event: %w", err)
	}
	if h.Kind() == abi.KindCondition {
		ok, err := h.When(ctx, c)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, ok)
		return nil
	}
	out, err := h.Act(ctx, c)
	if err != nil {
		return err
	}
	stdout.Write(out)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		fmt.Fprintln(stdout)
	}
	return nil
}

// grants resolves --grant. "declared" reads the module's description
// first: `ruled call` is an author's tool, so it grants what the plugin says
// it needs, and the load that follows still refuses a module that imports
// more than it declares. The daemon grants nothing unless the operator says
// so.
func grants(ctx context.Context, rt *wasm.Runtime, flag, path string) ([]abi.Capability, error) {
	switch flag {
	case "none", "":
		return nil, nil
	case "declared":
		m, err := rt.LoadFile(ctx, path, wasm.Options{Grant: abi.Capabilities, Limits: wasm.Limits{Instances: 1}})
		if err != nil {
			return nil, err
		}
		defer m.Close(ctx)
		return m.Declared(), nil
	}
	var caps []abi.Capability
	for _, s := range strings.Split(flag, ",") {
		c := abi.Capability(strings.TrimSpace(s))
		if !slices.Contains(abi.Capabilities, c) {
			return nil, usageError(fmt.Sprintf("--grant: unknown capability %q (want one of %v, \"declared\" or \"none\")", c, abi.Capabilities))
		}
		caps = append(caps, c)
	}
	return caps, nil
}

// commaList is a flag's comma list, its items trimmed, none empty.
func commaList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func readInput(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// buildConfig merges --config-file and --config pairs into one JSON object.
func buildConfig(file string, pairs []string) ([]byte, error) {
	cfg := map[string]any{}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usageError(fmt.Sprintf("--config %q: want key=value", p))
		}
		var val any = v
		var js any
		if json.Unmarshal([]byte(v), &js) == nil {
			val = js
		}
		parts := strings.Split(k, ".")
		m := cfg
		for _, part := range parts[:len(parts)-1] {
			next, ok := m[part].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[part] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = val
	}
	return json.Marshal(cfg)
}

// newCall builds the call input: the topic from the event's "topic", its
// time from "time" (RFC 3339) or now.
func newCall(rule string, event []byte) (*wasm.Call, error) {
	var head struct {
		Topic string `json:"topic"`
		Time  string `json:"time"`
	}
	json.Unmarshal(event, &head) // best effort: the view builder reports bad JSON
	at := time.Now()
	if t, err := time.Parse(time.RFC3339Nano, head.Time); err == nil {
		at = t
	}
	if head.Topic == "" {
		head.Topic = "call"
	}
	run := fmt.Sprintf("call-%d", time.Now().UnixNano())
	return wasm.NewCall(abi.CallInfo{Time: at.UnixNano(), Topic: head.Topic, Rule: rule, Step: "call",
		Run: run, Key: run + "/call/0"}, event)
}

// cliServices prints what a plugin asks the host to do, and keeps kv in
// memory for the one call.
type cliServices struct {
	mu  sync.Mutex
	out io.Writer
	kv  map[string][]byte
	n   int
}

// Publish prints what the call publishes, refused as the daemon refuses
// it: a topic ingest would not take (bus.CheckTopic: empty segments —
// a template naming a field the event lacks —, wildcards, ruled.),
// a payload that is not a JSON object.
func (s *cliServices) Publish(_ context.Context, _ wasm.Origin, topic string, payload []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := bus.CheckTopic(topic); err != nil {
		err = ingest.GuestError(topic, err) // the daemon's words and status
		fmt.Fprintf(s.out, "publish refused: %v\n", err)
		return err
	}
	if t := bytes.TrimLeft(payload, " \t\r\n"); !json.Valid(payload) || len(t) == 0 || t[0] != '{' {
		err := fmt.Errorf("%w: the payload is not a JSON object", wasm.ErrBadInput)
		fmt.Fprintf(s.out, "publish refused: %v\n", err)
		return err
	}
	fmt.Fprintf(s.out, "publish %s %s\n", wasm.CleanText(topic), wasm.CleanText(string(payload)))
	return nil
}

func (s *cliServices) Fire(_ context.Context, _ wasm.Origin, rule string, payload []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	id := fmt.Sprintf("call-fire-%d", s.n)
	fmt.Fprintf(s.out, "fire %s %s -> %s\n", wasm.CleanText(rule), wasm.CleanText(string(payload)), id)
	return id, nil
}

func (s *cliServices) Get(_ context.Context, scope, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[scope+"\x00"+key]
	return v, ok, nil
}

// Set keeps the daemon's default quota (store.DefaultKVKeys keys and
// store.DefaultKVBytes of keys and values a plugin), so a plugin tried
// with ruled call meets the refusal it would meet in the daemon.
func (s *cliServices) Set(_ context.Context, scope, key string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv == nil {
		s.kv = map[string][]byte{}
	}
	k := scope + "\x00" + key
	keys, size := 0, int64(0)
	for kk, vv := range s.kv {
		if strings.HasPrefix(kk, scope+"\x00") && kk != k {
			keys++
			size += int64(len(kk)-len(scope)-1) + int64(len(vv))
		}
	}
	if keys+1 > store.DefaultKVKeys {
		return fmt.Errorf("kv %q: quota of %d keys reached: %w", scope, store.DefaultKVKeys, wasm.ErrTooLarge)
	}
	if size+int64(len(key)+len(v)) > store.DefaultKVBytes {
		return fmt.Errorf("kv %q: quota of %d bytes exceeded: %w", scope, store.DefaultKVBytes, wasm.ErrTooLarge)
	}
	s.kv[k] = v
	return nil
}

func (s *cliServices) Delete(_ context.Context, scope, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.kv, scope+"\x00"+key)
	return nil
}
