package instrument

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// watFlags are the wat2wasm (wabt 1.0.32) flags the committed .wasm files
// were built with. --enable-all is avoided: it turns on typed function
// references, under which ref.func no longer has type funcref.
var watFlags = []string{"--enable-tail-call", "--enable-threads"}

//go:generate sh -c "for f in testdata/*.wat; do wat2wasm --enable-tail-call --enable-threads -o $DOLLAR{f%.wat}.wasm $DOLLAR{f}; done"

// TestTestdataUpToDate rebuilds every testdata/*.wat and checks that the
// committed .wasm matches byte for byte. Without wat2wasm it skips, except
// under CI=true where the check must not silently vanish.
func TestTestdataUpToDate(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("wat2wasm is not on PATH and CI=true")
		}
		t.Skip("wat2wasm is not on PATH")
	}
	wats, _ := filepath.Glob(filepath.Join("testdata", "*.wat"))
	if len(wats) == 0 {
		t.Fatal("no testdata/*.wat")
	}
	for _, wat := range wats {
		out := filepath.Join(t.TempDir(), "out.wasm")
		args := append(append([]string(nil), watFlags...), "-o", out, wat)
		if msg, err := exec.Command(wat2wasm, args...).CombinedOutput(); err != nil {
			t.Errorf("wat2wasm %s: %v\n%s", wat, err, msg)
			continue
		}
		committed := strings.TrimSuffix(wat, ".wat") + ".wasm"
		if !bytes.Equal(readFile(t, out), readFile(t, committed)) {
			t.Errorf("%s is stale: rebuild it with go generate", committed)
		}
	}
}
