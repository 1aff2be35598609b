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
