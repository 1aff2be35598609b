package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// parseInterleaved parses flags that may come before, between or after the
// positional arguments ("ruled call x.wasm fn --config a=1"), which the flag
// package alone stops at. A -h or --help is a helpError carrying the
// verb's usage, for run to print on stdout; any other problem is a
// usageError, its usage printed on stderr.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		out, _ := fs.Output().(*flagOutput)
		if out != nil {
			out.hold = true
		}
		err := fs.Parse(args)
		if out != nil {
			out.hold = false
			held := out.buf.String()
			out.buf.Reset()
			if errors.Is(err, flag.ErrHelp) {
				return nil, helpError(held)
			}
			io.WriteString(out.w, held)
		}
		if err != nil {
			return nil, usageError(err.Error())
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// newFlagSet is a verb's flags. What the flag package prints (the usage)
// is held until parseInterleaved knows whether it answers a -h (stdout) or
// a mistake (stderr).
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(&flagOutput{w: stderr})
	return fs
}

// flagOutput holds a flag set's output while parseInterleaved parses;
// otherwise (a verb printing its usage for a missing argument) it writes
// through.
type flagOutput struct {
	w    io.Writer
	hold bool
	buf  bytes.Buffer
}

func (o *flagOutput) Write(p []byte) (int, error) {
	if o.hold {
		return o.buf.Write(p)
	}
	return o.w.Write(p)
}

// helpError is a verb's usage, asked for with -h or --help: printed on
// stdout, and the exit code is 0.
type helpError string

func (e helpError) Error() string { return "help requested" }

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
