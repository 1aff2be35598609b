package main

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/internal/plugintest"
)

// TestHelpOnStdout: ruled help, and -h of every verb and subverb, print
// their usage on stdout and exit 0; a mistake prints it on stderr and
// exits 2.
func TestHelpOnStdout(t *testing.T) {
	cases := [][]string{{"help"}, {"--help"}, {"-h"}}
	for v, subs := range verbs {
		if v == "help" {
			continue
		}
		if len(subs) == 0 {
			cases = append(cases, []string{v, "-h"})
		}
		for _, s := range subs {
			if v != "completion" {
				cases = append(cases, []string{v, s, "-h"})
			}
		}
	}
	cases = append(cases, []string{"completion", "-h"}, []string{"help", "run"}, []string{"help", "rule", "ls"})
	for _, g := range []string{"pending", "plugin", "log", "rule"} {
		cases = append(cases, []string{g, "-h"}, []string{g, "help"})
	}
	for _, args := range cases {
		code, out, errs := runCLI(t, "", args...)
		if code != exitOK || !strings.Contains(out, "Usage") || errs != "" {
			t.Errorf("%v: exit %d, stdout %q…, stderr %q; want the usage on stdout, exit 0", args, code, first(out, 60), errs)
		}
	}
	for _, args := range [][]string{{}, {"nope"}, {"run", "--nope"}, {"completion", "tcsh"}, {"pending"}, {"plugin", "foo"}, {"rule", "nap"}} {
		if code, out, errs := runCLI(t, "", args...); code != exitMisuse || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want a misuse: exit 2 with the reason on stderr", args, code, out, errs)
		}
	}
}

func first(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// TestCompletion: the bash script loads in a real bash and completes
// verbs, subverbs and a verb's flags by asking the binary (ruled
// __complete); zsh and fish print their scripts.
func TestCompletion(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"ru"}, "rule run"},
		{[]string{"rule", ""}, "kill ls pause reset resume show sleep"},
		{[]string{"run", "--ru"}, "--rules --rules-refresh"},
		{[]string{"pending", "now", "--j"}, "--json"},
	} {
		_, out, _ := runCLI(t, "", append([]string{"__complete"}, tc.words...)...)
		if got := strings.Join(strings.Fields(out), " "); got != tc.want {
			t.Errorf("__complete %q: %q; want %q", tc.words, got, tc.want)
		}
	}
	for _, sh := range []string{"zsh", "fish"} {
		if code, out, _ := runCLI(t, "", "completion", sh); code != 0 || !strings.Contains(out, "ruled __complete") {
			t.Errorf("completion %s: exit %d: %s", sh, code, out)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir() // "ruled" on the PATH: this test binary, as main
	os.WriteFile(filepath.Join(dir, "ruled"), []byte("#!/bin/sh\nRULED_BE_MAIN=1 exec "+os.Args[0]+" \"$@\"\n"), 0o755)
	script := `source <(ruled completion bash) || exit 1
complete -p ruled || exit 1
for w in "ru" "rule " "log tree --"; do
  read -ra W <<<"ruled $w"; [[ "$w" == *" " ]] && W+=("")
  COMP_WORDS=("${W[@]}"); COMP_CWORD=$((${#W[@]}-1)); _ruled
  echo "$w=> ${COMPREPLY[*]}"
done`
	c := exec.Command(bash, "-c", script)
	c.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	for _, want := range []string{"-F _ruled ruled", "ru=> rule run", "rule => kill ls pause reset resume show sleep", "log tree --=> --data --json --redis"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("bash lacks %q:\n%s", want, out)
		}
	}
}

// TestTestReports: ruled test --json prints one object a scenario, and
// --junit writes a JUnit report CI reads — a failing scenario a failure
// with what was expected, a passing one a plain testcase; the exit code
// is still 1.
func TestTestReports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scenarios")
	}
	root := plugintest.Root()
	failing := filepath.Join(root, "sdk", "ruletest", "scenario", "testdata", "failing.yaml")
	passing := filepath.Join(root, "examples", "scooter", "tests", "scooter.yaml")
	report := filepath.Join(t.TempDir(), "junit.xml")
	code, out, errs := runCLI(t, "", "test", "--json", "--junit", report, passing, failing)
	if code != exitFailed {
		t.Fatalf("exit %d; want 1: %s", code, errs)
	}
	var passed, failed int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r testResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if r.Passed {
			passed++
		} else if len(r.Failures) > 0 {
			failed++
		}
	}
	if passed == 0 || failed == 0 {
		t.Errorf("%d passed, %d failed in the JSON; want some of each:\n%s", passed, failed, out)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("the report is not XML: %v\n%s", err, b)
	}
	if len(doc.Suites) != 2 || doc.Suites[0].Failures != 0 || doc.Suites[1].Failures != failed || doc.Suites[1].Cases[0].Failure == nil {
		t.Errorf("report:\n%s", b)
	}
}

// TestCacheNotInAnotherUsersData: --data names a daemon's directory to
// share its compilation cache only when it is this user's: root
// inspecting a plugin with --data /var/lib/ruled must not leave files
// there the daemon (the ruled user) cannot read.
func TestCacheNotInAnotherUsersData(t *testing.T) {
	mine := t.TempDir()
	fs := newFlagSet("x", io.Discard)
	cache := cacheFlags(fs)
	fs.Parse([]string{"--data", mine})
	if got := cache(); !strings.HasPrefix(got, mine) {
		t.Errorf("own data dir: cache %s; want under %s", got, mine)
	}
	if os.Getuid() != 0 {
		t.Skip("giving a directory to another user needs root")
	}
	theirs := t.TempDir()
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	fs = newFlagSet("x", io.Discard)
	cache = cacheFlags(fs)
	fs.Parse([]string{"--data", theirs})
	if got := cache(); strings.HasPrefix(got, theirs) {
		t.Errorf("another user's data dir: cache %s, in it", got)
	}
}
