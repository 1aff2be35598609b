package reload

import (
	"context"
	"encoding/json"
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

// Verifier checks a file against its signature and a deployment against
// its signed manifest (trust.Gate).
type Verifier interface {
	Required(place string) bool
	Check(place, path string, content, sig []byte) (key string, err error)
	CheckManifest(place, what string, files map[string]string, at time.Time, sig []byte) (key string, err error)
	Refuse(place, what, reason, detail string) error
	ForgetPlace(place string)
}

// acceptedFile keeps, beside the two directories, the deployment this
// process wrote last (its manifest and signature): what a start checks
// the directories against when Redis cannot say, and what a newer
// deployment must not be older than.
const acceptedFile = "accepted.json"

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
	if d.cur.Load() == nil && d.trust != nil && d.trust.Required(trust.PlaceDeploy) {
		d.checkKept()
	}
	return nil
}

// checkKept makes sure that what a start serves without a deployment read
// from Redis is a deployment this process checked: every file under the
// directories is one the kept manifest names, with its digest, and the
// manifest's signature checks against the keys trusted now. Otherwise it
// empties the directories — nothing unverified runs, even for one event —
// and says why.
func (d *Deployed) checkKept() {
	root := filepath.Dir(d.rulesDir)
	why := ""
	var dep store.Deployment
	b, err := regular.ReadFile(filepath.Join(root, acceptedFile), 16<<20)
	switch {
	case err != nil:
		why = "no deployment checked before: " + err.Error()
	case json.Unmarshal(b, &dep) != nil || dep.Signed == nil:
		why = acceptedFile + " does not hold a signed deployment"
	default:
		if _, err := d.trust.CheckManifest(trust.PlaceDeploy, fmt.Sprintf("deployment %d (kept)", dep.Version), dep.Files, dep.Signed.At, dep.Signed.Signature); err != nil {
			why = err.Error()
		}
	}
	for _, dir := range []string{d.rulesDir, d.pluginDir} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if why != "" || e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
				continue
			}
			name := filepath.Base(dir) + "/" + e.Name()
			b, err := regular.ReadFile(filepath.Join(dir, e.Name()), 64<<20)
			if err != nil || dep.Files[name] != store.Digest(b) {
				why = name + " is not the file the kept deployment signed"
			}
		}
	}
	if why == "" {
		d.log.Info("starting on the deployment this process kept, checked", "version", dep.Version)
		return
	}
	for _, dir := range []string{d.rulesDir, d.pluginDir} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	d.log.Error("serving no rules: the files this process kept are not a signed deployment, and none could be read", "why", why)
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
	if cur := d.cur.Load(); cur != nil && cur.Version == dep.Version && sameDeployment(cur, dep) {
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
	accepted, _ := json.Marshal(dep)
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
	if err := regular.WriteFile(filepath.Join(root, acceptedFile), accepted); err != nil {
		return changed, fmt.Errorf("deployment %d: %w", dep.Version, err)
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
	refused := trust.CheckFiles(have, func(name string, content, sig []byte) error {
		_, err := d.trust.Check(trust.PlaceDeploy, name, content, sig)
		return err
	})
	if len(refused) > 0 {
		return fmt.Errorf("deployment %d (by %s) refused, its files not all signed by a trusted key; the last deployment keeps serving: %s",
			dep.Version, dep.By, strings.Join(refused, "; "))
	}
	// The manifest: the set of files, as the deployer signed it — no file
	// added, removed, or taken from another release.
	what := fmt.Sprintf("deployment %d", dep.Version)
	var sig []byte
	var at time.Time
	if dep.Signed != nil {
		sig, at = dep.Signed.Signature, dep.Signed.At
	}
	if _, err := d.trust.CheckManifest(trust.PlaceDeploy, what, dep.Files, at, sig); err != nil {
		return fmt.Errorf("%s (by %s) refused; the last deployment keeps serving: %w", what, dep.By, err)
	}
	// Not older than what this process runs: a release sent again.
	if last := d.lastSigned(); !last.IsZero() && at.Before(last) {
		err := d.trust.Refuse(trust.PlaceDeploy, what, trust.ReasonRollback,
			fmt.Sprintf("signed %s, before the deployment served (signed %s)", at.Format(time.RFC3339), last.Format(time.RFC3339)))
		return fmt.Errorf("%s (by %s) refused; the last deployment keeps serving: %w", what, dep.By, err)
	}
	return nil
}

// lastSigned is when the deployment this process wrote last was signed;
// zero when none was, or none is kept.
func (d *Deployed) lastSigned() time.Time {
	b, err := regular.ReadFile(filepath.Join(filepath.Dir(d.rulesDir), acceptedFile), 16<<20)
	var dep store.Deployment
	if err != nil || json.Unmarshal(b, &dep) != nil || dep.Signed == nil {
		return time.Time{}
	}
	return dep.Signed.At
}

// sameDeployment reports whether a and b name the same files and carry
// the same signature: a manifest rewritten under the version served is
// not the deployment served, and is checked as a new one.
func sameDeployment(a, b *store.Deployment) bool {
	if !maps.Equal(a.Files, b.Files) || (a.Signed == nil) != (b.Signed == nil) {
		return false
	}
	return a.Signed == nil || a.Signed.At.Equal(b.Signed.At) && string(a.Signed.Signature) == string(b.Signed.Signature)
}
