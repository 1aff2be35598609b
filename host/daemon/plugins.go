package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/wasm"
)

// Problem is a file that did not load, for Status.
type Problem struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// catalog is the loaded plugins as the rule parser sees them. It configures
// each distinct (plugin, function, config) once, when the parser checks the
// config, and keeps the handle for the rule that asked (handles are
// per-config: two rules with the same config share one).
type catalog struct {
	ctx     context.Context
	modules map[string]*wasm.Module
	handles map[string]*wasm.Handle
}

func handleKey(plugin, fn string, config []byte) string {
	return plugin + "\x00" + fn + "\x00" + string(config)
}

// loadPlugins loads every *.wasm in dir with its grant and limits.
func (d *Daemon) loadPlugins(ctx context.Context) (*catalog, []Problem) {
	cat := &catalog{ctx: ctx, modules: map[string]*wasm.Module{}, handles: map[string]*wasm.Handle{}}
	var probs []Problem
	ents, err := os.ReadDir(d.cfg.PluginsDir)
	if err != nil {
		return cat, []Problem{{d.cfg.PluginsDir, err.Error()}}
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".wasm") {
			continue
		}
		path := filepath.Join(d.cfg.PluginsDir, e.Name())
		name := strings.TrimSuffix(e.Name(), ".wasm")
		m, err := d.rt.LoadFile(ctx, path, wasm.Options{Name: name,
			Grant: d.cfg.Plugins[name].Grant, Limits: d.cfg.limitsFor(name)})
		if err != nil {
			probs = append(probs, Problem{path, err.Error()})
			d.log.Error("plugin not loaded", "file", path, "error", err)
			continue
		}
		cat.modules[name] = m
		d.log.Info("plugin loaded", "plugin", name, "digest", m.Digest()[:12], "abi", abi.VersionString(m.ABIVersion()),
			"compile", m.Timings().Compile, "start", m.Timings().Instantiate)
	}
	return cat, probs
}

func (c *catalog) Function(plugin, fn string) (abi.Kind, bool) {
	m := c.modules[plugin]
	if m == nil {
		return 0, false
	}
	return m.Kind(fn)
}

func (c *catalog) Plugins() []string {
	out := make([]string, 0, len(c.modules))
	for n := range c.modules {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (c *catalog) Functions(plugin string) []string {
	m := c.modules[plugin]
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
	k := handleKey(plugin, fn, config)
	if _, ok := c.handles[k]; ok {
		return nil
	}
	h, err := c.modules[plugin].Configure(c.ctx, fn, config)
	if err != nil {
		var ce *wasm.CallError
		if errors.As(err, &ce) && ce.Cause == wasm.CauseConfig {
			text, _, _ := strings.Cut(ce.Text, "\n")
			return &rules.Error{Msg: plugin + "." + fn + " refused its config: " + text}
		}
		return err
	}
	c.handles[k] = h
	return nil
}

// handle returns the configured handle for a call the parser checked.
func (c *catalog) handle(call *rules.Call) (*wasm.Handle, error) {
	if h, ok := c.handles[handleKey(call.Plugin, call.Function, call.With)]; ok {
		return h, nil
	}
	if err := c.CheckConfig(call.Plugin, call.Function, call.With); err != nil {
		return nil, err
	}
	return c.handles[handleKey(call.Plugin, call.Function, call.With)], nil
}

var (
	_ rules.Catalog        = (*catalog)(nil)
	_ rules.FunctionLister = (*catalog)(nil)
	_ rules.ConfigChecker  = (*catalog)(nil)
)
