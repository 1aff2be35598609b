package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/trust"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/regular"
)

// Config is what a Catalog is built from.
type Config struct {
	// Runtime compiles and runs the modules.
	Runtime *wasm.Runtime
	// Dir is the plugins directory: a plugin's name is its file's base
	// name without ".wasm".
	Dir string
	// ModuleDir keeps modules by content (<digest>.wasm), for steps pinned
	// to a digest.
	ModuleDir string
	// Options are the grant and limits a plugin's module loads with.
	Options func(name string) wasm.Options
	// Backoff is the first wait before a file that failed to load is
	// tried again; it doubles with each failure in a row, up to a minute.
	Backoff time.Duration
	// Check refuses a module that would break a loaded rule (nil: none
	// does); it runs before the swap, so a refused module never serves.
	Check func(plugin string, m *wasm.Module) error
	// Reloaded is told of each hot reload's outcome (metrics); nil: no one.
	Reloaded func(ok bool)
	// Blobs, when set, holds modules the module store lacks (deployed
	// modules in Redis): in a fleet, a step may have been scheduled on
	// another process.
	Blobs BlobSource
	// Trust, when set, checks each module against its signature file
	// (trust.Gate) where the operator requires signatures: a module
	// refused is not loaded, and a module store's copy refused is not run
	// for the step pinned to it.
	Trust Verifier
	Log   hclog.Logger
}

// Verifier checks a file against its signature (trust.Gate), and forgets
// one that is gone.
type Verifier interface {
	Required(place string) bool
	Check(place, path string, content, sig []byte) (key string, err error)
	CheckRead(place, path string, content, sig []byte, readErr error) (key string, err error)
	Forget(path string)
}

// SigSource is a BlobSource that also holds modules' signatures
// (store.RedisDeploy: the signature deployed beside the module).
type SigSource interface {
	Signature(ctx context.Context, plugin, digest string) ([]byte, error)
}

// BlobSource is where a module missing from the module store may be
// (store.RedisDeploy), checked against its digest.
type BlobSource interface {
	Blob(ctx context.Context, digest string) ([]byte, error)
}

// BlobTimeout bounds one read of a module from the BlobSource.
const BlobTimeout = 30 * time.Second

// keepHistory is how many reload attempts a plugin's history keeps.
const keepHistory = 20

// plugin is one plugin: a slot whose module hot reload replaces (nil for a
// file that never loaded).
type plugin struct {
	name, file string
	slot       *wasm.Slot
	signer     string // the key that signed the serving module; "" unchecked

	mu       sync.Mutex // the watcher writes these; Status reads them
	history  []status.ReloadEvent
	failures int       // consecutive failed reloads
	retryAt  time.Time // a failing file is not tried again before this
}

// note records a reload attempt and, for a failure, when to try the file
// again.
func (p *plugin) note(ev status.ReloadEvent, first time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.history = append(p.history, ev)
	if len(p.history) > keepHistory {
		p.history = p.history[len(p.history)-keepHistory:]
	}
	if ev.Untrusted {
		// Checking a signature costs a hash, not a compile: a file
		// refused for its signature is tried again as soon as it or its
		// signature changes, with no backoff (a deployer writes the module
		// and then its signature).
		return
	}
	if ev.OK {
		p.failures, p.retryAt = 0, time.Time{}
	} else {
		p.failures++
		p.retryAt = time.Now().Add(backoff(first, p.failures))
	}
}

// backingOff reports when the file may be tried again, if not yet.
func (p *plugin) backingOff() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retryAt, time.Now().Before(p.retryAt)
}

// snapshot returns the history and the last error, if the last attempt failed.
func (p *plugin) snapshot() ([]status.ReloadEvent, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := append([]status.ReloadEvent(nil), p.history...)
	if n := len(h); n > 0 && !h[n-1].OK {
		return h, h[n-1].Error
	}
	return h, ""
}

// Catalog is the loaded plugins, as the rule parser sees them (rules.Catalog
// and its optional checks) and as the engine calls them. It configures each
// distinct (plugin, function, config) once, when the parser checks the
// config, and keeps the handle for every rule that uses that config.
// Handles are configured through the plugin's slot, so they follow hot
// reloads.
type Catalog struct {
	// gen counts the loads attempted, their outcome whatever it was
	// (Generation).
	gen  atomic.Uint64
	cfg  Config
	ctx  context.Context // for calls made outside any request
	log  hclog.Logger
	mods *modStore

	mu      sync.Mutex
	plugins map[string]*plugin
	handles map[string]*wasm.Handle
	failed  map[string]*plugin // files that never loaded
}

// New returns an empty catalog; LoadDir fills it.
func New(ctx context.Context, cfg Config) *Catalog {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Options == nil {
		cfg.Options = func(name string) wasm.Options { return wasm.Options{Name: name} }
	}
	return &Catalog{cfg: cfg, ctx: ctx, log: cfg.Log, mods: newModStore(cfg.ModuleDir),
		plugins: map[string]*plugin{}, handles: map[string]*wasm.Handle{}, failed: map[string]*plugin{}}
}

// Name is a plugin's name from its file: the base name without .wasm.
func Name(path string) string { return strings.TrimSuffix(filepath.Base(path), ".wasm") }

func handleKey(plugin, fn string, config []byte) string {
	return plugin + "\x00" + fn + "\x00" + string(config)
}

func (c *Catalog) plugin(name string) *plugin {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.plugins[name]
}

// Module is the module a loaded plugin serves now; nil when none is loaded.
func (c *Catalog) Module(name string) *wasm.Module {
	if p := c.plugin(name); p != nil {
		return p.slot.Module()
	}
	return nil
}

// Function implements rules.Catalog.
func (c *Catalog) Function(plugin, fn string) (abi.Kind, bool) {
	m := c.Module(plugin)
	if m == nil {
		return 0, false
	}
	return m.Kind(fn)
}

// NotLoaded reports why a plugin whose file is in the plugins directory
// did not load (rules.LoadReporter).
func (c *Catalog) NotLoaded(name string) (string, bool) {
	c.mu.Lock()
	p := c.failed[name]
	c.mu.Unlock()
	if p == nil {
		return "", false
	}
	_, why := p.snapshot()
	return why, true
}

// Plugins lists the loaded plugins' names, sorted (rules.FunctionLister).
func (c *Catalog) Plugins() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.plugins))
	for n := range c.plugins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Functions lists a loaded plugin's functions (rules.FunctionLister).
func (c *Catalog) Functions(plugin string) []string {
	m := c.Module(plugin)
	if m == nil {
		return nil
	}
	var out []string
	for _, f := range m.Descriptor().Functions {
		out = append(out, f.Name)
	}
	return out
}

// CheckConfig configures the function, so a config the plugin refuses is
// reported at the rule's `with:`, and keeps the handle (rules.ConfigChecker).
func (c *Catalog) CheckConfig(plugin, fn string, config []byte) error {
	_, err := c.Configure(plugin, fn, config)
	return err
}

// Configure returns the handle of a plugin's function with config,
// configuring it the first time it is asked for.
func (c *Catalog) Configure(plugin, fn string, config []byte) (*wasm.Handle, error) {
	k := handleKey(plugin, fn, config)
	c.mu.Lock()
	h, ok := c.handles[k]
	p := c.plugins[plugin]
	c.mu.Unlock()
	if ok {
		return h, nil
	}
	if p == nil {
		return nil, fmt.Errorf("no plugin %q", plugin)
	}
	h, err := p.slot.Configure(c.ctx, fn, config)
	if err != nil {
		return nil, ConfigError(plugin, fn, err)
	}
	c.mu.Lock()
	c.handles[k] = h
	c.mu.Unlock()
	return h, nil
}

// Handle returns the configured handle for a call the parser checked.
func (c *Catalog) Handle(call *rules.Call) (*wasm.Handle, error) {
	return c.Configure(call.Plugin, call.Function, call.With)
}

// ConfigError is a plugin's refusal of a config as the rule parser
// reports it (rules.ConfigRefused); any other error as it is.
func ConfigError(plugin, fn string, err error) error {
	var ce *wasm.CallError
	if errors.As(err, &ce) && ce.Cause == wasm.CauseConfig {
		return rules.ConfigRefused(plugin, fn, ce.Text)
	}
	return err
}

var (
	_ rules.Catalog        = (*Catalog)(nil)
	_ rules.FunctionLister = (*Catalog)(nil)
	_ rules.ConfigChecker  = (*Catalog)(nil)
	_ rules.LoadReporter   = (*Catalog)(nil)
)

// LoadDir loads every *.wasm in the plugins directory, at start.
func (c *Catalog) LoadDir() {
	ents, err := os.ReadDir(c.cfg.Dir)
	if err != nil {
		c.log.Error("plugins directory unreadable", "dir", c.cfg.Dir, "error", err)
		return
	}
	// In parallel: compiling a few at a time (as many as the cores), and
	// each plugin's start-up (a start section, _initialize) beside the
	// others, since it may take up to its own InitTimeout and must not
	// hold the rest back: five spinning starts, two at a time, held
	// readiness 30 s (issue 38). LoadDir waits for them all: at most the
	// longest start-up deadline after the last compile.
	sem := make(chan struct{}, max(runtime.GOMAXPROCS(0), 2))
	var wg sync.WaitGroup
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".wasm") {
			wg.Add(1)
			sem <- struct{}{}
			go func(path string) {
				defer wg.Done()
				var once sync.Once
				compiled := func() { once.Do(func() { <-sem }) }
				defer compiled()
				c.load(path, false, compiled)
			}(filepath.Join(c.cfg.Dir, e.Name()))
		}
	}
	wg.Wait()
}

// Reload loads the plugin files given, in order, skipping those backing
// off after failures: it reports whether any plugin changed, and the files
// it put off with when to try them again.
func (c *Catalog) Reload(paths []string) (changed bool, later map[string]time.Time) {
	later = map[string]time.Time{}
	for _, path := range paths {
		name := Name(path)
		c.mu.Lock()
		p := c.plugins[name]
		if p == nil {
			p = c.failed[name]
		}
		c.mu.Unlock()
		if p != nil {
			if at, wait := p.backingOff(); wait {
				later[path] = at
				continue
			}
		}
		if c.Load(path, true) {
			changed = true
		}
	}
	return changed, later
}

// Load loads or reloads one plugin file as a transaction: compile (through
// the cache), handshake, describe, check its imports against its grant,
// start a first instance (all in wasm.Runtime.Load), check that every
// loaded rule using the plugin still finds its functions and that their
// configs still configure (Config.Check); only then swap it in. Calls in
// flight finish on the old module, which drains and closes. On any failure
// the last good version keeps serving, and the failure is in the plugin's
// history (and the log, and Status). It reports whether the plugin changed.
func (c *Catalog) Load(path string, reload bool) bool { return c.load(path, reload, nil) }

// load is Load, calling compiled (when set) once the module is compiled
// (wasm.Options.Compiled).
func (c *Catalog) load(path string, reload bool, compiled func()) bool {
	name := Name(path)
	defer c.gen.Add(1)
	start := time.Now()
	b, err := regular.ReadFile(path, wasm.MaxModuleSize)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && c.cfg.Trust != nil {
			c.cfg.Trust.Forget(path) // gone: refused no more
		}
		c.log.Warn("plugin file unreadable", "file", path, "error", err)
		return false
	}
	digest := store.Digest(b)
	p := c.plugin(name)
	checked := c.cfg.Trust != nil && c.cfg.Trust.Required(trust.PlacePlugins)
	sig, sigErr := trust.ReadSig(path)
	if p != nil && p.slot.Module().Digest() == digest {
		if checked {
			// The serving module is these bytes, checked when they loaded;
			// the check says what the file beside them says now.
			_, _ = c.cfg.Trust.CheckRead(trust.PlacePlugins, path, b, sig, sigErr)
		}
		if _, failed := p.snapshot(); failed != "" {
			// A file that failed to load was put back as the module that
			// serves: the failure is over, and says so (status, the log).
			ev := status.ReloadEvent{At: start, Digest: digest, OK: true, Took: time.Since(start).Round(time.Microsecond).String()}
			p.note(ev, c.cfg.Backoff)
			c.log.Info("plugin file is the serving version again", "plugin", name, "digest", digest[:12])
		}
		return false // the same bytes: a touch, or a rename of equal content
	}
	ev := status.ReloadEvent{At: start, Digest: digest}
	var signer string
	if checked {
		if signer, err = c.cfg.Trust.CheckRead(trust.PlacePlugins, path, b, sig, sigErr); err != nil {
			return c.refuse(p, name, path, ev, err)
		}
	}
	o := c.cfg.Options(name)
	o.Compiled = compiled
	m, err := c.cfg.Runtime.Load(c.ctx, b, o)
	if err == nil && c.cfg.Check != nil {
		if err = c.cfg.Check(name, m); err != nil {
			m.Close(context.Background())
		}
	}
	ev.Took = time.Since(start).Round(time.Microsecond).String()
	if err != nil {
		err = GrantHint(name, err)
		ev.Error = err.Error()
		c.reloaded(false)
		if p != nil {
			c.log.Error("plugin not reloaded; the last good version keeps serving", "file", path, "digest", digest[:12], "error", err)
		} else {
			c.log.Error("plugin not loaded", "file", path, "digest", digest[:12], "error", err)
		}
		if p == nil {
			p = c.failedOne(name, path)
		}
		p.note(ev, c.cfg.Backoff)
		return false
	}
	ev.OK = true
	if p == nil {
		c.mu.Lock()
		p = c.failed[name]
		delete(c.failed, name)
		if p == nil {
			p = &plugin{name: name, file: path}
		}
		p.slot = wasm.NewSlot(m)
		p.signer = signer
		c.plugins[name] = p
		c.mu.Unlock()
		p.note(ev, c.cfg.Backoff)
	} else {
		old := p.slot.Swap(m)
		p.mu.Lock()
		p.signer = signer
		p.mu.Unlock()
		// Noted as it serves, before the drain: a drain under load took
		// half a second, and the next version's load, seen serving
		// meanwhile, was noted first — the history ended on the older
		// one (TestReloadUnderLoad, once in CI).
		p.note(ev, c.cfg.Backoff)
		old.Close(context.Background()) // drains: calls in flight finish on it
	}
	// Kept by content once serving: a step parked on it from now on may
	// need it after a restart. Nothing can have parked on it before the
	// swap, so writing after it keeps the file off the swap's path.
	if err := c.mods.put(digest, b, sig); err != nil {
		c.log.Warn("cannot keep the module in the module store; a step pinned to it will not survive a restart", "digest", digest[:12], "error", err)
	}
	verb := "plugin loaded"
	if reload {
		verb = "plugin reloaded"
		c.reloaded(true)
	}
	c.log.Info(verb, "plugin", name, "digest", digest[:12], "abi", abi.VersionString(m.ABIVersion()),
		"compile", m.Timings().Compile, "start", m.Timings().Instantiate, "took", ev.Took)
	return true
}

// refuse records a module its signature did not let load: in the plugin's
// history (no backoff) and the log; the last good version keeps serving.
func (c *Catalog) refuse(p *plugin, name, path string, ev status.ReloadEvent, err error) bool {
	ev.Untrusted = true
	ev.Took = time.Since(ev.At).Round(time.Microsecond).String()
	ev.Error = "not trusted: " + err.Error()
	c.reloaded(false)
	if p != nil {
		c.log.Error("plugin refused: its signature does not check; the last good version keeps serving", "file", path, "digest", ev.Digest[:12], "error", err)
	} else {
		c.log.Error("plugin refused: its signature does not check", "file", path, "digest", ev.Digest[:12], "error", err)
		p = c.failedOne(name, path)
	}
	p.note(ev, c.cfg.Backoff)
	return false
}

// failedOne is the record of a file that never loaded: one a name, so its
// failures in a row (and its backoff) add up.
func (c *Catalog) failedOne(name, path string) *plugin {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.failed[name]
	if p == nil {
		p = &plugin{name: name, file: path}
		c.failed[name] = p
	}
	return p
}

// Generation changes whenever a plugin file was loaded, refused or
// failed: what a rule file's parse said of its plugins ("plugin publish
// did not load") may say otherwise since (ruleset reads such a file
// again).
func (c *Catalog) Generation() uint64 { return c.gen.Load() }

func (c *Catalog) reloaded(ok bool) {
	if c.cfg.Reloaded != nil {
		c.cfg.Reloaded(ok)
	}
}

// GrantHint is a load error that says how to grant what it lacks, when
// that is why the module was refused (ruled lint says it as the daemon).
func GrantHint(name string, err error) error {
	var ng *wasm.NotGrantedError
	if !errors.As(err, &ng) {
		return err
	}
	return fmt.Errorf("%w: add --grant %s=%s, or in the config: plugin: {%s: {grant: [%s]}}", err, name, ng.Capability, name, ng.Capability)
}

// backoff is how long a plugin file that failed n times in a row waits
// before the watcher tries it again: a deployer writing a file in pieces
// gets a second chance soon, a file that is simply broken is not recompiled
// on every event.
func backoff(first time.Duration, n int) time.Duration {
	d := first << min(n-1, 6)
	return min(d, time.Minute)
}
