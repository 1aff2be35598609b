package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
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

const testUsage = `Usage: ruled test [-v] [-run REGEXP] [--json] [--junit FILE] SCENARIO.yaml|DIR...

Runs scenario files: each loads rules and plugins into a fresh daemon on a
virtual clock and takes its steps — events at times, clock advances,
restarts, plugin and rule replacements, operator commands, replays of
captures — checking its expectations. Hours of rule time take
milliseconds; nothing sleeps. A directory stands for its *.yaml files.
Output reads like go test's (--json: one JSON object a scenario instead;
--junit FILE also writes a JUnit XML report for CI); the exit code is 1
when a scenario failed.

Flags:
`

func cmdTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	origStdout := stdout
	fs := newFlagSet("test", stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), testUsage); fs.PrintDefaults() }
	verbose := fs.Bool("v", false, "print every scenario, its notes, and the daemon's log of failed ones")
	run := fs.String("run", "", "only scenarios whose name matches this regular expression")
	asJSON := fs.Bool("json", false, "print one JSON object a scenario (file, name, passed, failures, seconds, virtual_seconds)")
	junit := fs.String("junit", "", "also write a JUnit XML report to this file (for CI)")
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
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: no such scenario file or directory", p) // not stat's words
		}
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
	var results []testResult
	if *asJSON {
		stdout = io.Discard // the text report is replaced by JSON below
	}
	for _, f := range files {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ss, err := scenario.ParseFile(f)
		if err != nil {
			fmt.Fprintf(stdout, "FAIL\t%s\t[parse: %v]\n", f, err)
			failed++
			results = append(results, testResult{File: f, Name: "(parse)", Failures: []string{err.Error()}})
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
			results = append(results, testResult{File: f, Name: s.Name, Passed: r.Passed(), Failures: r.Failures,
				Seconds: r.Wall.Seconds(), Virtual: r.Virtual.Seconds(), Timeline: failedOnly(r)})
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
	if *junit != "" {
		if err := writeJUnit(*junit, results); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(origStdout)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
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

// testResult is one scenario's result, as --json prints it and --junit
// reports it.
type testResult struct {
	File     string   `json:"file"`
	Name     string   `json:"name"`
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures,omitempty"`
	Seconds  float64  `json:"seconds"`
	Virtual  float64  `json:"virtual_seconds"`
	Timeline string   `json:"timeline,omitempty"` // a failed scenario's
}

func failedOnly(r *scenario.Result) string {
	if r.Passed() {
		return ""
	}
	return r.Timeline
}

// writeJUnit writes results as JUnit XML: a testsuite a file, a testcase
// a scenario, a failure with what was expected and the timeline — the
// report CI systems (GitLab, Jenkins, GitHub's test reporters) read.
func writeJUnit(path string, results []testResult) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
	}
	type testsuite struct {
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Time     string     `xml:"time,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	var suites []*testsuite
	byFile := map[string]*testsuite{}
	for _, r := range results {
		s := byFile[r.File]
		if s == nil {
			s = &testsuite{Name: r.File}
			byFile[r.File] = s
			suites = append(suites, s)
		}
		c := testcase{Name: r.Name, Classname: r.File, Time: fmt.Sprintf("%.3f", r.Seconds)}
		if !r.Passed {
			msg := "failed"
			if len(r.Failures) > 0 {
				msg = strings.SplitN(r.Failures[0], "\n", 2)[0]
			}
			c.Failure = &failure{Message: msg, Text: strings.Join(r.Failures, "\n") + "\n\n" + r.Timeline}
			s.Failures++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	var total float64
	for _, s := range suites {
		var t float64
		for _, c := range s.Cases {
			var v float64
			fmt.Sscan(c.Time, &v)
			t += v
		}
		s.Time, total = fmt.Sprintf("%.3f", t), total+t
	}
	out, err := xml.MarshalIndent(struct {
		XMLName xml.Name     `xml:"testsuites"`
		Name    string       `xml:"name,attr"`
		Time    string       `xml:"time,attr"`
		Suites  []*testsuite `xml:"testsuite"`
	}{Name: "ruled test", Time: fmt.Sprintf("%.3f", total), Suites: suites}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(out, '\n')...), 0o644)
}
