package regular

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "rules.yaml")
	os.WriteFile(plain, []byte("- id: a\n"), 0o644)
	link := filepath.Join(dir, "link.yaml")
	os.Symlink(plain, link)
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	os.Symlink("/dev/zero", zero)
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, make([]byte, 2048), 0o644)
	tests := []struct {
		name, path string
		want       string // an error containing it; "" for the contents
	}{
		{"a regular file", plain, ""},
		{"a link to one", link, ""},
		{"a FIFO, refused without waiting for a writer", fifo, "not a regular file"},
		{"/dev/zero through a link", zero, "not a regular file"},
		{"a directory", dir, "not a regular file"},
		{"over the limit", big, "over the limit of 1024"},
		{"missing", filepath.Join(dir, "nope"), "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var b []byte
			var err error
			go func() { b, err = ReadFile(tc.path, 1024); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("ReadFile blocked")
			}
			switch {
			case tc.want == "" && (err != nil || string(b) != "- id: a\n"):
				t.Errorf("ReadFile = %q, %v", b, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("ReadFile error %v; want one containing %q", err, tc.want)
			}
			if strings.Contains(tc.want, "regular") && !errors.Is(err, ErrNotRegular) {
				t.Errorf("%v is not ErrNotRegular", err)
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.wasm")
	for _, want := range []string{"first", "second, longer than the first"} {
		if err := WriteFile(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary file is left behind: %v", err)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "dir"), []byte("x")); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}
