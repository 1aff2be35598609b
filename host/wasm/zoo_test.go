package wasm

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
)

func zoo(name string) string { return filepath.Join("testdata", "zoo", name+".wasm") }

// TestZooWATMatchesSource rebuilds every hand-written module with wat2wasm
// and compares it with the committed bytes, so a .wasm cannot drift from the
// .wat a reader trusts.
func TestZooWATMatchesSource(t *testing.T) {
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("wat2wasm is missing (make test installs wabt)")
		}
		t.Skip("wat2wasm not installed")
	}
	wats, _ := filepath.Glob(filepath.Join("testdata", "zoo", "*.wat"))
	more, _ := filepath.Glob(filepath.Join("testdata", "reload", "*.wat"))
	hostile, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.wat"))
	wats = append(append(append(wats, more...), hostile...), "calibrate.wat")
	// A module whose text is too long to keep is kept as the script that
	// writes it (testdata/hostile/straight.sh).
	gens, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.sh"))
	for _, g := range gens {
		text, err := exec.Command("sh", g).Output()
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		w := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(g), ".sh")+".wat")
		os.WriteFile(w, text, 0o644)
		out := filepath.Join(t.TempDir(), "m.wasm")
		if b, err := exec.Command("wat2wasm", w, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", w, err, b)
		}
		got, _ := os.ReadFile(out)
		want, err := os.ReadFile(strings.TrimSuffix(g, ".sh") + ".wasm")
		if err != nil || string(got) != string(want) {
			t.Errorf("%s does not match the module it writes: rebuild it (%v)", g, err)
		}
	}
	for _, w := range wats {
		out := filepath.Join(t.TempDir(), "m.wasm")
		if b, err := exec.Command("wat2wasm", w, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", w, err, b)
		}
		got, _ := os.ReadFile(out)
		want, err := os.ReadFile(strings.TrimSuffix(w, ".wat") + ".wasm")
		if err != nil || string(got) != string(want) {
			t.Errorf("%s does not match its source: rebuild with wat2wasm (%v)", w, err)
		}
	}
}

// TestZooLoadErrors: modules that must be refused at load, each with an
// error naming the plugin and the cause.
func TestZooLoadErrors(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		module string
		o      Options
		want   string
	}{
		{"wrong_abi", Options{}, "plugin wrong_abi: built for ABI v2.0; this host speaks v" + abi.VersionString(abi.Version)},
		{"missing_exports", Options{}, "plugin missing_exports: incomplete ABI v1.0 exports: no export ruled_alloc;"},
		{"unknown_import", Options{}, "plugin unknown_import: imports env.getenv, which the host does not provide"},
		{"not_granted", Options{}, `plugin not_granted: imports ruled.publish, which needs the "publish" capability: not granted to the plugin`},
		{"not_granted", Options{Grant: []abi.Capability{abi.CapKV}}, `needs the "publish" capability`},
		{"huge_memory", Options{Limits: Limits{MemoryPages: 64}}, "plugin huge_memory: instrument: module needs 1000 pages of memory at start, over the cap of 64 pages"},
		{"bad_describe", Options{}, "plugin bad_describe: ruled_describe: not a valid describe document"},
		{"not_a_plugin", Options{}, "plugin not_a_plugin: not a ruled plugin: no export ruled_abi_version"},
		{"init_trap", Options{}, "wasm: plugin init_trap: _initialize: trap: wasm error: unreachable"},
	}
	base := runtime.NumGoroutine()
	for _, tc := range tests {
		t.Run(tc.module, func(t *testing.T) {
			_, err := e.rt.LoadFile(context.Background(), zoo(tc.module), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
		})
	}
	t.Run("truncated", func(t *testing.T) {
		b, _ := os.ReadFile(zoo("zoo"))
		for _, n := range []int{0, 4, 8, 9, 40, len(b) / 2, len(b) - 1} {
			if _, err := e.rt.Load(context.Background(), b[:n], Options{Name: "cut"}); err == nil ||
				!strings.HasPrefix(err.Error(), "wasm: plugin cut: ") {
				t.Errorf("%d bytes: err = %v", n, err)
			}
		}
	})
	if n := e.rt.LiveInstances(); n != 0 {
		t.Errorf("%d instances alive after failed loads", n)
	}
	if n := settle(t, base); n > base {
		t.Errorf("goroutines: %d after, %d before", n, base)
	}
}

// TestZooRuntime: misbehaviour during calls. Each fails its call with the
// plugin's name and the cause, the instance is replaced, other calls keep
// being served, and goroutines and instances return to their baseline.
func TestZooRuntime(t *testing.T) {
	base := runtime.NumGoroutine()
	e := newEnv(t)
	// Runaways get a short deadline; what must fail for another reason first
	// (a stack overflow takes wazero about a second to reach, a Go runtime's
	// out-of-memory abort prints a goroutine dump first) gets a long one.
	short := Limits{Timeout: 100 * time.Millisecond, MemoryPages: 64, Instances: 2}
	long := Limits{Timeout: 10 * time.Second, MemoryPages: 64, Instances: 2}
	m := e.load(t, zoo("zoo"), Options{Name: "zoo", Limits: short})
	deep := e.load(t, zoo("zoo"), Options{Name: "zoo", Limits: long})
	gozoo := goPlugin(t, "host/wasm/testdata/zoo/go")
	g := e.load(t, gozoo, Options{Name: "gozoo", Limits: Limits{Timeout: 10 * time.Second, MemoryPages: 256}})
	gspin := e.load(t, gozoo, Options{Name: "gozoo", Limits: Limits{Timeout: 100 * time.Millisecond}})
	good := e.load(t, goPlugin(t, "host/wasm/testdata/conformance/go"), Options{Name: "conformance", Grant: abi.Capabilities})
	ctx := context.Background()
	noop := configure(t, m, "noop", "")
	healthy := configure(t, good, "temp_high", "")
	ev := call(t, sampleEvent)
	// Unbounded recursion meets the plugin's stack bound (a quarter of its
	// 64 pages) compiled; wazero's interpreter stops it first, at its own
	// 2,000 frames.
	recurseCause, recurseText := CauseMemory, "call stack past its bound of 1024 KiB"
	if interpreter {
		recurseText = "call stack overflow"
	}

	tests := []struct {
		mod   *Module
		fn    string
		cause Cause
		text  string
	}{
		{m, "spin", CauseDeadline, "passed; the guest stopped"},
		{m, "tree", CauseDeadline, "passed; the guest stopped"},
		{deep, "recurse", recurseCause, recurseText},
		{m, "unreachable", CauseTrap, "unreachable"},
		{deep, "memory", CauseMemory, "memory.grow refused at 50 of 64 pages"}, // growing 3 MiB took over 100ms on a loaded CI machine
		{m, "badptr", CauseABI, "outside the guest's"},
		{m, "large", CauseABI, "result of 2097152 bytes over the limit of 1048576"},
		{g, "panic", CausePlugin, "panic: boom"},
		{g, "nil_map", CausePlugin, "panic: assignment to entry in nil map"},
		{g, "oom", CauseMemory, "memory.grow refused at 256 of 256 pages"},
		{gspin, "spin", CauseDeadline, "passed; the guest stopped"},
	}
	seen := map[*Module]map[string]uint64{} // the failures callers saw, by module and cause
	for _, tc := range tests {
		t.Run(tc.mod.Name()+"/"+tc.fn, func(t *testing.T) {
			h := configure(t, tc.mod, tc.fn, "")
			defer h.Close()
			start := time.Now()
			var err error
			if h.Kind() == abi.KindCondition {
				_, err = h.When(ctx, ev)
			} else {
				_, err = h.Act(ctx, ev)
			}
			took := time.Since(start)
			var ce *CallError
			if errors.As(err, &ce) && tc.cause == CauseDeadline && ce.Cause == CauseFuel {
				// The fuel budget derived from the deadline ran out first: a
				// tight loop can spend it faster than the deadline passes,
				// and it is the stop that works while a garbage collection
				// holds the timer.
				tc.cause, tc.text = CauseFuel, "used its budget"
			}
			if errors.As(err, &ce) {
				if seen[tc.mod] == nil {
					seen[tc.mod] = map[string]uint64{}
				}
				seen[tc.mod][ce.Cause.String()]++
			}
			if !errors.As(err, &ce) || ce.Cause != tc.cause || !strings.Contains(ce.Text, tc.text) ||
				ce.Plugin != tc.mod.Name() || ce.Function != tc.fn {
				t.Fatalf("err = %v (cause %v); want %v %q", err, causeOf(err), tc.cause, tc.text)
			}
			if !strings.HasPrefix(err.Error(), "plugin "+tc.mod.Name()+": "+tc.fn+": ") {
				t.Errorf("error %q does not name the plugin and function", err)
			}
			if ce.Cause == CauseDeadline || ce.Cause == CauseFuel {
				t.Logf("%s/%s: stopped by %v; deadline %v, returned after %v (%v past the deadline)",
					tc.mod.Name(), tc.fn, ce.Cause, tc.mod.Limits().Timeout, took.Round(time.Microsecond),
					(took - tc.mod.Limits().Timeout).Round(time.Microsecond))
			}
			// The module and every other keep serving.
			if ok, err := noop.When(ctx, ev); err != nil || ok {
				t.Errorf("zoo noop after %s: %v, %v", tc.fn, ok, err)
			}
			if ok, err := healthy.When(ctx, ev); err != nil || !ok {
				t.Errorf("conformance after %s: %v, %v", tc.fn, ok, err)
			}
		})
	}
	// Each module counts its failed calls by cause: what its callers saw.
	for _, mod := range []*Module{m, deep, g, gspin} {
		if got, want := mod.Failures(), seen[mod]; !maps.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s failures %v; its callers saw %v", mod.Name(), got, want)
		}
	}
	if f := good.Failures(); len(f) != 0 {
		t.Errorf("conformance failures %v; want none", f)
	}

	t.Run("wasi has no file system or environment", func(t *testing.T) {
		fs := configure(t, m, "fs", "")
		if refused, err := fs.When(ctx, ev); err != nil || !refused {
			t.Errorf("path_open through WASI: refused=%v, %v", refused, err)
		}
		rf := configure(t, g, "read_file", "")
		_, err := rf.Act(ctx, ev)
		var ce *CallError
		if !errors.As(err, &ce) || ce.Cause != CausePlugin || !strings.HasPrefix(ce.Text, "read_file: open /etc/passwd: ") {
			t.Errorf("reading /etc/passwd: %v", err)
		}
		env := configure(t, g, "env", "")
		out, err := env.Act(ctx, ev)
		if err != nil || string(out) != "HOME= PATH= args=0" {
			t.Errorf("environment visible to the guest: %q, %v", out, err)
		}
	})

	// The Go runtime's out-of-memory report went to the log, line by line,
	// tagged with the plugin and the stream.
	if !e.logs.has("fatal error: out of memory: plugin=gozoo stream=stderr") {
		t.Error("the guest's stderr did not reach the log tagged with its plugin")
	}
	if r := m.Replaced() + deep.Replaced(); r != 6 { // spin, tree, unreachable, badptr; recurse, memory
		t.Errorf("zoo: %d instances replaced; want 6", r)
	}
	for _, mod := range []*Module{m, deep, g, gspin, good} {
		if mod.Live() > mod.Limits().Instances {
			t.Errorf("%s: %d live instances over its limit %d", mod.Name(), mod.Live(), mod.Limits().Instances)
		}
		mod.Close(ctx)
	}
	if n := e.rt.LiveInstances(); n != 0 {
		t.Errorf("%d instances alive after closing every module", n)
	}
	e.rt.Close(ctx)
	if n := settle(t, base); n > base {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d after, %d before\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

func causeOf(err error) Cause {
	var ce *CallError
	if errors.As(err, &ce) {
		return ce.Cause
	}
	return 0
}

// TestAllocCannot: a plugin whose ruled_alloc answers 0 — the ABI's
// "cannot", its memory capped below the input — fails the call as a
// memory limit naming the input's size, not as a broken ABI (issue 38).
func TestAllocCannot(t *testing.T) {
	e := newEnv(t)
	m := e.load(t, zoo("zoo"), Options{Name: "zoo", Limits: Limits{Timeout: 10 * time.Second, MemoryPages: 64, Instances: 1}})
	h := configure(t, m, "noop", "")
	defer h.Close()
	big := `{"pad":"` + strings.Repeat("x", 5<<20) + `"}` // over the plugin's 4 MiB
	_, err := h.When(context.Background(), call(t, big))
	var ce *CallError
	if !errors.As(err, &ce) || ce.Cause != CauseMemory || !strings.Contains(ce.Text, "answered 0: the plugin cannot hold an input of") {
		t.Fatalf("a 5 MiB input to a 4 MiB plugin: %v; want a memory limit saying the plugin cannot hold it", err)
	}
	if _, err := h.When(context.Background(), call(t, `{}`)); err != nil {
		t.Errorf("a small input after it: %v", err)
	}
}
