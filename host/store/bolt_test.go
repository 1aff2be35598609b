package store_test

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/store"
)

func TestBoltReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.db")
	b := openBolt(t, path, store.BoltOptions{})
	if err := first(b.HSet(pending, "run-1", `{"id":"run-1"}`), b.Set(ctx, "p", "k", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBolt(t, path, store.BoltOptions{})
	got, err := b.HGetAll(pending)
	if err != nil || got["run-1"] != `{"id":"run-1"}` {
		t.Errorf("HGetAll after reopen = %q, %v", got, err)
	}
	if v, found, err := b.Get(ctx, "p", "k"); err != nil || !found || string(v) != "v" {
		t.Errorf("Get after reopen = %q, %v, %v", v, found, err)
	}
}

func TestBoltOpenErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, path, want string
	}{
		{"missing directory", filepath.Join(dir, "nope", "ruled.db"), "no such file or directory"},
		{"a directory", dir, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := store.OpenBolt(tc.path, store.BoltOptions{})
			if err == nil {
				b.Close()
				t.Fatal("OpenBolt succeeded")
			}
			if !strings.HasPrefix(err.Error(), "store: open "+tc.path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q; want it to start with %q and contain %q", err, "store: open "+tc.path, tc.want)
			}
		})
	}
}

func TestBoltHSetValueType(t *testing.T) {
	b := openBolt(t, filepath.Join(t.TempDir(), "ruled.db"), store.BoltOptions{})
	err := b.HSet(pending, "a", 42)
	if err == nil || !strings.Contains(err.Error(), "value of type int") {
		t.Errorf("HSet(int) = %v; want a type error", err)
	}
}

// TestBoltLocked: a second open of the same file, here from this process,
// fails after its lock timeout with ErrLocked rather than waiting forever.
func TestBoltLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.db")
	openBolt(t, path, store.BoltOptions{})
	start := time.Now()
	b, err := store.OpenBolt(path, store.BoltOptions{LockTimeout: 100 * time.Millisecond})
	if err == nil {
		b.Close()
		t.Fatal("second OpenBolt succeeded")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("second OpenBolt took %s with a 100ms lock timeout", took)
	}
	if !errors.Is(err, store.ErrLocked) {
		t.Errorf("got %v; want ErrLocked", err)
	}
	if runtime.GOOS == "linux" && !strings.Contains(err.Error(), fmt.Sprintf("pid %d, this process", os.Getpid())) {
		t.Errorf("error %q does not name this process", err)
	}
	t.Log(err)
}

// The child process of TestBoltKill: it opens the store, writes a pending
// record, says so on stdout and waits to be killed.
func TestBoltChild(t *testing.T) {
	path := os.Getenv("STORE_TEST_CHILD_DB")
	if path == "" {
		t.Skip("the child process of TestBoltKill")
	}
	b, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if err := first(b.HSet(pending, "run-1", `{"id":"run-1"}`), b.Set(ctx, "p", "k", []byte("v"))); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("acked")
	select {} // until SIGKILL
}

// TestBoltKill: another process holds the file, so opening it fails fast
// naming that process; the holder is killed with SIGKILL right after a write
// returned, and the write is there when the file is opened again.
func TestBoltKill(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL")
	}
	path := filepath.Join(t.TempDir(), "ruled.db")
	child := exec.Command(os.Args[0], "-test.run=^TestBoltChild$", "-test.count=1")
	child.Env = append(os.Environ(), "STORE_TEST_CHILD_DB="+path)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "acked\n" {
		t.Fatalf("child said %q, %v", line, err)
	}

	_, err = store.OpenBolt(path, store.BoltOptions{LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("open while the child holds the file: %v; want ErrLocked", err)
	}
	if runtime.GOOS == "linux" && !strings.Contains(err.Error(), fmt.Sprintf("pid %d,", child.Process.Pid)) {
		t.Errorf("error %q does not name the child, pid %d", err, child.Process.Pid)
	}
	t.Log(err)

	if err := child.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = child.Wait()
	b := openBolt(t, path, store.BoltOptions{LockTimeout: 5 * time.Second})
	got, err := b.HGetAll(pending)
	if err != nil || got["run-1"] != `{"id":"run-1"}` {
		t.Errorf("pending after SIGKILL = %q, %v; want the acknowledged record", got, err)
	}
	if v, found, err := b.Get(ctx, "p", "k"); err != nil || !found || string(v) != "v" {
		t.Errorf("kv after SIGKILL = %q, %v, %v", v, found, err)
	}
}

// TestBoltIdle: once written, a store that is only read (and asked to
// remove what is not there, and refused a write over quota) leaves its file
// byte for byte alone, and has started no goroutine.
func TestBoltIdle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.db")
	goroutines := runtime.NumGoroutine()
	b := openBolt(t, path, store.BoltOptions{KVQuota: store.Quota{Keys: 1}})
	if err := first(b.HSet(pending, "run-1", "x"), b.Set(ctx, "p", "k", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, path)
	time.Sleep(20 * time.Millisecond) // so an mtime change would show even on a coarse clock
	for range 100 {
		if _, err := b.HGetAll(pending); err != nil {
			t.Fatal(err)
		}
		_, _ = b.HGetAll("ruled:nothing")
		_, _, _ = b.Get(ctx, "p", "k")
		_, _, _ = b.Get(ctx, "p", "missing")
		_, _, _ = b.Get(ctx, "nobody", "k")
		if err := first(b.HDel(pending, "missing"), b.HDel("ruled:nothing", "x"),
			b.Delete(ctx, "p", "missing"), b.Delete(ctx, "nobody", "k")); err != nil {
			t.Fatal(err)
		}
		if err := b.Set(ctx, "p", "over", nil); err == nil {
			t.Fatal("Set over quota succeeded")
		}
	}
	time.Sleep(200 * time.Millisecond)
	if after := snapshot(t, path); after != before {
		t.Errorf("the file changed while idle:\nbefore %s\nafter  %s", before, after)
	}
	if n := runtime.NumGoroutine(); n > goroutines { // fewer: an earlier test's went away
		t.Errorf("%d goroutines with the store open; %d before", n, goroutines)
	}
}

func snapshot(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("size %d mtime %s sha256 %x", fi.Size(), fi.ModTime().Format(time.RFC3339Nano), sha256.Sum256(data))
}

// TestBoltHScan: HScan hands over what HGetAll returns, field by field,
// and stops at the first error its function returns.
func TestBoltHScan(t *testing.T) {
	b := openBolt(t, filepath.Join(t.TempDir(), "ruled.db"), store.BoltOptions{})
	for i := range 50 {
		if err := b.HSet(pending, fmt.Sprintf("run-%02d", i), fmt.Sprintf(`{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	want, err := b.HGetAll(pending)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	if err := b.HScan(pending, func(k, v []byte) error { got[string(k)] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("HScan saw %v\nHGetAll %v", got, want)
	}
	stop := errors.New("enough")
	n := 0
	err = b.HScan(pending, func(k, v []byte) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Errorf("HScan after its function's error: %v after %d fields; want %v after 3", err, n, stop)
	}
	if err := b.HScan("ruled:nothing", func(k, v []byte) error { return errors.New("called") }); err != nil {
		t.Errorf("HScan of a missing hash: %v", err)
	}
}

func TestBoltHGet(t *testing.T) {
	b := openBolt(t, filepath.Join(t.TempDir(), "ruled.db"), store.BoltOptions{})
	if err := b.HSet(pending, "run-1", `{"n":1}`); err != nil {
		t.Fatal(err)
	}
	if err := b.HSet(pending, "run-2", ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key, field string
		want       string
		ok         bool
	}{
		{pending, "run-1", `{"n":1}`, true},
		{pending, "run-2", "", true}, // there, and empty
		{pending, "run-3", "", false},
		{"ruled:nothing", "run-1", "", false},
	} {
		v, ok, err := b.HGet(tc.key, tc.field)
		if err != nil || ok != tc.ok || string(v) != tc.want {
			t.Errorf("HGet(%q, %q) = %q, %v, %v; want %q, %v", tc.key, tc.field, v, ok, err, tc.want, tc.ok)
		}
	}
	// The value is the caller's: a write after the read does not reach it.
	v, _, _ := b.HGet(pending, "run-1")
	if err := b.HSet(pending, "run-1", `{"n":2}`); err != nil {
		t.Fatal(err)
	}
	if string(v) != `{"n":1}` {
		t.Errorf("a value read before a write changed to %q", v)
	}
}

// TestBoltHashPagesFill: fields written past a hash's last one (pending
// records by run id, in time order) fill its pages (0.5 in use at bbolt's
// default); fields written before or among the others keep its half-full
// split, which leaves room for the next. The figures are bbolt's own count of its leaf pages' bytes.
func TestBoltHashPagesFill(t *testing.T) {
	value := []byte(strings.Repeat("x", 100))
	tests := []struct {
		name     string
		field    func(i int) string
		min, max float64 // the share of the leaf pages' bytes in use
	}{
		{"in order", func(i int) string { return fmt.Sprintf("r%08d", i) }, 0.8, 1},
		{"in order, many a commit", func(i int) string { return fmt.Sprintf("r%08d", i) }, 0.8, 1},
		// Full pages here would split again at each insert before
		// them: 0.13 in use.
		{"reversed", func(i int) string { return fmt.Sprintf("r%08d", 1e6-i) }, 0.4, 0.7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := openBolt(t, filepath.Join(t.TempDir(), "ruled.db"), store.BoltOptions{})
			store.SetNoSync(b, true)
			many := strings.Contains(tt.name, "many")
			var fields []string
			var values [][]byte
			for i := range 2000 {
				if !many {
					if err := b.HSet(pending, tt.field(i), value); err != nil {
						t.Fatal(err)
					}
					continue
				}
				fields, values = append(fields, tt.field(i)), append(values, value)
				if len(fields) == 50 {
					if err := b.HSetMany(pending, fields, values); err != nil {
						t.Fatal(err)
					}
					fields, values = nil, nil
				}
			}
			alloc, inuse := store.HashPages(b, pending)
			share := float64(inuse) / float64(alloc)
			t.Logf("%d of %d bytes in use: %.2f", inuse, alloc, share)
			if share < tt.min || share > tt.max {
				t.Errorf("the pages are %.2f in use; want %.2f to %.2f", share, tt.min, tt.max)
			}
		})
	}
}
