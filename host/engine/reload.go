package engine

import (
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/host/ruleset"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/trust"
)

// LoadRules reads the rules directory and publishes a new rule set
// (ruleset.Loader.Load); a removed rule's live runs end, each with a log
// line, and the rules' states follow. A change is announced
// (Config.Announce) once the reload lock is free: a bus that is slow to
// refuse must not hold up the next reload.
func (e *Engine) LoadRules() {
	if ch := e.reloadRules(); ch.Any() && e.cfg.Announce != nil {
		e.cfg.Announce(ch.Added, ch.Changed, ch.Removed)
	}
}

// reloadRules is LoadRules under the reload lock; it returns what changed.
func (e *Engine) reloadRules() ruleset.Change {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	defer e.changed.Add(1)
	ch := e.rules.Load()
	e.syncSchedules()
	e.syncWindows()
	if ch.First {
		return ch // New reads the states of the rules it found
	}
	for _, id := range ch.Removed {
		if e.runner != nil {
			e.runner.EndRule(id, seq.DropRuleGone)
		}
	}
	if e.runner != nil {
		// Records a start kept for rules refused then: taken up by the
		// rules mended, dropped for the rules gone, kept for the others.
		e.runner.ReplayAbsent(e.rules.Current().Sequences(), e.cfg.ReplayWindow)
	}
	if ch.NewProblems {
		e.met.RulesReloaded(false)
	} else if ch.Any() {
		e.met.RulesReloaded(true)
	}
	e.syncTasks(e.rules.Current(), ch.Removed)
	return ch
}

// Reload applies a batch of changed files (reload.Watcher's): plugins
// first (a rule may need the new version), then the rules, once. It
// returns the plugin files it put off because they are backing off after
// failures, with when to retry.
func (e *Engine) Reload(changed map[string]bool) map[string]time.Time {
	var plugins []string
	rulesChanged := false
	seen := map[string]bool{}
	for path := range changed {
		// A module's signature changed: the module is read again.
		if p, ok := strings.CutSuffix(path, ".wasm"+trust.SigSuffix); ok {
			path = p + ".wasm"
		}
		switch {
		case strings.HasSuffix(path, ".wasm") && sameDir(path, e.cfg.PluginsDir):
			if !seen[path] {
				seen[path] = true
				plugins = append(plugins, path)
			}
		case sameDir(path, e.cfg.RulesDir):
			rulesChanged = true
		}
	}
	sort.Strings(plugins)
	pluginsChanged, later := e.cat.Reload(plugins)
	if len(plugins) > 0 {
		e.changed.Add(1) // a reload's history, failed or not
	}
	if rulesChanged || pluginsChanged {
		// A changed plugin changes the digests its rules' steps carry, and
		// a new plugin may make an invalid rule valid.
		e.LoadRules()
		e.Collect()
	}
	return later
}

func sameDir(path, dir string) bool {
	a, _ := filepath.Abs(filepath.Dir(path))
	b, _ := filepath.Abs(dir)
	return a == b
}

// references counts what needs each digest: the plugins' current modules,
// live waiting runs, pending records.
func (e *Engine) references() (current map[string]string, pinned map[string]*status.PinnedBy) {
	current = e.cat.Current()
	pinned = map[string]*status.PinnedBy{}
	get := func(dg string) *status.PinnedBy {
		if pinned[dg] == nil {
			pinned[dg] = &status.PinnedBy{}
		}
		return pinned[dg]
	}
	for dg, n := range e.runner.WaitingDigests() {
		get(dg).Waiting += n
	}
	for dg, n := range e.pending.Digests() {
		get(dg).Records += n
	}
	return current, pinned
}

// Collect removes the modules nothing references any more
// (catalog.Catalog.Collect): neither a plugin's serving module, nor a live
// waiting run's, nor a pending record's.
func (e *Engine) Collect() {
	if !e.pending.Known() {
		// A record the store could not read may pin a module: collect
		// nothing until a load succeeds.
		e.log.Warn("not removing unused modules: the waiting steps' records could not all be read")
		return
	}
	_, pinned := e.references()
	e.cat.Collect(func(dg string) bool { _, ok := pinned[dg]; return ok })
}
