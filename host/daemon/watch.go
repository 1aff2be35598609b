package daemon

import (
	"path/filepath"

	"github.com/ruled-dev/ruled/host/reload"
)

// DefaultDebounce is Config.ReloadDebounce's default (reload.DefaultDebounce).
const DefaultDebounce = reload.DefaultDebounce

// watch reloads what changes in the rules and plugins directories
// (reload.Watcher → engine.Engine.Reload); Stop closes the watcher and
// waits for its goroutine.
func (d *Daemon) watch() error {
	w, err := reload.Watch([]string{d.cfg.RulesDir, d.cfg.PluginsDir}, d.cfg.ReloadDebounce, d.eng.Reload, d.log)
	if err != nil {
		return err
	}
	d.closers = append(d.closers, w.Close)
	return nil
}

// ReloadFiles reloads the given plugin and rule files now, as the watcher
// would on their change events: for tests and tools that run with Watch
// off (sdk/ruletest). It returns once the new plugins and rules serve.
func (d *Daemon) ReloadFiles(paths ...string) {
	changed := map[string]bool{}
	for _, p := range paths {
		changed[p] = true
	}
	d.eng.Reload(changed)
}

// ReloadAll reads every plugin and rule file again, as if each had
// changed (SIGHUP, `systemctl reload`): what did not change is kept as it
// is (a plugin of the same digest, a rule of the same definition).
// Deployed, it reads the deployment in Redis again.
func (d *Daemon) ReloadAll() {
	if d.deployed != nil {
		if r := d.refresher.Load(); r != nil {
			r.Kick()
		}
		return
	}
	changed := map[string]bool{filepath.Join(d.cfg.RulesDir, "*.yaml"): true} // "a file in the rules directory"
	if m, err := filepath.Glob(filepath.Join(d.cfg.PluginsDir, "*.wasm")); err == nil {
		for _, p := range m {
			changed[p] = true
		}
	}
	d.eng.Reload(changed)
}
