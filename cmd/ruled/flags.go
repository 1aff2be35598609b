package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/wasm"
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
			if err == nil {
				io.WriteString(out.w, held)
			}
			// A mistake is said once, with what was meant, not under the
			// whole usage (a hundred lines for run): -h shows that.
		}
		if err != nil {
			return nil, usageError(flagMistake(fs, err))
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// flagMistake words a flag the verb does not know as a did-you-mean and
// a pointer to -h; any other mistake as the flag package says it.
func flagMistake(fs *flag.FlagSet, err error) string {
	const unknown = "flag provided but not defined: -"
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, unknown)
	if !ok {
		return msg
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	msg = "unknown flag --" + name
	if m := rules.Suggest(name, names); m != "" {
		msg += " (did you mean --" + m + "?)"
	}
	return msg + "; ruled " + fs.Name() + " -h lists the flags"
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

// cacheFlags are the flags of a verb that compiles plugins without a
// daemon (call, lint, inspect, deploy): --cache, the compilation cache
// itself, and --data, which means what it means everywhere — a daemon's
// data directory — here for its cache. The answer is --cache, else
// $RULED_CACHE, else --data's cache, else the user's cache directory's,
// so a second call is fast.
func cacheFlags(fs *flag.FlagSet) func() string {
	cache := fs.String("cache", os.Getenv("RULED_CACHE"), "the compilation cache directory (default $RULED_CACHE, else --data's, else the user's cache directory)")
	data := fs.String("data", os.Getenv("RULED_DATA"), "a daemon's data directory, to share its compilation cache when it is this user's (default $RULED_DATA)")
	return func() string {
		switch {
		case *cache != "":
			return *cache
		case *data != "" && ownDir(*data):
			return wasm.DefaultCacheDir(*data)
		}
		// A daemon's data directory another user owns (root inspecting
		// the ruled user's /var/lib/ruled) is not written to: files root
		// leaves there are files the daemon cannot read.
		return wasm.DefaultCacheDir(defaultDataDir())
	}
}

// defaultDataDir is where the CLI keeps its compilation cache when neither
// --cache nor --data is given: the user's cache directory.
func defaultDataDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "ruled")
	}
	return filepath.Join(os.TempDir(), "ruled")
}
