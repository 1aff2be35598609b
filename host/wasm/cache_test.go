package wasm

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPruneCache(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	sub := filepath.Join(dir, "wazero-v1-amd64")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	// Five files of 100 bytes written an hour apart: a is the oldest.
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		p := filepath.Join(sub, name)
		if err := os.WriteFile(p, make([]byte, 100), 0o600); err != nil {
			t.Fatal(err)
		}
		at := now.Add(time.Duration(i-5) * time.Hour)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		max   int64
		freed int64
		left  []string
	}{
		{1000, 0, []string{"a", "b", "c", "d", "e"}},
		{500, 0, []string{"a", "b", "c", "d", "e"}},
		{350, 200, []string{"c", "d", "e"}},
		{0, 300, nil},
	}
	for _, tc := range tests {
		freed, err := pruneCache(dir, tc.max)
		if err != nil || freed != tc.freed {
			t.Fatalf("pruneCache(%d) = %d, %v; want %d", tc.max, freed, err, tc.freed)
		}
		var left []string
		entries, _ := os.ReadDir(sub)
		for _, e := range entries {
			left = append(left, e.Name())
		}
		if len(left) != len(tc.left) {
			t.Fatalf("after pruneCache(%d): %v; want %v", tc.max, left, tc.left)
		}
		for i := range left {
			if left[i] != tc.left[i] {
				t.Fatalf("after pruneCache(%d): %v; want %v", tc.max, left, tc.left)
			}
		}
	}
}

// A runtime started on a cache over its bound prunes it, and a module
// whose code was removed compiles again.
func TestRuntimePrunesItsCache(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "stale")
	if err := os.WriteFile(old, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-24 * time.Hour)
	os.Chtimes(old, at, at)
	r, err := NewRuntime(t.Context(), Config{CacheDir: dir, CacheMaxBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(t.Context())
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the stale file is still there: %v", err)
	}
}
