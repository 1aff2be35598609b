package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ruled-dev/ruled/host/trust"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/regular"
)

// modStore keeps modules by content (<digest>.wasm in its directory) while
// anything references them, so a waiting step runs the code it was
// scheduled with after its plugin was replaced — live, and after a
// restart. It also holds the modules loaded for such pinned steps.
type modStore struct {
	dir string

	mu      sync.Mutex
	pinned  map[string]*wasm.Module // digest → a module loaded for pinned steps
	handles map[string]*wasm.Handle // digest, function, config → a handle on it
}

func newModStore(dir string) *modStore {
	return &modStore{dir: dir, pinned: map[string]*wasm.Module{}, handles: map[string]*wasm.Handle{}}
}

func (s *modStore) path(digest string) string { return filepath.Join(s.dir, digest+".wasm") }

// put keeps a module's bytes under their digest, whole or not at all
// (regular.WriteFile): a crash never leaves half a module under a digest.
// Its signature (nil: none) is kept beside it (<digest>.wasm.sig), so a
// step pinned to the module is checked against the keys trusted when it
// runs, after a restart too.
func (s *modStore) put(digest string, b, sig []byte) error {
	p := s.path(digest)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	if sig != nil {
		if old, _ := os.ReadFile(p + trust.SigSuffix); !bytes.Equal(old, sig) {
			if err := regular.WriteFile(p+trust.SigSuffix, sig); err != nil {
				return err
			}
		}
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return regular.WriteFile(p, b)
}

// Pinned returns plugin's function fn configured with config on the module
// with the given digest — the code a waiting step was scheduled with —,
// loading the module from the module store (or Config.Blobs) if need be.
func (c *Catalog) Pinned(plugin, digest, fn string, config []byte) (*wasm.Handle, error) {
	m, err := c.pinnedModule(plugin, digest)
	if err != nil {
		return nil, err
	}
	s := c.mods
	k := digest + "\x00" + handleKey(plugin, fn, config)
	s.mu.Lock()
	h := s.handles[k]
	s.mu.Unlock()
	if h != nil {
		return h, nil
	}
	if h, err = m.Configure(c.ctx, fn, config); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.handles[k] = h
	s.mu.Unlock()
	return h, nil
}

func (c *Catalog) pinnedModule(plugin, digest string) (*wasm.Module, error) {
	s := c.mods
	s.mu.Lock()
	defer s.mu.Unlock()
	// By plugin and digest: a module checked and granted as one plugin is
	// not another's, even with the same bytes.
	pk := plugin + "\x00" + digest
	if m := s.pinned[pk]; m != nil {
		return m, nil
	}
	b, err := os.ReadFile(s.path(digest))
	sig, _ := trust.ReadSig(s.path(digest))
	_, checked := c.pinPlace()
	if c.cfg.Blobs != nil && (err != nil || checked && sig == nil) {
		// Missing here, or its signature is: the deployment has them (a
		// step scheduled on another member).
		ctx, cancel := context.WithTimeout(c.ctx, BlobTimeout)
		rb, rerr := b, error(nil)
		if err != nil {
			rb, rerr = c.cfg.Blobs.Blob(ctx, digest)
		}
		if ss, ok := c.cfg.Blobs.(SigSource); ok && rerr == nil && sig == nil {
			// A signature that cannot be read now is not a module
			// unsigned: the error says so (the step is dropped as its
			// module missing, not as untrusted).
			sig, rerr = ss.Signature(ctx, plugin, digest)
		}
		cancel()
		if rerr == nil {
			b, err = rb, s.put(digest, rb, sig)
		} else {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("module %s of plugin %s is not in the module store: %w", digest[:12], plugin, err)
	}
	if place, ok := c.pinPlace(); ok {
		// Checked against the keys trusted now: a module signed by a key
		// revoked since the step was scheduled does not run; nor does one
		// a record names that no deployment signed (whoever writes Redis
		// writes records and blobs too).
		at := filepath.Join(s.dir, digest[:12], plugin+".wasm")
		if _, err := c.cfg.Trust.Check(place, at, b, sig); err != nil {
			// Counted and audited, not listed as a file refused: the step
			// it was for is dropped, and says why.
			c.cfg.Trust.Forget(at)
			return nil, fmt.Errorf("module %s of plugin %s: %w", digest[:12], plugin, err)
		}
	}
	m, err := c.cfg.Runtime.Load(c.ctx, b, c.cfg.Options(plugin))
	if err != nil {
		return nil, err
	}
	s.pinned[pk] = m
	return m, nil
}

// pinPlace is where a pinned module's signature is checked: plugins where
// they are required, else deploy (a fleet's modules are what deploys
// carried); false when neither requires signatures.
func (c *Catalog) pinPlace() (string, bool) {
	switch {
	case c.cfg.Trust == nil:
		return "", false
	case c.cfg.Trust.Required(trust.PlacePlugins):
		return trust.PlacePlugins, true
	case c.cfg.Trust.Required(trust.PlaceDeploy):
		return trust.PlaceDeploy, true
	}
	return "", false
}

// Current maps the digest of each plugin's serving module to the plugin.
func (c *Catalog) Current() map[string]string {
	current := map[string]string{}
	for _, name := range c.Plugins() {
		if m := c.Module(name); m != nil {
			current[m.Digest()] = name
		}
	}
	return current
}

// Collect removes the modules nothing references any more — neither a
// plugin's serving module nor a digest referenced reports (the caller's
// waiting runs and pending records) —: files from the module store, and
// the modules loaded for pinned steps. It reports what it removed.
func (c *Catalog) Collect(referenced func(digest string) bool) (files, modules int) {
	current := c.Current()
	keep := func(dg string) bool { _, cur := current[dg]; return cur || referenced(dg) }
	s := c.mods
	s.mu.Lock()
	var closing []*wasm.Module
	for pk, m := range s.pinned {
		if _, dg, _ := strings.Cut(pk, "\x00"); !keep(dg) {
			closing = append(closing, m)
			delete(s.pinned, pk)
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
	for _, e := range ents {
		if dg, ok := strings.CutSuffix(e.Name(), ".wasm"+trust.SigSuffix); ok && !keep(dg) {
			os.Remove(filepath.Join(s.dir, e.Name())) // its module's signature
			continue
		}
		dg := strings.TrimSuffix(e.Name(), ".wasm")
		if strings.HasSuffix(e.Name(), ".wasm") && !keep(dg) {
			if os.Remove(filepath.Join(s.dir, e.Name())) == nil {
				files++
			}
		}
	}
	if files > 0 || len(closing) > 0 {
		c.log.Debug("module store collected", "files", files, "pinned-modules", len(closing))
	}
	return files, len(closing)
}

// Close closes the modules loaded for pinned steps, at stop. The plugins'
// own modules close with the runtime.
func (c *Catalog) Close() error {
	s := c.mods
	s.mu.Lock()
	defer s.mu.Unlock()
	for dg, m := range s.pinned {
		m.Close(context.Background())
		delete(s.pinned, dg)
	}
	return nil
}
