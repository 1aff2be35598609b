package reload_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/reload"
)

type logs struct{}

func (logs) Warn(string, ...any) {}

// TestWatchDebounces: a file written in several operations is reloaded
// once the writes pause, not once a write; a hidden file and a file of
// another kind are never reloads; a file the reload puts off comes back
// when it said.
func TestWatchDebounces(t *testing.T) {
	dir := t.TempDir()
	wasm := filepath.Join(dir, "p.wasm")
	var mu sync.Mutex
	var calls [][]string
	wasmSeen := 0
	done := make(chan struct{})
	w, err := reload.Watch([]string{dir}, 200*time.Millisecond, func(changed map[string]bool) map[string]time.Time {
		var names []string
		for p := range changed {
			names = append(names, filepath.Base(p))
		}
		sort.Strings(names)
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, names)
		if !changed[wasm] {
			return nil
		}
		wasmSeen++
		switch wasmSeen {
		case 1: // backing off: try again in 300 ms
			return map[string]time.Time{wasm: time.Now().Add(300 * time.Millisecond)}
		case 2:
			close(done)
		}
		return nil
	}, logs{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 5 { // an editor's several writes
		os.WriteFile(filepath.Join(dir, "a.yaml"), []byte{byte('a' + i)}, 0o600)
	}
	os.WriteFile(filepath.Join(dir, ".a.yaml.swp"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600)
	os.WriteFile(wasm, []byte("\x00asm"), 0o600)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("reloads %v; want p.wasm twice (put off once)", calls)
	}
	mu.Lock()
	defer mu.Unlock()
	yaml := 0
	for _, c := range calls {
		for _, n := range c {
			switch n {
			case "a.yaml":
				yaml++
			case "p.wasm":
			default:
				t.Errorf("reloaded %q (calls %v)", n, calls)
			}
		}
	}
	if yaml == 0 || yaml >= 5 {
		t.Errorf("a.yaml in %d reloads for its 5 writes; want fewer, and at least one (calls %v)", yaml, calls)
	}
}

// TestRefresh: a kick is a call, kicks while one runs fold into one more,
// and Close waits for the call in progress.
func TestRefresh(t *testing.T) {
	var mu sync.Mutex
	n := 0
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	r := reload.Refresh(0, func() {
		started <- struct{}{}
		<-release
		mu.Lock()
		n++
		mu.Unlock()
	})
	r.Kick()
	<-started
	r.Kick()
	r.Kick()
	r.Kick() // three kicks while the first call runs: one more call
	release <- struct{}{}
	<-started
	release <- struct{}{}
	select {
	case <-started:
		t.Fatal("a third call; the kicks should have folded into one")
	case <-time.After(100 * time.Millisecond):
	}
	r.Close()
	mu.Lock()
	defer mu.Unlock()
	if n != 2 {
		t.Errorf("%d calls; want 2", n)
	}
}

func ExampleRelevant() {
	for _, p := range []string{"rules/low-battery.yaml", "plugins/sms.wasm", "rules/.low-battery.yaml.swp", "README.md", "plugins/sms.wasm.sig", "notes.sig"} {
		fmt.Println(p, reload.Relevant(p))
	}
	// Output:
	// rules/low-battery.yaml true
	// plugins/sms.wasm true
	// rules/.low-battery.yaml.swp false
	// README.md false
	// plugins/sms.wasm.sig true
	// notes.sig false
}
