package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// parseInterleaved parses flags that may come before, between or after the
// positional arguments ("ruled call x.wasm fn --config a=1"), which the flag
// package alone stops at.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// defaultDataDir is where the CLI keeps its compilation cache when no --data
// is given: the user's cache directory, so a second call is fast.
func defaultDataDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "ruled")
	}
	return filepath.Join(os.TempDir(), "ruled")
}
