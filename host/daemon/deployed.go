package daemon

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/regular"
)

// Deployed mode (Config.Deployed): the rules and plugins are what `ruled
// deploy` last put in Redis. The process writes them under
// DataDir/deployed/{rules,plugins} and loads them from there with the same
// code that loads an operator's directories — one path for parsing, error
// positions, plugin transactions and hot reload — so the copy is a cache
// the process keeps, never one an operator maintains. A start that cannot
// read the deployment (Redis opened but the read failed or timed out)
// serves the deployment it kept.

// deploySource is what deployed mode reads (store.RedisDeploy).
type deploySource interface {
	Current(ctx context.Context) (*store.Deployment, error)
	Blob(ctx context.Context, digest string) ([]byte, error)
}

var _ deploySource = (*store.RedisDeploy)(nil)

// deployTimeout bounds one read of the deployment.
const deployTimeout = 30 * time.Second

// syncDeployed writes the current deployment's files under the deployed
// directories and removes files it no longer names; it returns the paths
// it changed. Every blob is fetched (and checked against its digest)
// before the first file is written, so a fetch that fails leaves the last
// deployment whole on disk.
func (d *Daemon) syncDeployed(ctx context.Context, src deploySource) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, deployTimeout)
	defer cancel()
	dep, err := src.Current(ctx)
	if err != nil {
		return nil, err
	}
	if dep == nil {
		if d.deployment.Load() == nil {
			d.log.Warn("nothing deployed yet: serving no rules until `ruled deploy` puts some in Redis")
		}
		return nil, nil
	}
	if cur := d.deployment.Load(); cur != nil && cur.Version == dep.Version {
		return nil, nil
	}
	root := filepath.Dir(d.cfg.RulesDir)
	want := map[string][]byte{}
	for _, name := range slices.Sorted(maps.Keys(dep.Files)) {
		path := filepath.Join(root, filepath.FromSlash(name))
		if b, err := os.ReadFile(path); err == nil && store.Digest(b) == dep.Files[name] {
			continue
		}
		b, err := src.Blob(ctx, dep.Files[name])
		if err != nil {
			return nil, fmt.Errorf("deployment %d: %s: %w", dep.Version, name, err)
		}
		want[path] = b
	}
	changed := map[string]bool{}
	for _, path := range slices.Sorted(maps.Keys(want)) {
		if err := regular.WriteFile(path, want[path]); err != nil {
			return changed, fmt.Errorf("deployment %d: %w", dep.Version, err)
		}
		changed[path] = true
	}
	for _, dir := range []string{d.cfg.RulesDir, d.cfg.PluginsDir} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			name := filepath.Base(dir) + "/" + e.Name()
			if _, keep := dep.Files[name]; keep || e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
				continue
			}
			if os.Remove(filepath.Join(dir, e.Name())) == nil {
				changed[filepath.Join(dir, e.Name())] = true
			}
		}
	}
	d.deployment.Store(dep)
	d.log.Info("deployment read", "version", dep.Version, "by", dep.By, "at", dep.At, "files", len(dep.Files), "changed", len(changed))
	return changed, nil
}

// refreshDeployed reads the deployment again and loads what changed:
// plugins first, then the rules. A Redis that does not answer costs a log
// line; what is loaded keeps serving.
func (d *Daemon) refreshDeployed() {
	changed, err := d.syncDeployed(context.Background(), d.redis.Deploy())
	if err != nil {
		d.log.Warn("could not read the deployment; what is loaded keeps serving", "error", err)
	}
	if len(changed) > 0 {
		d.eng.Reload(changed)
	} else {
		d.eng.Collect()
	}
}

// startDeployed creates the deployed directories and writes what Redis
// holds into them, or leaves what the last start kept if the read fails.
func (d *Daemon) startDeployed(ctx context.Context) error {
	for _, dir := range []string{d.cfg.RulesDir, d.cfg.PluginsDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
	}
	if _, err := d.syncDeployed(ctx, d.redis.Deploy()); err != nil {
		d.log.Error("could not read the deployment; starting on the one this process kept", "dir", filepath.Dir(d.cfg.RulesDir), "error", err)
	}
	return nil
}
