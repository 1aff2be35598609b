package scooter_test

import (
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/sdk/ruletest/scenario"
)

// TestScenarios runs tests/*.yaml, the same tests as the Go ones above in
// the form any author can write (and `ruled test examples/scooter/tests`
// runs).
func TestScenarios(t *testing.T) {
	ss, err := scenario.ParseFile("tests/scooter.yaml")
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
	// The same scenarios with the plugin's Rust build in the
	// AssemblyScript one's place: it answers as the rules expect.
	rs := plugintest.Rust(t, "examples/scooter/plugin/scooter.rs")
	for _, s := range ss {
		t.Run("rust/"+s.Name, func(t *testing.T) {
			if _, ok := s.Plugins["scooter"]; ok {
				s.Plugins["scooter"] = rs
			}
			r := scenario.Run(s)
			if !r.Passed() {
				t.Fatalf("%s\n%s\ndaemon log:\n%s", strings.Join(r.Failures, "\n"), r.Timeline, r.Log)
			}
		})
	}
}
