package daemon

import (
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long the watcher waits after the last change to a
// file before reloading: editors and deployers write a file in several
// operations (truncate, write, rename over), and a reload per operation
// would compile half a module.
const DefaultDebounce = 250 * time.Millisecond

// watch starts the one goroutine that watches the rules and plugins
// directories (directories, not files: a file replaced by rename is a new
// file) and reloads what changed. Stop closes the watcher, which ends the
// goroutine, and waits for it.
func (d *Daemon) watch() error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	for _, dir := range []string{d.cfg.RulesDir, d.cfg.PluginsDir} {
		if err := w.Add(dir); err != nil {
			w.Close()
			return err
		}
	}
	done := make(chan struct{})
	d.closers = append(d.closers, func() error {
		err := w.Close()
		<-done
		return err
	})
	go func() {
		defer close(done)
		d.watchLoop(w)
	}()
	return nil
}

func (d *Daemon) watchLoop(w *fsnotify.Watcher) {
	debounce := d.cfg.ReloadDebounce
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	changed := map[string]bool{}
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if relevant(ev.Name) {
				changed[ev.Name] = true
				timer.Reset(debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			d.log.Warn("file watcher", "error", err)
		case <-timer.C:
			var later map[string]time.Time
			background(func() { later = d.reload(changed) })
			changed = map[string]bool{}
			// Files that failed recently wait out their backoff: keep them
			// and come back when it is over.
			var next time.Duration
			for path, at := range later {
				changed[path] = true
				if wait := time.Until(at); next == 0 || wait < next {
					next = max(wait, debounce)
				}
			}
			if next > 0 {
				timer.Reset(next)
			}
		}
	}
}

func relevant(path string) bool {
	base := filepath.Base(path)
	if strings.HasPrefix(base, ".") {
		return false
	}
	return strings.HasSuffix(base, ".wasm") || strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml")
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
	later := map[string]time.Time{}
	pluginsChanged := false
	for _, path := range plugins {
		name := pluginName(path)
		p := d.cat.plugin(name)
		if p == nil {
			d.failed.Lock()
			p = d.failed.m[name]
			d.failed.Unlock()
		}
		if p != nil {
			if at, wait := p.backingOff(); wait {
				later[path] = at
				continue
			}
		}
		if d.loadPlugin(path, true) {
			pluginsChanged = true
		}
	}
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
