package task

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// A small datadriven runner in the style of etcd/raft's: a script is blocks
// of a command line, "----", and the expected output, separated by blank
// lines. If a test fails, run `go test ./host/task -rewrite` and inspect the
// diff; only commit the changes if you understand what caused them.

var rewrite = flag.Bool("rewrite", false, "rewrite the golden scripts' expected output")

type block struct {
	cmd  string
	args map[string]string
	want string
}

func parseScript(t *testing.T, path string) []block {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []block
	var cur *block
	inWant := false
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && (line == "" || strings.HasPrefix(line, "#")):
		case cur == nil:
			fields := strings.Fields(line)
			cur = &block{cmd: fields[0], args: map[string]string{}}
			for _, a := range fields[1:] {
				k, v, _ := strings.Cut(a, "=")
				cur.args[k] = v
			}
		case line == "----" && !inWant:
			inWant = true
		case inWant && line == "":
			cur.want = strings.Join(want, "\n")
			out = append(out, *cur)
			cur, inWant, want = nil, false, nil
		case inWant:
			want = append(want, line)
		}
	}
	if cur != nil {
		cur.want = strings.Join(want, "\n")
		out = append(out, *cur)
	}
	return out
}

// runScript runs each block through do and compares (or, with -rewrite,
// records) its output.
func runScript(t *testing.T, path string, do func(b block) string) {
	t.Helper()
	blocks := parseScript(t, path)
	if len(blocks) == 0 {
		t.Fatalf("%s: no blocks", path)
	}
	var sb strings.Builder
	raw, _ := os.ReadFile(path)
	header := ""
	for _, l := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		header += l + "\n"
	}
	sb.WriteString(header)
	for i, b := range blocks {
		got := do(b)
		if !*rewrite && got != b.want {
			t.Errorf("%s: block %d: %s %v\ngot:\n%s\nwant:\n%s", path, i+1, b.cmd, b.args, got, b.want)
		}
		sb.WriteString("\n" + b.cmd)
		for _, k := range sortedKeys(b.args) {
			sb.WriteString(fmt.Sprintf(" %s=%s", k, b.args[k]))
		}
		sb.WriteString("\n----\n" + got + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}
