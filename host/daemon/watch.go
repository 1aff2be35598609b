package daemon

import (
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/host/reload"
)

// DefaultDebounce is Config.ReloadDebounce's default (reload.DefaultDebounce).
const DefaultDebounce = reload.DefaultDebounce

// watch reloads what changes in the rules and plugins directories
// (reload.Watcher); Stop closes the watcher and waits for its goroutine.
func (d *Daemon) watch() error {
	w, err := reload.Watch([]string{d.cfg.RulesDir, d.cfg.PluginsDir}, d.cfg.ReloadDebounce, d.reload, d.log)
	if err != nil {
		return err
	}
	d.closers = append(d.closers, w.Close)
	return nil
}

// reload applies a batch of changed files: plugins first (a rule may need
// the new version), then the rules, once. It returns the plugin files it
// put off because they are backing off after failures, with when to retry.
func (d *Daemon) reload(changed map[string]bool) map[string]time.Time {
	var plugins []string
	rulesChanged := false
	for path := range changed {
		switch {
		case strings.HasSuffix(path, ".wasm") && sameDir(path, d.cfg.PluginsDir):
			plugins = append(plugins, path)
		case sameDir(path, d.cfg.RulesDir):
			rulesChanged = true
		}
	}
	sort.Strings(plugins)
	pluginsChanged, later := d.cat.Reload(plugins)
	if rulesChanged || pluginsChanged {
		// A changed plugin changes the digests its rules' steps carry, and
		// a new plugin may make an invalid rule valid.
		d.loadRules()
		d.collect()
	}
	return later
}

func sameDir(path, dir string) bool {
	a, _ := filepath.Abs(filepath.Dir(path))
	b, _ := filepath.Abs(dir)
	return a == b
}

// ReloadFiles reloads the given plugin and rule files now, as the watcher
// would on their change events: for tests and tools that run with Watch
// off (sdk/ruletest). It returns once the new plugins and rules serve.
func (d *Daemon) ReloadFiles(paths ...string) {
	changed := map[string]bool{}
	for _, p := range paths {
		changed[p] = true
	}
	d.reload(changed)
}
