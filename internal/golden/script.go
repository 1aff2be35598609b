package golden

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// A script is a datadriven test in the style of etcd/raft's: blocks of a
// command line (a word and key=value arguments), "----", and the expected
// output, separated by blank lines; lines starting with # before a block
// are its notes (the first block's, the script's header), kept as they are
// when the script is written again. RunScript runs each block and compares
// what it printed, or with -rewrite writes the script again with the
// outputs it got: inspect the diff, and commit it only if you understand
// what caused it.

// Block is one command of a script and the output expected of it.
type Block struct {
	Cmd  string
	Args map[string]string
	Want string
	Line int // where the command is in the script
	// Notes are the comment lines (# …) before the command.
	Notes []string
}

// Arg is the block's argument key, or def when it has none.
func (b Block) Arg(key, def string) string {
	if v, ok := b.Args[key]; ok {
		return v
	}
	return def
}

// ParseScript reads the blocks of the script at path.
func ParseScript(t testing.TB, path string) []Block {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Block
	var cur *Block
	inWant := false
	var want, notes []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "#"):
			notes = append(notes, line)
		case cur == nil && line == "":
		case cur == nil:
			fields := strings.Fields(line)
			cur = &Block{Cmd: fields[0], Args: map[string]string{}, Line: n, Notes: notes}
			notes = nil
			for _, a := range fields[1:] {
				k, v, _ := strings.Cut(a, "=")
				cur.Args[k] = v
			}
		case line == "----" && !inWant:
			inWant = true
		case inWant && line == "":
			cur.Want = strings.Join(want, "\n")
			out = append(out, *cur)
			cur, inWant, want = nil, false, nil
		case inWant:
			want = append(want, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		cur.Want = strings.Join(want, "\n")
		out = append(out, *cur)
	}
	return out
}

// RunScript runs each block of the script at path through do, in order,
// and compares (or, with -rewrite, records) its output.
func RunScript(t testing.TB, path string, do func(b Block) string) {
	t.Helper()
	blocks := ParseScript(t, path)
	if len(blocks) == 0 {
		t.Fatalf("%s: no blocks", path)
	}
	var sb strings.Builder
	for i, b := range blocks {
		got := strings.TrimRight(do(b), "\n")
		if !*rewrite && got != b.Want {
			t.Errorf("%s:%d: %s %v\ngot:\n%s\nwant:\n%s", path, b.Line, b.Cmd, b.Args, got, b.Want)
		}
		if i > 0 {
			sb.WriteString("\n")
		}
		for _, n := range b.Notes {
			sb.WriteString(n + "\n")
		}
		if i == 0 {
			sb.WriteString("\n") // the header's blank line
		}
		sb.WriteString(b.Cmd)
		for _, k := range slices.Sorted(maps.Keys(b.Args)) {
			fmt.Fprintf(&sb, " %s=%s", k, b.Args[k])
		}
		sb.WriteString("\n----\n" + got + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
