package scenario_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/sdk/ruletest/scenario"
)

func parse(t *testing.T, file string) *scenario.Scenario {
	t.Helper()
	ss, err := scenario.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("%d scenarios in %s; want 1", len(ss), file)
	}
	return ss[0]
}

// runFile runs every scenario of file, which must hold want of them.
func runFile(t *testing.T, file string, want int) {
	t.Helper()
	ss, err := scenario.ParseFile(file)
	if err != nil || len(ss) != want {
		t.Fatalf("%s: %d scenarios, %v; want %d", file, len(ss), err, want)
	}
	for _, s := range ss {
		if r := scenario.Run(s); !r.Passed() {
			t.Errorf("%s failed:\n%s\n%s\ndaemon log:\n%s", s.Name, strings.Join(r.Failures, "\n"), r.Timeline, r.Log)
		}
	}
}

// The scenario: a two-hour durable delay, a restart in the middle,
// a plugin upgrade while waiting and a cancel-on event — the same result on
// every run. The expectations' at: are the clock's proof: each reminder
// was published exactly at its due time on the virtual clock, which only
// the scenario's steps move.
func TestReminderScenario(t *testing.T) {
	s := parse(t, "testdata/reminder.yaml")
	var first *scenario.Result
	for i := range 3 {
		r := scenario.Run(s)
		if !r.Passed() {
			t.Fatalf("run %d failed:\n%s\n%s\ndaemon log:\n%s", i, strings.Join(r.Failures, "\n"), r.Timeline, r.Log)
		}
		if r.Virtual.Hours() != 3 {
			t.Errorf("the clock moved %v; want 3h", r.Virtual)
		}
		t.Logf("run %d: %v of rule time in %v", i, r.Virtual, r.Wall)
		if first == nil {
			first = r
		} else if !slices.Equal(r.Published, first.Published) {
			t.Errorf("run %d published\n%s\nthe first\n%s", i, strings.Join(r.Published, "\n"), strings.Join(first.Published, "\n"))
		}
	}
	want := []string{
		`+2h0m0s reminder.s1 {"vehicle":"s1","version":1,"topic":"reminder.s1"}`,
		`+3h0m0s reminder.s3 {"vehicle":"s3","version":2,"topic":"reminder.s3"}`,
	}
	if len(first.Published) != 2 || !strings.HasPrefix(first.Published[0], "+2h0m0s reminder.s1 ") ||
		!strings.HasPrefix(first.Published[1], "+3h0m0s reminder.s3 ") {
		t.Errorf("published\n%s\nwant like\n%s", strings.Join(first.Published, "\n"), strings.Join(want, "\n"))
	}
}

// A failing expectation says what it expected, what there was, and the
// timeline of the whole scenario.
func TestFailingScenario(t *testing.T) {
	r := scenario.Run(parse(t, "testdata/failing.yaml"))
	if r.Passed() {
		t.Fatal("passed")
	}
	msg := strings.Join(r.Failures, "\n")
	for _, want := range []string{
		"testdata/failing.yaml:12: published reminder.s7: 0 matching events; want 1",
		"expected: topic reminder.s7",
		"actual, everything the rules published on reminder.s7: nothing",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure lacks %q:\n%s", want, msg)
		}
	}
	for _, want := range []string{"+0s  » publish ride.start", "▸ run #1 reminder: delay remind open"} {
		if !strings.Contains(r.Timeline, want) {
			t.Errorf("timeline lacks %q:\n%s", want, r.Timeline)
		}
	}
}

// TestDowntimeScenario: `down` keeps the process down while the clock
// moves on, and `replay-window` sets how late a step may still run: a step
// due during the downtime runs at the start within the window, and is
// dropped past it.
func TestDowntimeScenario(t *testing.T) {
	ss, err := scenario.ParseFile("testdata/downtime.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 || ss[1].ReplayWindow != ss[0].ReplayWindow || ss[0].ReplayWindow.Minutes() != 30 {
		t.Fatalf("parsed %d scenarios; want 2, the second taking the first's replay window", len(ss))
	}
	for _, s := range ss {
		r := scenario.Run(s)
		if !r.Passed() {
			t.Errorf("%s failed:\n%s\n%s\ndaemon log:\n%s", s.Name, strings.Join(r.Failures, "\n"), r.Timeline, r.Log)
		}
	}
}

// TestRetryScenario: retries on the virtual clock — four attempts across a
// restart, a permanent refusal not retried, an endpoint that comes back.
func TestRetryScenario(t *testing.T) {
	runFile(t, "testdata/retry.yaml", 3)
}

// TestFinallyScenario: finally steps after a cancel and after a run that
// completed across a restart.
func TestFinallyScenario(t *testing.T) {
	r := scenario.Run(parse(t, "testdata/finally.yaml"))
	if !r.Passed() {
		t.Fatalf("failed:\n%s\n%s\ndaemon log:\n%s", strings.Join(r.Failures, "\n"), r.Timeline, r.Log)
	}
}

// TestScheduleScenario: schedules on the virtual clock — a three-hour
// outage under each missed: policy, both daylight-saving nights in
// Berlin, a clock set back, a catch-up behind a replayed run.
func TestScheduleScenario(t *testing.T) {
	runFile(t, "testdata/schedule.yaml", 5)
}

// TestFlowScenario: debounce (across a restart, and max-wait) and
// throttle under a burst, on the virtual clock.
func TestFlowScenario(t *testing.T) {
	runFile(t, "testdata/flow.yaml", 3)
}

// TestChangeScenario: change triggers on the virtual clock — the same
// value three times, a restart in the middle, a value wobbling around a
// threshold.
func TestChangeScenario(t *testing.T) {
	runFile(t, "testdata/change.yaml", 4)
}

// TestStatesScenario: rules reading entities' states and their trigger's
// previous state on the virtual clock — previous in a condition and in
// templates, kept by a durable step's record across a restart; states
// named by a template over the trigger, read again when a delayed step
// comes due, one past its max-age missing; a variable from a state.
func TestStatesScenario(t *testing.T) {
	runFile(t, "testdata/states.yaml", 2)
}

// TestSunScenario: a sun schedule half an hour before sunset in Berlin
// on the virtual clock, across the change to summer time and an outage
// over one occurrence (missed: once); sun.<field> in a condition and a
// template, day and night; at 78° N in June no sunset for a month, and
// the sun up at midnight.
func TestSunScenario(t *testing.T) {
	runFile(t, "testdata/sun.yaml", 2)
}

// TestOnErrorScenario: a failed step with on-error: continue lets its run
// go on to the next step and end ok; the same step without it ends the
// run as failed.
func TestOnErrorScenario(t *testing.T) {
	r := scenario.Run(parse(t, "testdata/onerror.yaml"))
	if !r.Passed() {
		t.Fatalf("failed:\n%s\n%s\ndaemon log:\n%s", strings.Join(r.Failures, "\n"), r.Timeline, r.Log)
	}
}

// TestOutputsScenario: step outputs on the virtual clock — used in a
// later step's when and templates, kept across a restart by the durable
// step's record, a text answer as {"result": …}; a rule's variables.
func TestOutputsScenario(t *testing.T) {
	runFile(t, "testdata/outputs.yaml", 4)
}

// TestWaitScenario: wait-for on the virtual clock — a correlated wait
// that ignores another zone's event and a trickle its when refuses, a
// timeout path, a restart while waiting, on-timeout: stop, an answer
// that comes before the wait starts.
func TestWaitScenario(t *testing.T) {
	runFile(t, "testdata/wait.yaml", 4)
}

// TestWindowScenario: a window's late events, events out of order and
// its key cap, on the virtual clock.
func TestWindowScenario(t *testing.T) { runFile(t, "testdata/windows.yaml", 1) }

// TestWindowExpectFails: a window's expectation that does not hold says
// which aggregate, what it read and the whole value.
func TestWindowExpectFails(t *testing.T) {
	ss, err := scenario.Parse("testdata/wrong.yaml", []byte(`
name: a wrong count
rules: windows-rules
plugins: {publish: ../../../../plugins/build/publish.wasm}
grants: {publish: [publish]}
steps:
  - publish: {topic: sensor.temp, device: a, v: 1}
  - expect:
      windows:
        - {window: temps, key: a, count: 2, avg: null}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := scenario.Run(ss[0])
	msg := strings.Join(r.Failures, "\n")
	for _, want := range []string{`testdata/wrong.yaml:10: window temps key "a": count is 1; want 2`, `avg is 1; want <nil>`, `"sum":1`} {
		if !strings.Contains(msg, want) {
			t.Errorf("failures lack %q:\n%s", want, msg)
		}
	}
}
