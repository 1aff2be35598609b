package wasm

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
)

// TestSDKFootprint measures what a plugin costs by SDK, for the SDK page's
// table (sdk/README.md): the module's size, its compile time on a cold
// cache, and the RSS each instance adds, read from /proc while 8 instances
// of the conformance plugin live at once. RULED_PERF=1 runs it (make
// bench); the figures are this machine's, printed, not asserted.
func TestSDKFootprint(t *testing.T) {
	if os.Getenv("RULED_PERF") == "" {
		t.Skip("RULED_PERF=1 measures")
	}
	ctx := context.Background()
	for _, sdk := range []sdkBuild{sdks[3], sdks[2], sdks[1], sdks[0]} { // Rust, C and AssemblyScript first: RSS only grows
		path := sdk.path(t)
		info, _ := os.Stat(path)
		rt, err := NewRuntime(ctx, Config{CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		before := rss(t)
		m, err := rt.LoadFile(ctx, path, Options{Grant: abi.Capabilities, Limits: Limits{Instances: 8}})
		if err != nil {
			t.Fatal(err)
		}
		loaded := rss(t)
		var held []*instance
		for range 8 {
			in, err := m.acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, in)
		}
		eight := rss(t)
		for _, in := range held {
			m.release(in)
		}
		t.Logf("footprint: %s plugin: module %d KB, compiled in %v, loaded +%d MB RSS, %d KB RSS an instance",
			sdk.name, info.Size()>>10, m.Timings().Compile.Round(1e6), (loaded-before)>>20, (eight-loaded)/7>>10)
		rt.Close(ctx)
	}
}

// rss is this process's resident set in bytes.
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
