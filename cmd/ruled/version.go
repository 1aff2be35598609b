package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/ruled-dev/ruled/internal/release"
)

// cmdVersion is `ruled version [--json]` (and `ruled --version`): what
// this build is — its version, commit, Go and platform, the plugin ABI it
// speaks and the SDK releases built for it (internal/release).
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", stderr)
	asJSON := fs.Bool("json", false, "print it as JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: ruled version [--json]\n\nWhat this build is: its version, commit, Go and platform, the plugin ABI it speaks and the SDKs that go with it.")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("version takes no arguments")
	}
	in := release.Read()
	if *asJSON {
		return printJSON(stdout, in)
	}
	fmt.Fprintln(stdout, in.String())
	langs := make([]string, 0, len(in.SDKs))
	for l := range in.SDKs {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	for _, l := range langs {
		fmt.Fprintf(stdout, "  SDK %-15s %s\n", l, in.SDKs[l])
	}
	if in.Time != "" {
		fmt.Fprintf(stdout, "  committed %s\n", in.Time)
	}
	return nil
}
