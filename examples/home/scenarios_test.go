package home_test

import (
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/sdk/ruletest/scenario"
)

// TestScenarios runs tests/*.yaml (as `ruled test examples/home/tests`
// does).
func TestScenarios(t *testing.T) {
	ss, err := scenario.ParseFile("tests/home.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		t.Run(s.Name, func(t *testing.T) {
			r := scenario.Run(s)
			if !r.Passed() {
				t.Fatalf("%s\n%s\ndaemon log:\n%s", strings.Join(r.Failures, "\n"), r.Timeline, r.Log)
			}
			t.Logf("%v of rule time in %v", r.Virtual, r.Wall)
		})
	}
}
