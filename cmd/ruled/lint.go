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
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/wasm"
)

const lintUsage = `Usage: ruled lint <rules-dir> [--plugins dir] [--json]

Checks every rule file (*.yaml, *.yml) of the directory and prints each
problem as "file:line:col: message (hint: ...)", every one in one pass.
Without --plugins it checks the format only. With it, it also checks each
plugin function a rule names against the directory's modules (*.wasm, named
by file name), and has each plugin configure each config a rule gives it, as
the daemon would at start, so a config the plugin refuses is reported where
it is written. Exits 1 if there is any problem.

Flags:
`

func cmdLint(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("lint", stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), lintUsage); fs.PrintDefaults() }
	pluginDir := fs.String("plugins", "", "directory of plugin modules (*.wasm) to check functions and configs against")
	asJSON := fs.Bool("json", false, "print the problems as JSON")
	cacheDir := cacheFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usageError("lint needs one rules directory")
	}
	problems, set, err := checkRules(ctx, pos[0], *pluginDir, cacheDir())
	if err != nil {
		return err
	}
	// Warnings do not fail lint: what they name is allowed, and bounded
	// (a loop of rules stops at the hop limit). Printed with the problems.
	warnings := rules.Warnings(set)
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
func checkRules(ctx context.Context, rulesDir, pluginDir, cacheDir string) ([]*rules.Error, *rules.Set, error) {
	var problems []*rules.Error
	var cat rules.Catalog // a nil interface, not a nil *pluginSet: no plugins means format only
	if pluginDir != "" {
		rt, err := wasm.NewRuntime(ctx, wasm.Config{CacheDir: cacheDir})
		if err != nil {
			return nil, nil, err
		}
		defer rt.Close(ctx)
		plugins, errs, err := loadPlugins(ctx, rt, pluginDir)
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
	checked map[string]error // by function and config: a config is configured once
}

var (
	_ rules.FunctionLister = (*pluginSet)(nil)
	_ rules.ConfigChecker  = (*pluginSet)(nil)
)

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

// loadPlugins loads every module of dir. Lint grants every capability: it
// only configures, and an operator lints before deciding what to grant. A
// module that does not load is a problem, not a reason to stop.
func loadPlugins(ctx context.Context, rt *wasm.Runtime, dir string) (*pluginSet, []*rules.Error, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.wasm"))
	if err == nil && len(paths) == 0 {
		_, err = os.Stat(dir)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("lint: plugins: %w", err)
	}
	s := &pluginSet{ctx: ctx, mods: map[string]*wasm.Module{}, checked: map[string]error{}}
	var problems []*rules.Error
	for _, path := range paths {
		m, err := rt.LoadFile(ctx, path, wasm.Options{Grant: abi.Capabilities, Limits: wasm.Limits{Instances: 1}})
		if err != nil {
			problems = append(problems, &rules.Error{Pos: rules.Pos{File: path}, Msg: err.Error()})
			continue
		}
		s.mods[m.Name()] = m
	}
	return s, problems, nil
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
