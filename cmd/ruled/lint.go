package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/catalog"
	"github.com/ruled-dev/ruled/host/config"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/wasm"
)

const lintUsage = `Usage: ruled lint <rules-dir> [--plugins dir] [--json]
       ruled lint --config ruled.yaml [<rules-dir>] [--plugins dir]

Checks every rule file (*.yaml, *.yml) of the directory and prints each
problem as "file:line:col: message (hint: ...)", every one in one pass.
Without --plugins it checks the format only. With it, it also checks each
plugin function a rule names against the directory's modules (*.wasm, named
by file name), and has each plugin configure each config a rule gives it, as
the daemon would at start, so a config the plugin refuses is reported where
it is written. Exits 1 if there is any problem.

With --config (the file ruled run is given) or --grant, it checks what the
daemon will grant too: the file's own mistakes, its rules and plugins
directories when none is given here, and each plugin loaded with the grant
the file and --grant give it, so a plugin the daemon would refuse for want
of a capability is a problem here, and a grant to a plugin the directory
lacks (a misspelt name) a warning. Without them, every capability is
granted: a plugin is checked before its operator decides what to grant.

Flags:
`

func cmdLint(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("lint", stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), lintUsage); fs.PrintDefaults() }
	pluginDir := fs.String("plugins", "", "directory of plugin modules (*.wasm) to check functions and configs against")
	asJSON := fs.Bool("json", false, "print the problems as JSON")
	configFile := fs.String("config", "", "the daemon's config file: check it, take its rules and plugins directories, and load each plugin with the grant it gives")
	var grantFlags []string
	fs.Func("grant", "`plugin=cap[,cap]`: a grant as ruled run's --grant, added to the config's (repeatable); each plugin is loaded with its grant", func(s string) error {
		grantFlags = append(grantFlags, s)
		return nil
	})
	cacheDir := cacheFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	var grants *config.Config // nil: every capability granted
	if *configFile != "" || len(grantFlags) > 0 {
		grants = &config.Config{}
		if *configFile != "" {
			if err := config.Load(*configFile, grants); err != nil {
				return fmt.Errorf("lint: the config file:\n%w", err)
			}
		}
		for _, g := range grantFlags {
			if err := grants.ParseGrant(g); err != nil {
				return usageError("--grant: " + err.Error())
			}
		}
		if len(pos) == 0 && grants.RulesDir != "" {
			pos = []string{grants.RulesDir}
		}
		if *pluginDir == "" {
			*pluginDir = grants.PluginsDir
		}
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageError("lint needs one rules directory (or --config naming one)")
	}
	problems, set, err := checkRules(ctx, pos[0], *pluginDir, cacheDir(), grants)
	if err != nil {
		return err
	}
	// Warnings do not fail lint: what they name is allowed, and bounded
	// (a loop of rules stops at the hop limit). Printed with the problems.
	warnings := rules.Warnings(set)
	if grants != nil && *pluginDir != "" {
		warnings = append(warnings, unknownGrants(grants, *pluginDir)...)
	}
	if err := printProblems(stdout, append(append([]*rules.Error(nil), problems...), warnings...), set, *asJSON); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("lint: %s; %s", plural(len(problems), "problem"), plural(set.Len(), "valid rule"))
	}
	if !*asJSON {
		if n := len(set.Windows()); n > 0 {
			fmt.Fprintf(stdout, "%s, %s, no problems\n", plural(set.Len(), "valid rule"), plural(n, "window"))
		} else {
			fmt.Fprintf(stdout, "%s, no problems\n", plural(set.Len(), "valid rule"))
		}
	}
	return nil
}

// checkRules checks the rule files of rulesDir, against the modules of
// pluginDir unless it is "" (format only), every problem at once, sorted.
// Each module is loaded with the grant grants gives it, or every
// capability when grants is nil.
func checkRules(ctx context.Context, rulesDir, pluginDir, cacheDir string, grants *config.Config) ([]*rules.Error, *rules.Set, error) {
	var problems []*rules.Error
	var cat rules.Catalog // a nil interface, not a nil *pluginSet: no plugins means format only
	if pluginDir != "" {
		rt, err := wasm.NewRuntime(ctx, wasm.Config{CacheDir: cacheDir})
		if err != nil {
			return nil, nil, err
		}
		defer rt.Close(ctx)
		plugins, errs, err := loadPlugins(ctx, rt, pluginDir, grants)
		if err != nil {
			return nil, nil, err
		}
		problems, cat = errs, plugins
	}
	set, errs := rules.LoadDir(rulesDir, cat)
	problems = append(problems, errs...)
	rules.SortErrors(problems)
	return problems, set, nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// pluginSet is lint's rules.Catalog: the modules of a directory by name.
// It also checks configs, so a config the plugin refuses is reported at its
// with:.
type pluginSet struct {
	ctx     context.Context // the command's, for the configure calls parsing makes
	mods    map[string]*wasm.Module
	checked map[string]error  // by function and config: a config is configured once
	failed  map[string]string // why a module of the directory did not load, by name
}

var (
	_ rules.FunctionLister = (*pluginSet)(nil)
	_ rules.ConfigChecker  = (*pluginSet)(nil)
	_ rules.LoadReporter   = (*pluginSet)(nil)
)

// NotLoaded says why a module did not load, so that a rule naming it says
// so rather than "no plugin".
func (s *pluginSet) NotLoaded(plugin string) (string, bool) {
	why, ok := s.failed[plugin]
	return why, ok
}

func (s *pluginSet) Function(plugin, function string) (abi.Kind, bool) {
	m, ok := s.mods[plugin]
	if !ok {
		return 0, false
	}
	return m.Kind(function)
}

func (s *pluginSet) Plugins() []string { return slices.Sorted(maps.Keys(s.mods)) }

func (s *pluginSet) Functions(plugin string) []string {
	var names []string
	if m, ok := s.mods[plugin]; ok {
		for _, f := range m.Descriptor().Functions {
			names = append(names, f.Name)
		}
	}
	return names
}

// loadPlugins loads every module of dir. Without grants, lint grants every
// capability: it only configures, and an operator lints before deciding
// what to grant; with them, each module gets what the daemon would give
// it. A module that does not load is a problem, not a reason to stop.
func loadPlugins(ctx context.Context, rt *wasm.Runtime, dir string, grants *config.Config) (*pluginSet, []*rules.Error, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.wasm"))
	if err == nil && len(paths) == 0 {
		_, err = os.Stat(dir)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("lint: plugins: %w", err)
	}
	s := &pluginSet{ctx: ctx, mods: map[string]*wasm.Module{}, checked: map[string]error{}, failed: map[string]string{}}
	var problems []*rules.Error
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".wasm")
		grant := abi.Capabilities
		if grants != nil {
			grant = grants.Plugins[name].Grant
		}
		m, err := rt.LoadFile(ctx, path, wasm.Options{Grant: grant, Limits: wasm.Limits{Instances: 1}})
		if err != nil {
			err = catalog.GrantHint(name, err)
			problems = append(problems, &rules.Error{Pos: rules.Pos{File: path}, Msg: err.Error()})
			s.failed[name] = strings.TrimPrefix(err.Error(), "wasm: plugin "+name+": ")
			continue
		}
		s.mods[m.Name()] = m
	}
	return s, problems, nil
}

// unknownGrants are the warnings for plugins grants configures that dir
// has no file of: a misspelt name whose grant goes nowhere (the daemon
// warns of them at start too).
func unknownGrants(grants *config.Config, dir string) []*rules.Error {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.wasm"))
	var names []string
	for _, p := range paths {
		names = append(names, strings.TrimSuffix(filepath.Base(p), ".wasm"))
	}
	var out []*rules.Error
	for _, name := range slices.Sorted(maps.Keys(grants.Plugins)) {
		if slices.Contains(names, name) {
			continue
		}
		e := &rules.Error{Pos: originPos(grants.Origins["plugin."+name+".grant"]),
			Msg: fmt.Sprintf("warning: plugin %s is configured, but %s has no %s.wasm", name, dir, name)}
		if m := rules.Suggest(name, names); m != "" {
			e.Hint = "did you mean " + m + "?"
		}
		out = append(out, e)
	}
	return out
}

// originPos is a setting's origin (config.Config.Origins) as a position:
// the file's line and column, or "--grant" as it is.
func originPos(origin string) rules.Pos {
	if path, line, col, ok := config.FileOrigin(origin); ok {
		return rules.Pos{File: path, Line: line, Col: col}
	}
	return rules.Pos{File: origin}
}

// CheckConfig has the plugin configure the config, as the daemon will at
// start, and says why it refused.
func (s *pluginSet) CheckConfig(plugin, function string, config []byte) error {
	key := plugin + "." + function + "\x00" + string(config)
	if err, ok := s.checked[key]; ok {
		return err
	}
	err := s.configure(plugin, function, config)
	s.checked[key] = err
	return err
}

func (s *pluginSet) configure(plugin, function string, config []byte) error {
	m := s.mods[plugin]
	h, err := m.Configure(s.ctx, function, config)
	if err == nil {
		h.Close()
		return nil
	}
	e := &rules.Error{Msg: fmt.Sprintf("%s.%s cannot be configured: %v", plugin, function, err)}
	var ce *wasm.CallError
	if errors.As(err, &ce) && ce.Cause == wasm.CauseConfig {
		e = rules.ConfigRefused(plugin, function, ce.Text)
	}
	for _, f := range m.Descriptor().Functions {
		if f.Name == function && f.Example != "" {
			e.Hint = "a config it takes: " + f.Example
		}
	}
	return e
}

// jsonProblem is a problem in --json output.
type jsonProblem struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
	Rule string `json:"rule,omitempty"`
	Msg  string `json:"msg"`
	Hint string `json:"hint,omitempty"`
}

func printProblems(w io.Writer, problems []*rules.Error, set *rules.Set, asJSON bool) error {
	if !asJSON {
		var b strings.Builder
		for _, p := range problems {
			b.WriteString(p.Error() + "\n")
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	out := struct {
		Rules    []string      `json:"rules"`
		Problems []jsonProblem `json:"problems"`
	}{Rules: []string{}, Problems: []jsonProblem{}}
	for _, r := range set.Rules() {
		out.Rules = append(out.Rules, r.ID)
	}
	for _, p := range problems {
		out.Problems = append(out.Problems, jsonProblem{p.Pos.File, p.Pos.Line, p.Pos.Col, p.Rule, p.Msg, p.Hint})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
