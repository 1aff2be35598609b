package daemon

import "github.com/ruled-dev/ruled/host/reload"

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
