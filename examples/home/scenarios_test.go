package home_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/sdk/ruletest/scenario"
)

// TestScenarios runs tests/*.yaml (as `ruled test examples/home/tests`
// does).
func TestScenarios(t *testing.T) {
	files, _ := filepath.Glob("tests/*.yaml")
	var ss []*scenario.Scenario
	for _, f := range files {
		fs, err := scenario.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, fs...)
	}
	if len(ss) < 9 {
		t.Fatalf("%d scenarios in %v", len(ss), files)
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

// A request expectation that fails says what was sent instead: every
// request to the URL, with its headers.
func TestAFailingRequestSaysWhatWasSent(t *testing.T) {
	ss, err := scenario.Parse("tests/failing.yaml", []byte(`
name: the wrong title
rules: ../rules
plugins: {publish: ../../../plugins/build/publish.wasm, http: ../../../plugins/build/http.wasm, expr: ../../../plugins/build/expr.wasm}
grants: {publish: [publish], http: [http]}
steps:
  - publish: {topic: zigbee2mqtt.front_door, contact: false, battery: 97}
  - expect:
      requests:
        - {url: https://ntfy.sh/ruled-home-example, count: 1, headers: {Title: Back door}, body: "The front door opened (battery 97%)."}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := scenario.Run(ss[0])
	if r.Passed() {
		t.Fatal("passed")
	}
	msg := strings.Join(r.Failures, "\n")
	for _, want := range []string{"tests/failing.yaml:10: requests https://ntfy.sh/ruled-home-example: 0 matching; want 1",
		`headers {"Title":"Back door"}`, `body exactly "The front door opened (battery 97%)."`,
		"POST https://ntfy.sh/ruled-home-example The front door opened (battery 97%).", "Title: Front door", "Idempotency-Key: "} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure lacks %q:\n%s", want, msg)
		}
	}
}
