package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/wasm"
)

// modStore keeps modules by content (modules/sha256/<digest>.wasm under the
// data dir) while anything references them, so a waiting step runs the code
// it was scheduled with after its plugin was replaced — live, and after a
// restart. It also holds the modules loaded for such pinned steps.
type modStore struct {
	dir string

	mu      sync.Mutex
	pinned  map[string]*wasm.Module // digest → a module loaded for pinned steps
	handles map[string]*wasm.Handle // digest, function, config → a handle on it
}

func newModStore(dataDir string) *modStore {
	return &modStore{dir: filepath.Join(dataDir, "modules", "sha256"),
		pinned: map[string]*wasm.Module{}, handles: map[string]*wasm.Handle{}}
}

func (s *modStore) path(digest string) string { return filepath.Join(s.dir, digest+".wasm") }

// put keeps a module's bytes under their digest. Writing goes through a
// temporary file and a rename, so a crash never leaves half a module under
// a digest.
func (s *modStore) put(digest string, b []byte) error {
	p := s.path(digest)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	return writeFileAtomic(p, b)
}

// Current implements seq.Resolver: the rule as loaded now.
func (d *Daemon) Current(rule string) *seq.Sequence {
	if set := d.ruleSnap(); set != nil {
		return set.byID[rule]
	}
	return nil
}

// Pinned implements seq.Resolver: step idx of s configured on the module
// with the given digest, loaded from the module store if need be.
func (d *Daemon) Pinned(s *seq.Sequence, idx int, digest string) (*seq.CompiledStep, error) {
	do := &s.Rule.Steps[idx].Do
	m, err := d.pinnedModule(do.Plugin, digest)
	if err != nil {
		return nil, err
	}
	k := digest + "\x00" + handleKey(do.Plugin, do.Function, do.With)
	d.mods.mu.Lock()
	h := d.mods.handles[k]
	d.mods.mu.Unlock()
	if h == nil {
		if h, err = m.Configure(d.ctx, do.Function, do.With); err != nil {
			return nil, err
		}
		d.mods.mu.Lock()
		d.mods.handles[k] = h
		d.mods.mu.Unlock()
	}
	st := s.Steps[idx]
	st.Action, st.Digest = d.met.Action(plugged{h}, do.Plugin, do.Function), digest
	d.observe(&st, do.With)
	d.log.Info("running a waiting step on the module it was scheduled with", "rule", s.Rule.ID,
		"step", st.Name, "plugin", do.Plugin, "digest", digest[:12])
	return &st, nil
}

func (d *Daemon) pinnedModule(plugin, digest string) (*wasm.Module, error) {
	s := d.mods
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.pinned[digest]; m != nil {
		return m, nil
	}
	b, err := os.ReadFile(s.path(digest))
	if err != nil && d.redis != nil {
		// In a fleet the step may have been scheduled on another process:
		// a deployed module is in Redis (checked against its digest).
		ctx, cancel := context.WithTimeout(d.ctx, deployTimeout)
		rb, rerr := d.redis.Deploy().Blob(ctx, digest)
		cancel()
		if rerr == nil {
			b, err = rb, s.put(digest, rb)
		} else {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("module %s of plugin %s is not in the module store: %w", digest[:12], plugin, err)
	}
	m, err := d.rt.Load(d.ctx, b, wasm.Options{Name: plugin, Grant: d.cfg.Plugins[plugin].Grant, Limits: d.cfg.limitsFor(plugin)})
	if err != nil {
		return nil, err
	}
	s.pinned[digest] = m
	return m, nil
}

// references counts what needs each digest: the plugins' current modules,
// live waiting runs, pending records.
func (d *Daemon) references() (current map[string]string, pinned map[string]*api.PinnedBy) {
	current = map[string]string{}
	for _, name := range d.cat.Plugins() {
		current[d.cat.module(name).Digest()] = name
	}
	pinned = map[string]*api.PinnedBy{}
	get := func(dg string) *api.PinnedBy {
		if pinned[dg] == nil {
			pinned[dg] = &api.PinnedBy{}
		}
		return pinned[dg]
	}
	for dg, n := range d.runner.WaitingDigests() {
		get(dg).Waiting += n
	}
	if recs, err := d.pending.List(); err == nil {
		for _, p := range recs {
			if p.Digest != "" {
				get(p.Digest).Records++
			}
		}
	}
	return current, pinned
}

// collect removes modules nothing references any more: files from the
// module store, and the modules loaded for pinned steps.
func (d *Daemon) collect() {
	current, pinned := d.references()
	keep := func(dg string) bool { _, c := current[dg]; _, p := pinned[dg]; return c || p }
	s := d.mods
	s.mu.Lock()
	var closing []*wasm.Module
	for dg, m := range s.pinned {
		if !keep(dg) {
			closing = append(closing, m)
			delete(s.pinned, dg)
			for k := range s.handles {
				if strings.HasPrefix(k, dg+"\x00") {
					delete(s.handles, k)
				}
			}
		}
	}
	s.mu.Unlock()
	for _, m := range closing {
		m.Close(context.Background())
	}
	ents, _ := os.ReadDir(s.dir)
	removed := 0
	for _, e := range ents {
		dg := strings.TrimSuffix(e.Name(), ".wasm")
		if strings.HasSuffix(e.Name(), ".wasm") && !keep(dg) {
			if os.Remove(filepath.Join(s.dir, e.Name())) == nil {
				removed++
			}
		}
	}
	if removed > 0 || len(closing) > 0 {
		d.log.Debug("module store collected", "files", removed, "pinned-modules", len(closing))
	}
}

// closePinned closes the modules loaded for pinned steps, at stop.
func (s *modStore) closePinned() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for dg, m := range s.pinned {
		m.Close(context.Background())
		delete(s.pinned, dg)
	}
	return nil
}

var _ seq.Resolver = (*Daemon)(nil)
