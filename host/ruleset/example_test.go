package ruleset_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/ruleset"
	"github.com/ruled-dev/ruled/host/seq"
)

// anyAction is a catalog in which every call is a known action.
type anyAction struct{}

func (anyAction) Function(string, string) (abi.Kind, bool) { return abi.KindAction, true }
func (anyAction) Plugins() []string                        { return []string{"p"} }

// A Loader over a rules directory: the first Load publishes the set, a
// later one says what changed.
func Example() {
	dir, _ := os.MkdirTemp("", "rules")
	defer os.RemoveAll(dir)
	write := func(body string) { os.WriteFile(filepath.Join(dir, "r.yaml"), []byte(body), 0o600) }
	l := ruleset.New(ruleset.Config{Dir: dir, Catalog: anyAction{},
		Compile: func(r *rules.Rule) (*seq.Sequence, error) { return &seq.Sequence{Rule: r}, nil },
		Def:     func(r *rules.Rule) string { return fmt.Sprint(r.On) }})

	write("- id: lamp\n  on: motion\n  steps: [{name: on, do: p.switch}]\n")
	fmt.Printf("%+v\n", l.Load())
	fmt.Println(len(l.Current().Index().Triggered("motion")), "rule on motion")

	write("- id: lamp\n  on: door.open\n  steps: [{name: on, do: p.switch}]\n")
	fmt.Printf("%+v\n", l.Load())
	// Output:
	// {Added:[] Changed:[] Removed:[] First:true NewProblems:false}
	// 1 rule on motion
	// {Added:[] Changed:[lamp] Removed:[] First:false NewProblems:false}
}
