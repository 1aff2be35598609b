package daemon

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
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/regular"
)

const keepHistory = 20

// plugin is one loaded plugin: a slot whose module hot reload replaces.
type plugin struct {
	name, file string
	slot       *wasm.Slot

	mu       sync.Mutex // the watcher writes these; Status reads them
	history  []api.ReloadEvent
	failures int       // consecutive failed reloads
	retryAt  time.Time // a failing file is not tried again before this
}

// note records a reload attempt and, for a failure, when to try the file
// again.
func (p *plugin) note(ev api.ReloadEvent, first time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.history = append(p.history, ev)
	if len(p.history) > keepHistory {
		p.history = p.history[len(p.history)-keepHistory:]
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
func (p *plugin) snapshot() ([]api.ReloadEvent, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := append([]api.ReloadEvent(nil), p.history...)
	if n := len(h); n > 0 && !h[n-1].OK {
		return h, h[n-1].Error
	}
	return h, ""
}

// catalog is the loaded plugins as the rule parser sees them. It configures
// each distinct (plugin, function, config) once, when the parser checks the
// config, and keeps the handle for every rule that uses that config. Handles
// are configured through the plugin's slot, so they follow hot reloads.
type catalog struct {
	ctx     context.Context
	mu      sync.Mutex
	plugins map[string]*plugin
	handles map[string]*wasm.Handle
	// notLoaded reports why a plugin's file did not load (rules.LoadReporter).
	notLoaded func(name string) (why string, ok bool)
}

func newCatalog(ctx context.Context) *catalog {
	return &catalog{ctx: ctx, plugins: map[string]*plugin{}, handles: map[string]*wasm.Handle{}}
}

func handleKey(plugin, fn string, config []byte) string {
	return plugin + "\x00" + fn + "\x00" + string(config)
}

func (c *catalog) plugin(name string) *plugin {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.plugins[name]
}

func (c *catalog) module(name string) *wasm.Module {
	if p := c.plugin(name); p != nil {
		return p.slot.Module()
	}
	return nil
}

func (c *catalog) Function(plugin, fn string) (abi.Kind, bool) {
	m := c.module(plugin)
	if m == nil {
		return 0, false
	}
	return m.Kind(fn)
}

func (c *catalog) NotLoaded(name string) (string, bool) {
	if c.notLoaded == nil {
		return "", false
	}
	return c.notLoaded(name)
}

func (c *catalog) Plugins() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.plugins))
	for n := range c.plugins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (c *catalog) Functions(plugin string) []string {
	m := c.module(plugin)
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
// reported at the rule's `with:`, and keeps the handle.
func (c *catalog) CheckConfig(plugin, fn string, config []byte) error {
	_, err := c.configure(plugin, fn, config)
	return err
}

func (c *catalog) configure(plugin, fn string, config []byte) (*wasm.Handle, error) {
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
		return nil, configError(plugin, fn, err)
	}
	c.mu.Lock()
	c.handles[k] = h
	c.mu.Unlock()
	return h, nil
}

// configError is a plugin's refusal of a config as the rule parser
// reports it (rules.ConfigRefused).
func configError(plugin, fn string, err error) error {
	var ce *wasm.CallError
	if errors.As(err, &ce) && ce.Cause == wasm.CauseConfig {
		return rules.ConfigRefused(plugin, fn, ce.Text)
	}
	return err
}

// handle returns the configured handle for a call the parser checked.
func (c *catalog) handle(call *rules.Call) (*wasm.Handle, error) {
	return c.configure(call.Plugin, call.Function, call.With)
}

var (
	_ rules.Catalog        = (*catalog)(nil)
	_ rules.FunctionLister = (*catalog)(nil)
	_ rules.ConfigChecker  = (*catalog)(nil)
	_ rules.LoadReporter   = (*catalog)(nil)
)

// pluginName is a plugin's name from its file: the base name without .wasm.
func pluginName(path string) string { return strings.TrimSuffix(filepath.Base(path), ".wasm") }

// loadPlugins loads every *.wasm in the plugins directory, at start.
func (d *Daemon) loadPlugins() {
	ents, err := os.ReadDir(d.cfg.PluginsDir)
	if err != nil {
		d.log.Error("plugins directory unreadable", "dir", d.cfg.PluginsDir, "error", err)
		return
	}
	// In parallel, a few at a time: a plugin's start-up may take up to its
	// InitTimeout (a start section or _initialize that spins), and must
	// not hold the others' back. Start waits for them all.
	sem := make(chan struct{}, max(runtime.GOMAXPROCS(0), 2))
	var wg sync.WaitGroup
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".wasm") {
			wg.Add(1)
			sem <- struct{}{}
			go func(path string) {
				defer func() { <-sem; wg.Done() }()
				d.loadPlugin(path, false)
			}(filepath.Join(d.cfg.PluginsDir, e.Name()))
		}
	}
	wg.Wait()
}

// loadPlugin loads or reloads one plugin file as a transaction: compile
// (through the cache), handshake, describe, check its imports against its
// grant, start a first instance (all in wasm.Runtime.Load), check that every
// loaded rule using the plugin still finds its functions and that their
// configs still configure; only then swap it in. Calls in flight finish on
// the old module, which drains and closes. On any failure the last good
// version keeps serving, and the failure is in the plugin's history (and
// the log, and Status). It reports whether the plugin changed.
func (d *Daemon) loadPlugin(path string, reload bool) bool {
	name := pluginName(path)
	start := time.Now()
	b, err := regular.ReadFile(path, wasm.MaxModuleSize)
	if err != nil {
		d.log.Warn("plugin file unreadable", "file", path, "error", err)
		return false
	}
	digest := store.Digest(b)
	p := d.cat.plugin(name)
	if p != nil && p.slot.Module().Digest() == digest {
		return false // the same bytes: a touch, or a rename of equal content
	}
	ev := api.ReloadEvent{At: start, Digest: digest}
	m, err := d.rt.Load(d.ctx, b, wasm.Options{Name: name, Grant: d.cfg.Plugins[name].Grant, Limits: d.cfg.limitsFor(name)})
	if err == nil {
		if err = d.checkRulesOn(name, m); err != nil {
			m.Close(context.Background())
		}
	}
	ev.Took = time.Since(start).Round(time.Microsecond).String()
	if err != nil {
		err = grantHint(name, err)
		ev.Error = err.Error()
		d.met.PluginReloaded(false)
		if p != nil {
			d.log.Error("plugin not reloaded; the last good version keeps serving", "file", path, "digest", digest[:12], "error", err)
		} else {
			d.log.Error("plugin not loaded", "file", path, "digest", digest[:12], "error", err)
		}
		if p == nil {
			p = &plugin{name: name, file: path}
			d.failed.Lock()
			d.failed.m[name] = p
			d.failed.Unlock()
		}
		p.note(ev, d.cfg.ReloadBackoff)
		return false
	}
	ev.OK = true
	if p == nil {
		p = d.takeFailed(name)
		if p == nil {
			p = &plugin{name: name, file: path}
		}
		p.slot = wasm.NewSlot(m)
		d.cat.mu.Lock()
		d.cat.plugins[name] = p
		d.cat.mu.Unlock()
	} else {
		old := p.slot.Swap(m)
		old.Close(context.Background()) // drains: calls in flight finish on it
	}
	p.note(ev, d.cfg.ReloadBackoff)
	// Kept by content once serving: a step parked on it from now on may
	// need it after a restart. Nothing can have parked on it before the
	// swap, so writing after it keeps the file off the swap's path.
	if err := d.mods.put(digest, b); err != nil {
		d.log.Warn("cannot keep the module in the module store; a step pinned to it will not survive a restart", "digest", digest[:12], "error", err)
	}
	verb := "plugin loaded"
	if reload {
		verb = "plugin reloaded"
		d.met.PluginReloaded(true)
	}
	d.log.Info(verb, "plugin", name, "digest", digest[:12], "abi", abi.VersionString(m.ABIVersion()),
		"compile", m.Timings().Compile, "start", m.Timings().Instantiate, "took", ev.Took)
	return true
}

// grantHint is a load error that says how to grant what it lacks, when
// that is why the module was refused.
func grantHint(name string, err error) error {
	var ng *wasm.NotGrantedError
	if !errors.As(err, &ng) {
		return err
	}
	return fmt.Errorf("%w: add --grant %s=%s, or in the config: plugin: {%s: {grant: [%s]}}", err, name, ng.Capability, name, ng.Capability)
}

// notLoaded reports why a plugin whose file is in the plugins directory
// did not load, for the rules' check (rules.LoadReporter).
func (d *Daemon) notLoaded(name string) (string, bool) {
	d.failed.Lock()
	p := d.failed.m[name]
	d.failed.Unlock()
	if p == nil {
		return "", false
	}
	_, why := p.snapshot()
	return why, true
}

// takeFailed returns (and forgets) the record of a plugin that never loaded.
func (d *Daemon) takeFailed(name string) *plugin {
	d.failed.Lock()
	defer d.failed.Unlock()
	p := d.failed.m[name]
	delete(d.failed.m, name)
	return p
}

// checkRulesOn refuses a module that would break a loaded rule: every
// function a rule calls on the plugin must exist with the right kind and
// accept the rule's config. It checks by preparing the handles the rules
// use on the new module (wasm.Handle.Prepare), which also warms it: the
// first calls after the swap find their config already in place.
func (d *Daemon) checkRulesOn(plugin string, m *wasm.Module) error {
	set := d.ruleSnap()
	if set == nil {
		return nil
	}
	for _, s := range set.seqs {
		for _, c := range calls(s.Rule) {
			if c.call.Plugin != plugin {
				continue
			}
			want := abi.KindAction
			if c.condition {
				want = abi.KindCondition
			}
			if k, ok := m.Kind(c.call.Function); !ok || k != want {
				return fmt.Errorf("it would break rule %s at %s: no %s %q", s.Rule.ID, c.call.Pos, want, c.call.Function)
			}
			h, err := d.cat.handle(c.call)
			if err == nil {
				err = h.Prepare(d.ctx, m)
			}
			if err != nil {
				return fmt.Errorf("it would break rule %s at %s: %w", s.Rule.ID, c.call.WithPos, configError(plugin, c.call.Function, err))
			}
		}
	}
	return nil
}

type ruleCall struct {
	call      *rules.Call
	condition bool
}

// calls lists every plugin call a rule makes.
func calls(r *rules.Rule) []ruleCall {
	var out []ruleCall
	if r.When != nil {
		out = append(out, ruleCall{r.When, true})
	}
	for i := range r.Steps {
		st := &r.Steps[i]
		out = append(out, ruleCall{&st.Do, false})
		if st.When != nil {
			out = append(out, ruleCall{st.When, true})
		}
	}
	return out
}

// backoff is how long a plugin file that failed n times in a row waits
// before the watcher tries it again: a deployer writing a file in pieces
// gets a second chance soon, a file that is simply broken is not recompiled
// on every event.
func backoff(first time.Duration, n int) time.Duration {
	d := first << min(n-1, 6)
	return min(d, time.Minute)
}
