package reload

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/trust"
	"github.com/ruled-dev/ruled/internal/regular"
)

// Deployed mode: the rules and plugins are what `ruled deploy` last put in
// Redis. A Deployed writes them under its two directories and the caller
// loads them from there with the same code that loads an operator's
// directories — one path for parsing, error positions, plugin
// transactions and hot reload — so the copy is a cache the process keeps,
// never one an operator maintains. A start that cannot read the
// deployment (Redis opened but the read failed or timed out) serves the
// deployment it kept.

// DeploySource is what deployed mode reads (store.RedisDeploy).
type DeploySource interface {
	Current(ctx context.Context) (*store.Deployment, error)
	Blob(ctx context.Context, digest string) ([]byte, error)
}

var _ DeploySource = (*store.RedisDeploy)(nil)

// DeployTimeout bounds one read of the deployment.
const DeployTimeout = 30 * time.Second

// Deployed keeps the deployment's files in a rules and a plugins
// directory, side by side (a deployment names its files rules/… and
// plugins/…). It owns no goroutine: Sync runs on the caller's.
type Deployed struct {
	src                 DeploySource
	rulesDir, pluginDir string
	trust               Verifier
	log                 hclog.Logger
	cur                 atomic.Pointer[store.Deployment]
}

// Verifier checks a file against its signature (trust.Gate).
type Verifier interface {
	Required(place string) bool
	Check(place, path string, content, sig []byte) (key string, err error)
	ForgetPlace(place string)
}

// NewDeployed returns a Deployed over src writing into rulesDir and
// pluginsDir, which must share a parent. With v requiring signatures for
// deploy (trust.PlaceDeploy), a deployment whose files are not all signed
// by a trusted key is refused whole, before any file is written: the last
// deployment keeps serving.
func NewDeployed(src DeploySource, rulesDir, pluginsDir string, v Verifier, log hclog.Logger) *Deployed {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Deployed{src: src, rulesDir: rulesDir, pluginDir: pluginsDir, trust: v, log: log}
}

// Current is the deployment written last; nil before one.
func (d *Deployed) Current() *store.Deployment { return d.cur.Load() }

// Start creates the directories and writes what the source holds into
// them, or leaves what the last start kept if the read fails (logged).
// Only a directory that cannot be made is an error.
func (d *Deployed) Start(ctx context.Context) error {
	for _, dir := range []string{d.rulesDir, d.pluginDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	if _, err := d.Sync(ctx); err != nil {
		d.log.Error("could not read the deployment; starting on the one this process kept", "dir", filepath.Dir(d.rulesDir), "error", err)
	}
	return nil
}

// Sync writes the current deployment's files under the directories and
// removes files it no longer names; it returns the paths it changed. Every
// blob is fetched (and checked against its digest) before the first file
// is written, so a fetch that fails leaves the last deployment whole on
// disk.
func (d *Deployed) Sync(ctx context.Context) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, DeployTimeout)
	defer cancel()
	dep, err := d.src.Current(ctx)
	if err != nil {
		return nil, err
	}
	if dep == nil {
		if d.cur.Load() == nil {
			d.log.Warn("nothing deployed yet: serving no rules until `ruled deploy` puts some in Redis")
		}
		return nil, nil
	}
	if cur := d.cur.Load(); cur != nil && cur.Version == dep.Version {
		return nil, nil
	}
	root := filepath.Dir(d.rulesDir)
	want := map[string][]byte{}
	have := map[string][]byte{} // every file's content, for the signatures' check
	checked := d.trust != nil && d.trust.Required(trust.PlaceDeploy)
	for _, name := range slices.Sorted(maps.Keys(dep.Files)) {
		path := filepath.Join(root, filepath.FromSlash(name))
		if b, err := os.ReadFile(path); err == nil && store.Digest(b) == dep.Files[name] {
			if checked {
				have[name] = b
			}
			continue
		}
		b, err := d.src.Blob(ctx, dep.Files[name])
		if err != nil {
			return nil, fmt.Errorf("deployment %d: %s: %w", dep.Version, name, err)
		}
		want[path], have[name] = b, b
	}
	if checked {
		if err := d.verify(dep, have); err != nil {
			return nil, err
		}
	}
	changed := map[string]bool{}
	for _, path := range slices.Sorted(maps.Keys(want)) {
		if err := regular.WriteFile(path, want[path]); err != nil {
			return changed, fmt.Errorf("deployment %d: %w", dep.Version, err)
		}
		changed[path] = true
	}
	for _, dir := range []string{d.rulesDir, d.pluginDir} {
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
	d.cur.Store(dep)
	if checked {
		d.trust.ForgetPlace(trust.PlaceDeploy)
	}
	d.log.Info("deployment read", "version", dep.Version, "by", dep.By, "at", dep.At, "files", len(dep.Files), "changed", len(changed))
	return changed, nil
}

// verify checks every rule file and module of dep against the signature
// deployed beside it, before anything is written: one file refused
// refuses the deployment (a deployment is whole or not at all, its
// signatures too). Every refusal is named.
func (d *Deployed) verify(dep *store.Deployment, have map[string][]byte) error {
	var refused []string
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if strings.HasSuffix(name, trust.SigSuffix) {
			continue
		}
		sig, ok := have[name+trust.SigSuffix]
		if !ok {
			sig = nil
		}
		if _, err := d.trust.Check(trust.PlaceDeploy, name, have[name], sig); err != nil {
			refused = append(refused, err.Error())
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("deployment %d (by %s) refused, its files not all signed by a trusted key; the last deployment keeps serving: %s",
			dep.Version, dep.By, strings.Join(refused, "; "))
	}
	return nil
}
