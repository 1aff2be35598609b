package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/host/trust"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisDeploy is what `ruled deploy` puts in Redis for every process to
// load: rule files and plugin modules, each stored once by its content's
// digest, and a manifest naming which file has which content.
//
//	ruled:deploy            string: the current Deployment as JSON
//	ruled:deploy:history    list: earlier Deployments, newest first (DeployHistory kept)
//	ruled:deploy:version    string: INCR'd by every deploy, so versions only grow
//	ruled:blob:<sha256>     string: a file's bytes
//
// A deploy writes every blob before the manifest, so a process that reads
// the manifest finds every blob it names; the manifest is one SET, so a
// process sees a deployment whole or not at all. Every command touches one
// key, so the layout runs on a Redis Cluster unchanged. Blobs no deployment
// in the history names are deleted by the deploy that drops them: a step
// waiting on another process with a module of a recent deployment can
// still be given it (Blob).
type RedisDeploy struct {
	r *Redis
}

// Deploy returns the deployment store on r.
func (r *Redis) Deploy() *RedisDeploy { return &RedisDeploy{r: r} }

// DeployHistory is how many earlier deployments keep their blobs.
const DeployHistory = 10

const (
	deployKey        = keyspace.Deploy
	deployHistoryKey = keyspace.DeployHistory
	deployVersionKey = keyspace.DeployVersion
	blobPrefix       = keyspace.BlobPrefix
)

// Deployment is one deploy: which file has which content.
type Deployment struct {
	Version int64     `json:"version"`
	At      time.Time `json:"at"`
	By      string    `json:"by,omitempty"` // who deployed (user@host), for the operator
	// Files maps a file's name — "rules/<name>.yaml" or
	// "plugins/<name>.wasm", or either's .sig — to its content's sha256,
	// hex.
	Files map[string]string `json:"files"`
	// Signed is the deployer's signature over Files as of its time
	// (trust.Manifest); nil for a deployment not signed.
	Signed *SignedManifest `json:"signed,omitempty"`
}

// SignedManifest is a deployment's signature: when it was signed, and
// the signature file's bytes (trust.Signature) over trust.Manifest.
type SignedManifest struct {
	At        time.Time       `json:"at"`
	Signature json.RawMessage `json:"signature"`
}

// ErrBadDeployName is a file name a deployment cannot carry.
var ErrBadDeployName = errors.New("store: not a deployable file name")

// CheckDeployName accepts "rules/<name>.yaml" (or .yml) and
// "plugins/<name>.wasm" where name is a plain file name: nothing a process
// writing the file under its data directory could take for a path. Each
// may have its detached signature beside it (<file>.sig, host/trust).
func CheckDeployName(name string) error {
	dir, base := path.Split(strings.TrimSuffix(name, trust.SigSuffix))
	ok := base != "" && !strings.HasPrefix(base, ".") && !strings.ContainsAny(base, `\/`) && path.Clean(name) == name
	switch dir {
	case "rules/":
		ok = ok && (strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml"))
	case "plugins/":
		ok = ok && strings.HasSuffix(base, ".wasm")
	default:
		ok = false
	}
	if !ok {
		return fmt.Errorf("%w: %q (want rules/<name>.yaml or plugins/<name>.wasm, or its .sig)", ErrBadDeployName, name)
	}
	return nil
}

// Digest is the hex sha256 deployments name content by.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Put makes files the current deployment, signed as signed says (nil:
// not signed): blobs Redis lacks are written, then the manifest; the
// deployment it replaces goes to the history, and blobs no kept
// deployment names are deleted. It returns the new deployment and how
// many blobs it wrote.
func (d *RedisDeploy) Put(ctx context.Context, files map[string][]byte, by string, signed *SignedManifest) (*Deployment, int, error) {
	dep := &Deployment{At: time.Now().UTC().Truncate(time.Millisecond), By: by, Files: map[string]string{}, Signed: signed}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := CheckDeployName(name); err != nil {
			return nil, 0, err
		}
		dep.Files[name] = Digest(files[name])
	}
	written := 0
	for _, name := range slices.Sorted(maps.Keys(files)) {
		// SETNX: content-addressed, an existing blob is the same bytes —
		// unless someone changed it in Redis: then it is read, found out,
		// and written again, or a deploy could never repair it.
		key := blobPrefix + dep.Files[name]
		ok, err := d.r.c.SetNX(ctx, key, files[name], 0).Result()
		if err == nil && !ok {
			var have []byte
			if have, err = d.r.c.Get(ctx, key).Bytes(); err == nil && Digest(have) != dep.Files[name] {
				ok, err = true, d.r.c.Set(ctx, key, files[name], 0).Err()
			}
		}
		if err != nil {
			return nil, written, fmt.Errorf("store: deploy %s: %w", name, err)
		}
		if ok {
			written++
		}
	}
	v, err := d.r.c.Incr(ctx, deployVersionKey).Result()
	if err != nil {
		return nil, written, fmt.Errorf("store: deploy: %w", err)
	}
	dep.Version = v
	enc, _ := json.Marshal(dep)
	prev, err := d.r.c.SetArgs(ctx, deployKey, enc, redis.SetArgs{Get: true}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, written, fmt.Errorf("store: deploy: %w", err)
	}
	if prev != "" {
		if err := d.r.c.LPush(ctx, deployHistoryKey, prev).Err(); err != nil {
			return dep, written, fmt.Errorf("store: deploy history: %w", err)
		}
		if err := d.collect(ctx, dep); err != nil {
			return dep, written, err
		}
	}
	return dep, written, nil
}

// collect trims the history to DeployHistory and deletes the blobs only
// the deployments trimmed off named.
func (d *RedisDeploy) collect(ctx context.Context, cur *Deployment) error {
	all, err := d.r.c.LRange(ctx, deployHistoryKey, 0, -1).Result()
	if err != nil {
		return fmt.Errorf("store: deploy history: %w", err)
	}
	if len(all) <= DeployHistory {
		return nil
	}
	keep := map[string]bool{}
	for _, dg := range cur.Files {
		keep[dg] = true
	}
	for _, raw := range all[:DeployHistory] {
		var old Deployment
		if json.Unmarshal([]byte(raw), &old) == nil {
			for _, dg := range old.Files {
				keep[dg] = true
			}
		}
	}
	var gone []string
	for _, raw := range all[DeployHistory:] {
		var old Deployment
		if json.Unmarshal([]byte(raw), &old) == nil {
			for _, dg := range old.Files {
				if !keep[dg] {
					keep[dg] = true // once
					gone = append(gone, blobPrefix+dg)
				}
			}
		}
	}
	for _, k := range gone { // one key a command: cluster-safe
		if err := d.r.c.Del(ctx, k).Err(); err != nil {
			return fmt.Errorf("store: deploy collect: %w", err)
		}
	}
	return d.r.c.LTrim(ctx, deployHistoryKey, 0, DeployHistory-1).Err()
}

// Current is the current deployment; nil, nil when nothing was deployed.
func (d *RedisDeploy) Current(ctx context.Context) (*Deployment, error) {
	raw, err := d.r.c.Get(ctx, deployKey).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: deployment: %w", err)
	}
	var dep Deployment
	if err := json.Unmarshal(raw, &dep); err != nil {
		return nil, fmt.Errorf("store: deployment: %w", err)
	}
	for name := range dep.Files {
		if err := CheckDeployName(name); err != nil {
			return nil, fmt.Errorf("store: deployment %d: %w", dep.Version, err)
		}
	}
	return &dep, nil
}

// Signature returns the signature deployed beside plugin's module of the
// given digest, in the current deployment or one the history keeps: what a
// member that never loaded that module checks it against before a step
// pinned to it runs. nil, nil: no kept deployment signed it.
func (d *RedisDeploy) Signature(ctx context.Context, plugin, digest string) ([]byte, error) {
	cur, err := d.Current(ctx)
	if err != nil {
		return nil, err
	}
	all, err := d.r.c.LRange(ctx, deployHistoryKey, 0, DeployHistory-1).Result()
	if err != nil {
		return nil, fmt.Errorf("store: deploy history: %w", err)
	}
	deps := []*Deployment{cur}
	for _, raw := range all {
		var old Deployment
		if json.Unmarshal([]byte(raw), &old) == nil {
			deps = append(deps, &old)
		}
	}
	name := "plugins/" + plugin + ".wasm"
	for _, dep := range deps {
		if dep == nil || dep.Files[name] != digest {
			continue
		}
		if sd, ok := dep.Files[name+trust.SigSuffix]; ok {
			return d.Blob(ctx, sd)
		}
	}
	return nil, nil
}

// ErrNoBlob is a digest Redis keeps no content for.
var ErrNoBlob = errors.New("store: no such blob")

// Blob returns the content with the given digest, checked against it: a
// blob altered in Redis is refused, not run.
func (d *RedisDeploy) Blob(ctx context.Context, digest string) ([]byte, error) {
	b, err := d.r.c.Get(ctx, blobPrefix+digest).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %.12s", ErrNoBlob, digest)
	}
	if err != nil {
		return nil, fmt.Errorf("store: blob %.12s: %w", digest, err)
	}
	if got := Digest(b); got != digest {
		return nil, fmt.Errorf("store: blob %.12s holds content of digest %.12s; refused", digest, got)
	}
	return b, nil
}
