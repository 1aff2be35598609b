package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/wasm"
)

func cmdInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plugin inspect", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	cacheDir := cacheFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("plugin inspect needs one module")
	}
	rt, err := wasm.NewRuntime(ctx, wasm.Config{CacheDir: cacheDir()})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	// Inspecting grants everything: it reads the description and calls
	// nothing, and an operator inspects a plugin to learn what to grant.
	m, err := rt.LoadFile(ctx, pos[0], wasm.Options{Grant: abi.Capabilities, Limits: wasm.Limits{Instances: 1}})
	if err != nil {
		return err
	}
	d := m.Descriptor()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Digest string `json:"digest"`
			Size   int    `json:"size"`
			ABI    string `json:"abi"`
			abi.Descriptor
		}{m.Digest(), m.Size(), abi.VersionString(m.ABIVersion()), d})
	}
	fmt.Fprintf(stdout, "module    %s\n", pos[0])
	fmt.Fprintf(stdout, "digest    sha256:%s\n", m.Digest())
	fmt.Fprintf(stdout, "size      %d bytes\n", m.Size())
	fmt.Fprintf(stdout, "abi       v%s\n", abi.VersionString(m.ABIVersion()))
	if d.Name != "" {
		fmt.Fprintf(stdout, "plugin    %s %s\n", d.Name, d.Version)
	}
	var needs []string
	seen := map[abi.Capability]bool{}
	for _, kind := range []string{"condition", "action"} {
		for _, f := range d.Functions {
			if f.Kind != kind {
				continue
			}
			fmt.Fprintf(stdout, "%-9s %s", kind, f.Name)
			if f.Doc != "" {
				fmt.Fprintf(stdout, "  - %s", f.Doc)
			}
			fmt.Fprintln(stdout)
			if f.Example != "" {
				fmt.Fprintf(stdout, "          example: %s\n", f.Example)
			}
			if len(f.Needs) > 0 {
				var ns []string
				for _, c := range f.Needs {
					ns = append(ns, string(c))
					if !seen[c] {
						seen[c] = true
						needs = append(needs, string(c))
					}
				}
				fmt.Fprintf(stdout, "          needs: %s\n", strings.Join(ns, ", "))
			}
		}
	}
	if len(needs) == 0 {
		needs = []string{"none"}
	}
	fmt.Fprintf(stdout, "capabilities %s\n", strings.Join(needs, ", "))
	return nil
}
