package instrument

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// goReactor builds testdata/goreactor for wasip1, skipping when go is not on
// PATH.
func goReactor(tb testing.TB) []byte {
	tb.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("go is not on PATH")
	}
	out := filepath.Join(tb.TempDir(), "goreactor.wasm")
	cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-o", out, "./testdata/goreactor")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building the Go reactor: %v\n%s", err, msg)
	}
	return readFile(tb, out)
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// instantiateGo instantiates a Go wasip1 reactor the way the host does: no
// start function at instantiation, then _initialize called explicitly.
func instantiateGo(tb testing.TB, e engine, wasm []byte) api.Module {
	tb.Helper()
	ctx := context.Background()
	r := e.runtime(tb)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	m, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := m.ExportedFunction("_initialize").Call(ctx); err != nil {
		tb.Fatalf("_initialize: %v", err)
	}
	return m
}

func TestGoModule(t *testing.T) {
	orig := goReactor(t)
	m := mustInstrument(t, orig, Options{MemoryPages: 1024})
	t.Logf("%d bytes -> %d bytes, %d functions, pages %d..%d", len(orig), len(m.Bytes), m.Functions, m.MinPages, m.MaxPages)
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			mod := instantiateGo(t, e, m.Bytes)
			g := fuel(t, mod)
			t.Logf("_initialize took %d fuel", uint64(1<<63-1)-g.Get())
			for _, c := range []struct {
				fn   string
				args []uint64
				want uint64
			}{
				{"add", []uint64{2, 3}, 5},
				{"add", []uint64{api.EncodeI32(-7), 3}, api.EncodeI32(-4)},
				{"work", []uint64{1000}, 499500},
				{"work", []uint64{5000}, 12497500},
			} {
				got, err := call(mod, c.fn, nil, c.args...)
				if err != nil || got[0] != c.want {
					t.Errorf("%s%v: got %v, %v; want %v", c.fn, c.args, got, err, c.want)
				}
			}
			g.Set(10000)
			if _, err := call(mod, "work", nil, 100000); err == nil {
				t.Errorf("work with 10000 fuel: got no error; want a trap")
			}
		})
	}
}

func TestGoModuleSpinStops(t *testing.T) {
	mod := instantiateGo(t, compiler, mustInstrument(t, goReactor(t), Options{}).Bytes)
	fuel(t, mod).Set(1_000_000)
	if _, err := call(mod, "spin", nil); err == nil {
		t.Errorf("got no error; want a trap")
	}
}
