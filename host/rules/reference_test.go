package rules

import (
	"go/doc/comment"
	goparser "go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/internal/golden"
)

// TestRulesReference: docs/rules.md, the rule format's reference page, is
// this package's documentation from "The format" on, as Markdown — one
// text, read by go doc and on the web alike (go test -rewrite writes it).
func TestRulesReference(t *testing.T) {
	golden.CheckPath(t, filepath.Join("..", "..", "docs", "rules.md"), reference(t))
}

var headingAnchor = regexp.MustCompile(` \{#hdr-[^}]*\}`)

func reference(t *testing.T) string {
	t.Helper()
	f, err := goparser.ParseFile(token.NewFileSet(), "doc.go", nil, goparser.ParseComments|goparser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	var cp comment.Parser
	pr := comment.Printer{HeadingLevel: 2}
	md := string(pr.Markdown(cp.Parse(f.Doc.Text())))
	i := strings.Index(md, "## The format")
	if i < 0 {
		t.Fatal("doc.go has no section The format")
	}
	var b strings.Builder
	b.WriteString("# The rule file format\n\n")
	b.WriteString("<!-- Generated from host/rules/doc.go by TestRulesReference: edit doc.go, then go test -rewrite ./host/rules. -->\n\n")
	b.WriteString("Rule files are YAML. Editors check them as they are typed with the JSON Schema\n")
	b.WriteString("[schema/rules.schema.json](schema/rules.schema.json) (see the README, \"Rule files in your editor\");\n")
	b.WriteString("`ruled lint DIR --plugins DIR` checks everything else, at file:line:col.\n\n")
	// Code blocks (tab-indented in a doc comment) become fenced YAML.
	inCode := false
	for _, line := range strings.Split(headingAnchor.ReplaceAllString(md[i:], ""), "\n") {
		code := strings.HasPrefix(line, "\t")
		switch {
		case code && !inCode:
			b.WriteString("```yaml\n")
			inCode = true
		case !code && inCode && line != "":
			b.WriteString("```\n\n")
			inCode = false
		case !code && inCode: // a blank line inside or after a block
			continue
		}
		if code {
			line = line[1:]
		}
		b.WriteString(line + "\n")
	}
	if inCode {
		b.WriteString("```\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
