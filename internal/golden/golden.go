package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files under testdata")

// Check compares got with testdata/name, or writes it there with -rewrite.
func Check(t testing.TB, name, got string) {
	t.Helper()
	check(t, filepath.Join("testdata", name), got, func(path, want string) string {
		return fmt.Sprintf("%s differs:\n--- got\n%s--- want\n%s", path, got, want)
	})
}

// CheckPath is Check for a file outside testdata (a published schema, a
// generated reference page): path is relative to the test's package.
func CheckPath(t testing.TB, path, got string) {
	t.Helper()
	check(t, path, got, func(path, _ string) string {
		return path + " is not what generates it: run go test -rewrite in this package and commit the result"
	})
}

// check is Check and CheckPath: with -rewrite, got goes to path; else a
// path that differs is an error, differs saying how.
func check(t testing.TB, path, got string, differs func(path, want string) string) {
	t.Helper()
	if *rewrite {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if got != string(want) {
		t.Error(differs(path, string(want)))
	}
}
