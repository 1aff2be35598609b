package catalog

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/trust"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// versions are two builds of one plugin, "versioned", that differ visibly
// (host/wasm/testdata/reload).
func versions(t *testing.T) (v1, v2 []byte) {
	t.Helper()
	dir := filepath.Join(plugintest.Root(), "host", "wasm", "testdata", "reload")
	v1, err := os.ReadFile(filepath.Join(dir, "v1.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if v2, err = os.ReadFile(filepath.Join(dir, "v2.wasm")); err != nil {
		t.Fatal(err)
	}
	return v1, v2
}

type env struct {
	*Catalog
	dir, mods string
	refuse    atomic.Pointer[error] // what Check answers
	reloads   []bool
}

func newEnv(t *testing.T, files map[string][]byte) *env {
	t.Helper()
	ctx := context.Background()
	rt, err := wasm.NewRuntime(ctx, wasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	e := &env{dir: t.TempDir()}
	e.mods = filepath.Join(t.TempDir(), "sha256")
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(e.dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.Catalog = New(ctx, Config{Runtime: rt, Dir: e.dir, ModuleDir: e.mods, Backoff: time.Hour,
		Check: func(string, *wasm.Module) error {
			if err := e.refuse.Load(); err != nil {
				return *err
			}
			return nil
		},
		Reloaded: func(ok bool) { e.reloads = append(e.reloads, ok) }})
	t.Cleanup(func() { e.Close() })
	e.LoadDir()
	return e
}

func (e *env) write(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(e.dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadReloadPinAndCollect(t *testing.T) {
	v1, v2 := versions(t)
	e := newEnv(t, map[string][]byte{"versioned.wasm": v1, "notes.txt": []byte("not a plugin")})
	d1, d2 := store.Digest(v1), store.Digest(v2)
	if got := e.Plugins(); len(got) != 1 || got[0] != "versioned" {
		t.Fatalf("plugins %v, want [versioned]", got)
	}
	if k, ok := e.Function("versioned", "version"); !ok || k != abi.KindAction {
		t.Errorf("versioned.version: %v %v, want an action", k, ok)
	}
	if _, ok := e.Function("versioned", "nope"); ok {
		t.Error("a function the plugin does not export was found")
	}
	h, err := e.Configure("versioned", "version", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if h2, _ := e.Configure("versioned", "version", []byte("{}")); h2 != h {
		t.Error("the same config was configured twice")
	}

	changed, later := e.Reload([]string{e.write(t, "versioned.wasm", v2)})
	if !changed || len(later) != 0 {
		t.Fatalf("reload: changed %v, later %v", changed, later)
	}
	if got := e.Module("versioned").Digest(); got != d2 {
		t.Fatalf("serving %s after the reload, want v2 %s", got[:12], d2[:12])
	}
	if h.Module().Digest() != d2 {
		t.Error("a handle configured before the reload does not follow it")
	}
	if changed, _ := e.Reload([]string{e.write(t, "versioned.wasm", v2)}); changed {
		t.Error("the same bytes written again counted as a change")
	}
	if len(e.reloads) != 1 || !e.reloads[0] {
		t.Errorf("reloads told %v, want [true]", e.reloads)
	}

	// A step scheduled on v1 still runs v1, from the module store.
	p, err := e.Pinned("versioned", d1, "version", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Module().Digest() != d1 {
		t.Errorf("pinned handle on %s, want v1", p.Module().Digest()[:12])
	}
	if cur := e.Current(); cur[d2] != "versioned" || cur[d1] != "" {
		t.Errorf("current %v, want only v2", cur)
	}

	// Referenced, v1 stays; once nothing references it, it goes.
	if files, mods := e.Collect(func(dg string) bool { return dg == d1 }); files != 0 || mods != 0 {
		t.Errorf("collected %d files, %d modules still referenced", files, mods)
	}
	if files, mods := e.Collect(func(string) bool { return false }); files != 1 || mods != 1 {
		t.Errorf("collected %d files and %d modules, want v1's file and module", files, mods)
	}
	if _, err := os.Stat(filepath.Join(e.mods, d2+".wasm")); err != nil {
		t.Errorf("the serving module's file was collected: %v", err)
	}
	if _, err := e.Pinned("versioned", d1, "version", []byte("{}")); err == nil || !strings.Contains(err.Error(), "not in the module store") {
		t.Errorf("pinning a collected digest: %v", err)
	}
}

// blobs is a BlobSource holding one module.
type blobs map[string][]byte

func (b blobs) Blob(_ context.Context, digest string) ([]byte, error) {
	if v, ok := b[digest]; ok {
		return v, nil
	}
	return nil, errors.New("no such blob")
}

func TestPinnedFromBlobs(t *testing.T) {
	v1, v2 := versions(t)
	e := newEnv(t, map[string][]byte{"versioned.wasm": v2})
	d1 := store.Digest(v1)
	if _, err := e.Pinned("versioned", d1, "version", []byte("{}")); err == nil {
		t.Fatal("a digest nowhere to be found was pinned")
	}
	e.cfg.Blobs = blobs{d1: v1}
	p, err := e.Pinned("versioned", d1, "version", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Module().Digest() != d1 {
		t.Errorf("pinned on %s, want v1", p.Module().Digest()[:12])
	}
	if _, err := os.Stat(filepath.Join(e.mods, d1+".wasm")); err != nil {
		t.Errorf("a module read from the blobs is not kept in the module store: %v", err)
	}
}

func TestRefusedReloadKeepsServing(t *testing.T) {
	v1, v2 := versions(t)
	e := newEnv(t, map[string][]byte{"versioned.wasm": v1})
	refused := errors.New("it would break rule r")
	e.refuse.Store(&refused)
	path := e.write(t, "versioned.wasm", v2)
	if changed, _ := e.Reload([]string{path}); changed {
		t.Fatal("a refused module was swapped in")
	}
	if got := e.Module("versioned").Digest(); got != store.Digest(v1) {
		t.Errorf("serving %s, want v1 still", got[:12])
	}
	st := e.Status(nil)
	if len(st) != 1 || !st[0].Loaded || !strings.Contains(st[0].LastError, "it would break rule r") || len(st[0].History) != 2 {
		t.Errorf("status %+v: want v1 loaded, the refusal as its last error, two attempts", st)
	}
	if len(e.reloads) != 1 || e.reloads[0] {
		t.Errorf("reloads told %v, want [false]", e.reloads)
	}
	// Backing off (an hour here): the same path is put off, not tried.
	e.refuse.Store(nil)
	if changed, later := e.Reload([]string{path}); changed || later[path].IsZero() {
		t.Errorf("changed %v, later %v: want the file put off", changed, later)
	}
	// The serving version put back: the failure is over, in the status too.
	e.write(t, "versioned.wasm", v1)
	if e.Load(path, true) {
		t.Error("the serving version, put back, counted as a change")
	}
	st = e.Status(nil)
	if len(st) != 1 || !st[0].Loaded || st[0].LastError != "" || len(st[0].History) != 3 || !st[0].History[2].OK {
		t.Errorf("status %+v: want v1 loaded, no last error, the put-back noted", st)
	}
}

func TestBrokenFileIsReported(t *testing.T) {
	e := newEnv(t, map[string][]byte{"broken.wasm": []byte("\x00asm garbage")})
	if len(e.Plugins()) != 0 {
		t.Fatalf("plugins %v from a broken file", e.Plugins())
	}
	why, ok := e.NotLoaded("broken")
	if !ok || why == "" {
		t.Errorf("NotLoaded: %q %v, want the reason", why, ok)
	}
	if _, ok := e.NotLoaded("absent"); ok {
		t.Error("a plugin with no file is reported as not loaded")
	}
	if _, err := e.Configure("broken", "f", nil); err == nil || !strings.Contains(err.Error(), `no plugin "broken"`) {
		t.Errorf("configuring a plugin that did not load: %v", err)
	}
	// Put off while it backs off, and its failures add up in one record.
	path := filepath.Join(e.dir, "broken.wasm")
	if _, later := e.Reload([]string{path}); later[path].IsZero() {
		t.Error("a file that just failed was tried again at once")
	}
	st := e.Status(nil)
	if len(st) != 1 || st[0].Loaded || st[0].LastError != why || st[0].File != path {
		t.Errorf("status %+v: want the broken file, not loaded, with its error", st)
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {4, 8 * time.Second}, {6, 32 * time.Second}, {7, time.Minute}, {40, time.Minute}} {
		if got := backoff(time.Second, tc.n); got != tc.want {
			t.Errorf("backoff after %d failures: %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestGrantHint(t *testing.T) {
	ng := &wasm.NotGrantedError{Capability: abi.Capability("kv")}
	got := GrantHint("p", ng).Error()
	if !strings.Contains(got, "--grant p=kv") || !errors.Is(GrantHint("p", ng), ng) {
		t.Errorf("hint %q: want how to grant kv, wrapping the error", got)
	}
	other := errors.New("other")
	if GrantHint("p", other) != other {
		t.Error("an error that is not about a grant was changed")
	}
}

// TestSpinningStartsLoadSideBySide: plugins whose start-up spins each stop
// at their own init deadline, side by side, not a few at a time (issue
// 38: five, two at a time at the default 10 s, held readiness 30 s):
// every one of six began its load before the first of them ended. Before,
// on two cores, the third pair began only once the first pair had spun
// out. Told by the loads' own times, not by a ratio of wall times, which a
// loaded machine's fuel calibration moved.
func TestSpinningStartsLoadSideBySide(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	spin, err := os.ReadFile(filepath.Join(plugintest.Root(), "host", "wasm", "testdata", "hostile", "start_spin.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := wasm.NewRuntime(ctx, wasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	dir := t.TempDir()
	for i := range 6 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("spin%d.wasm", i)), spin, 0o600)
	}
	c := New(ctx, Config{Runtime: rt, Dir: dir, ModuleDir: filepath.Join(t.TempDir(), "sha256"),
		Options: func(name string) wasm.Options {
			return wasm.Options{Name: name, Limits: wasm.Limits{InitTimeout: 500 * time.Millisecond}}
		}})
	defer c.Close()
	start := time.Now()
	c.LoadDir()
	took := time.Since(start)
	if n := len(c.Plugins()); n != 0 {
		t.Errorf("%d spinning plugins loaded; want none", n)
	}
	var lastBegun, firstEnded time.Time
	for _, ps := range c.Status(nil) {
		if ps.Loaded || !strings.Contains(ps.LastError, "start section") || len(ps.History) != 1 {
			t.Fatalf("%s: loaded %v, error %q, history %+v; want one load, failed at its start section", ps.Name, ps.Loaded, ps.LastError, ps.History)
		}
		ev := ps.History[0]
		d, err := time.ParseDuration(ev.Took)
		if err != nil {
			t.Fatal(err)
		}
		if ev.At.After(lastBegun) {
			lastBegun = ev.At
		}
		if end := ev.At.Add(d); firstEnded.IsZero() || end.Before(firstEnded) {
			firstEnded = end
		}
	}
	t.Logf("six spinning start-ups in %v; the last began %v after the first ended", took.Round(time.Millisecond), lastBegun.Sub(firstEnded))
	if !lastBegun.Before(firstEnded) {
		t.Errorf("a load began %v after another had ended; want the six side by side", lastBegun.Sub(firstEnded))
	}
}

// sigBlobs are deployed modules with their signatures (store.RedisDeploy).
type sigBlobs struct {
	blobs
	sigs map[string][]byte // digest → signature
}

func (s sigBlobs) Signature(_ context.Context, _, digest string) ([]byte, error) {
	return s.sigs[digest], nil
}

// TestPinnedFromBlobsChecked: with signatures required for deploys, a
// module a waiting step is pinned to, fetched from the deployment's
// blobs, runs only when a trusted key signed it: whoever writes Redis can
// write a blob and a record naming it, not a signature.
func TestPinnedFromBlobsChecked(t *testing.T) {
	v1, v2 := versions(t)
	key, _ := trust.Generate("ops", rand.Reader)
	ring, _ := trust.NewKeyring([]trust.PublicKey{key.Public()}, nil)
	gate, err := trust.NewGate(ring, map[string]bool{trust.PlaceDeploy: true})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, map[string][]byte{"versioned.wasm": v2})
	e.cfg.Trust = gate
	d1 := store.Digest(v1)
	e.cfg.Blobs = sigBlobs{blobs: blobs{d1: v1}}
	_, err = e.Pinned("versioned", d1, "version", []byte("{}"))
	var te *trust.Error
	if !errors.As(err, &te) || te.Reason != trust.ReasonUnsigned {
		t.Fatalf("an unsigned blob pinned: %v", err)
	}
	e.cfg.Blobs = sigBlobs{blobs: blobs{d1: v1}, sigs: map[string][]byte{d1: key.Sign("versioned.wasm", v1).Marshal()}}
	// The module is in the module store now, its signature not: taken
	// from the deployment.
	if p, err := e.Pinned("versioned", d1, "version", []byte("{}")); err != nil || p.Module().Digest() != d1 {
		t.Fatalf("a signed blob: %v", err)
	}
}
