package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const script = `# a header, kept on -rewrite

echo a=1 b=two
----
a=1 b=two

upper word=x
----
X
`

func TestRunScript(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks := ParseScript(t, path)
	if len(blocks) != 2 || blocks[0].Cmd != "echo" || blocks[0].Arg("b", "") != "two" || blocks[0].Arg("c", "none") != "none" ||
		blocks[1].Line != 7 || blocks[1].Want != "X" {
		t.Fatalf("blocks %+v", blocks)
	}
	var ran []string
	RunScript(t, path, func(b Block) string {
		ran = append(ran, b.Cmd)
		if b.Cmd == "echo" {
			return "a=" + b.Args["a"] + " b=" + b.Args["b"] + "\n"
		}
		return strings.ToUpper(b.Args["word"])
	})
	if strings.Join(ran, " ") != "echo upper" {
		t.Errorf("ran %v", ran)
	}
}

// TestRewriteKeepsNotes: a script written again with -rewrite keeps its
// header and the notes before each block, byte for byte when the outputs
// did not change.
func TestRewriteKeepsNotes(t *testing.T) {
	const noted = `# a header
# of two lines

echo a=1
----
a=1

# a note on the second block
upper word=x
----
X
`
	path := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(path, []byte(noted), 0o644); err != nil {
		t.Fatal(err)
	}
	if b := ParseScript(t, path); len(b) != 2 || len(b[0].Notes) != 2 || len(b[1].Notes) != 1 {
		t.Fatalf("notes %+v", b)
	}
	was := *rewrite
	*rewrite = true
	defer func() { *rewrite = was }()
	RunScript(t, path, func(b Block) string {
		if b.Cmd == "echo" {
			return "a=" + b.Args["a"]
		}
		return strings.ToUpper(b.Args["word"])
	})
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != noted {
		t.Errorf("rewritten:\n%s\nwant:\n%s", got, noted)
	}
}
