package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/sdk/ruletest/scenario"
)

const testUsage = `Usage: ruled test [-v] [-run REGEXP] SCENARIO.yaml|DIR...

Runs scenario files: each loads rules and plugins into a fresh daemon on a
virtual clock and takes its steps — events at times, clock advances,
restarts, plugin and rule replacements, operator commands, replays of
captures — checking its expectations. Hours of rule time take
milliseconds; nothing sleeps. A directory stands for its *.yaml files.
Output reads like go test's; the exit code is 1 when a scenario failed.

Flags:
`

func cmdTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("test", stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), testUsage); fs.PrintDefaults() }
	verbose := fs.Bool("v", false, "print every scenario, its notes, and the daemon's log of failed ones")
	run := fs.String("run", "", "only scenarios whose name matches this regular expression")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError("test needs scenario files or directories")
	}
	var match *regexp.Regexp
	if *run != "" {
		if match, err = regexp.Compile(*run); err != nil {
			return usageError("-run: " + err.Error())
		}
	}
	var files []string
	for _, p := range pos {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		m, _ := filepath.Glob(filepath.Join(p, "*.yaml"))
		if len(m) == 0 {
			return fmt.Errorf("%s: no *.yaml scenario files", p)
		}
		files = append(files, m...)
	}
	failed := 0
	for _, f := range files {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ss, err := scenario.ParseFile(f)
		if err != nil {
			fmt.Fprintf(stdout, "FAIL\t%s\t[parse: %v]\n", f, err)
			failed++
			continue
		}
		began := time.Now()
		var virtual time.Duration
		ran, fileFailed := 0, false
		for _, s := range ss {
			if match != nil && !match.MatchString(s.Name) {
				continue
			}
			ran++
			if *verbose {
				fmt.Fprintf(stdout, "=== RUN   %s\n", s.Name)
			}
			r := scenario.Run(s)
			virtual += r.Virtual
			took := fmt.Sprintf("%.2fs, %v of rule time", r.Wall.Seconds(), r.Virtual)
			if r.Passed() {
				if *verbose {
					for _, n := range r.Notes {
						fmt.Fprintf(stdout, "    %s\n", n)
					}
					fmt.Fprintf(stdout, "--- PASS: %s (%s)\n", s.Name, took)
				}
				continue
			}
			fileFailed = true
			failed++
			fmt.Fprintf(stdout, "--- FAIL: %s (%s)\n", s.Name, took)
			for _, msg := range r.Failures {
				fmt.Fprintf(stdout, "    %s\n", strings.ReplaceAll(strings.TrimRight(msg, "\n"), "\n", "\n    "))
			}
			fmt.Fprintf(stdout, "    %s\n", strings.ReplaceAll(strings.TrimRight(r.Timeline, "\n"), "\n", "\n    "))
			if *verbose {
				fmt.Fprintf(stdout, "    daemon log:\n        %s\n", strings.ReplaceAll(strings.TrimRight(r.Log, "\n"), "\n", "\n        "))
			}
		}
		status := "ok  "
		if fileFailed {
			status = "FAIL"
		}
		fmt.Fprintf(stdout, "%s\t%s\t%.3fs\t(%d scenarios, %v of rule time)\n", status, f, time.Since(began).Seconds(), ran, virtual)
	}
	if failed > 0 {
		fmt.Fprintln(stdout, "FAIL")
		if failed == 1 {
			return errors.New("1 scenario failed")
		}
		return fmt.Errorf("%d scenarios failed", failed)
	}
	fmt.Fprintln(stdout, "PASS")
	return nil
}
