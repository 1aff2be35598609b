package task

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/internal/testkit"
)

func newTasks(t *testing.T, h *testkit.Hasher, clk *sched.Virtual, rules ...string) *Tasks {
	t.Helper()
	ts := New(NewHashStore(h), clk, &testkit.Log{})
	budgets := map[string]Limits{}
	for _, r := range rules {
		budgets[r] = Limits{}
	}
	if err := ts.Load(budgets); err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestTasksSurviveARestart(t *testing.T) {
	h, clk := &testkit.Hasher{}, sched.NewVirtual(t0)
	ts := newTasks(t, h, clk, "a", "b", "c", "d")
	ts.Send("a", PauseMessage())
	ts.Send("b", SleepMessage(t0.Add(time.Hour)))
	ts.Send("c", KillMessage())
	clk.Advance(10 * time.Minute)
	// A new process over the same store.
	ts2 := newTasks(t, h, clk, "a", "b", "c", "d")
	for rule, want := range map[string]StateCode{"a": Paused, "b": Sleeping, "c": Killed, "d": Runnable} {
		if st, _ := ts2.State(rule); st.Code != want {
			t.Errorf("%s: %s after restart; want %s", rule, st.Code, want)
		}
	}
	clk.Advance(50*time.Minute - time.Second)
	if st, _ := ts2.State("b"); st.Code != Sleeping {
		t.Errorf("b woke early: %s", st.Code)
	}
	clk.Advance(time.Second)
	if st, _ := ts2.State("b"); st.Code != Runnable {
		t.Errorf("b did not wake at its time: %s", st.Code)
	}
}

func TestStoreFailureRefusesTheTransition(t *testing.T) {
	h, clk := &testkit.Hasher{}, sched.NewVirtual(t0)
	ts := newTasks(t, h, clk, "a")
	h.SetDown(true)
	if _, err := ts.Send("a", PauseMessage()); err == nil || !strings.Contains(err.Error(), "a stays runnable") || !strings.Contains(err.Error(), "store down") {
		t.Errorf("Send with the store down: %v", err)
	}
	if st, _ := ts.State("a"); st.Code != Runnable {
		t.Errorf("state %s after a refused transition", st.Code)
	}
	if err := New(NewHashStore(h), clk, &testkit.Log{}).Load(map[string]Limits{"a": {}}); err == nil {
		t.Error("Load with the store down: no error")
	}
}

func TestUndecodableStateFailsTheRule(t *testing.T) {
	h, clk := &testkit.Hasher{}, sched.NewVirtual(t0)
	h.HSet(TasksHash, "a", "{not json")
	h.HSet(TasksHash, "b", `{"state":"dancing"}`)
	ts := newTasks(t, h, clk, "a", "b")
	for _, r := range []string{"a", "b"} {
		st, _ := ts.State(r)
		if st.Code != Failed || st.Reason == "" {
			t.Errorf("%s: %+v; want failed with a reason", r, st)
		}
	}
	if m, _ := h.HGetAll(TasksHash); !strings.Contains(m["a"], `"state":"failed"`) {
		t.Errorf("the failed state was not stored: %s", m["a"])
	}
}

func TestCommandsAndErrors(t *testing.T) {
	h, clk := &testkit.Hasher{}, sched.NewVirtual(t0)
	ts := newTasks(t, h, clk, "a")
	var changes []string
	ts.OnChange(func(rule string, from, to State) { changes = append(changes, string(from.Code)+">"+string(to.Code)) })
	tests := []struct {
		do   func() (State, error)
		want string
	}{
		{func() (State, error) { return ts.Send("nope", PauseMessage()) }, `error: task: no rule "nope"`},
		{func() (State, error) { return ts.Send("a", &Message{Code: Sleep}) }, "error: sleeping state missing deadline"},
		{func() (State, error) { return ts.Send("a", CompleteMessage()) }, "completed"},
		{func() (State, error) { return ts.Send("a", PauseMessage()) }, "error: task: pause is not allowed while completed"},
		{func() (State, error) { return ts.Reset("a", "") }, "runnable"},
		{func() (State, error) { return ts.Reset("a", "") }, "error: task: reset is not allowed while runnable (it is for a failed, killed or completed rule)"},
	}
	for i, tc := range tests {
		st, err := tc.do()
		got := string(st.Code)
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != tc.want {
			t.Errorf("%d: got %s; want %s", i, got, tc.want)
		}
	}
	// Errors count only while runnable, sleeping or in fault.
	ts.Send("a", PauseMessage())
	ts.Errored("a", errors.New("trap"))
	if st, _ := ts.State("a"); st.Code != Paused || len(st.Errors) != 0 {
		t.Errorf("an error while paused changed the rule: %+v", st)
	}
	ts.Send("a", RunMessage())
	ts.Errored("a", errors.New("trap"))
	if st, _ := ts.State("a"); st.Code != Sleeping || len(ts.RecentErrors("a")) != 1 {
		t.Errorf("an error while runnable: %+v", st)
	}
	want := "runnable>completed completed>runnable runnable>paused paused>runnable runnable>sleeping"
	if got := strings.Join(changes, " "); got != want {
		t.Errorf("changes %q; want %q", got, want)
	}
}

func TestHistoryShowsTheWayThroughFault(t *testing.T) {
	clk := sched.NewVirtual(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	ts := newTasks(t, &testkit.Hasher{}, clk, "r")
	ts.Errored("r", errors.New("trap"))
	clk.Advance(DefaultSleep)
	if _, err := ts.Send("r", KillMessage()); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Reset("r", ""); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range ts.History("r") {
		got = append(got, h.String())
	}
	want := "runnable---error--->fault fault---sleep--->sleeping sleeping---run--->runnable " +
		"runnable---kill--->killed killed---reset--->runnable"
	if strings.Join(got, " ") != want {
		t.Errorf("history\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}

func TestReleaseLeavesEveryStateAsStored(t *testing.T) {
	clk := sched.NewVirtual(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	h := &testkit.Hasher{}
	ts := newTasks(t, h, clk, "r")
	ts.Errored("r", errors.New("trap")) // asleep for DefaultSleep
	ts.Release()
	clk.Advance(DefaultSleep)
	if st, _ := ts.State("r"); st.Code != Sleeping {
		t.Errorf("a released sleeper woke: %s", st.Code)
	}
	if _, err := ts.Send("r", PauseMessage()); !errors.Is(err, ErrReleased) {
		t.Errorf("Send after Release: %v; want ErrReleased", err)
	}
	ts2 := newTasks(t, h, clk, "r") // the next process wakes it: its time has come
	clk.Advance(0)
	if st, _ := ts2.State("r"); st.Code != Runnable {
		t.Errorf("next process: %s; want runnable", st.Code)
	}
}

// TestBudgetSleepIsWarned: a rule put to sleep by its errors says so at
// warn level, with when it wakes and how to wake it sooner; one an
// operator puts to sleep does not.
func TestBudgetSleepIsWarned(t *testing.T) {
	clk := sched.NewVirtual(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	log := &testkit.Log{}
	ts := New(NewHashStore(&testkit.Hasher{}), clk, log)
	if err := ts.Load(map[string]Limits{"r": {}, "s": {}}); err != nil {
		t.Fatal(err)
	}
	until := clk.Now().Add(time.Hour)
	if _, err := ts.Send("s", &Message{Code: Sleep, Until: &until, By: "op"}); err != nil {
		t.Fatal(err)
	}
	ts.Errored("r", errors.New("cannot compare nil < an int"))
	var warned []string
	for _, l := range log.Lines() {
		if strings.HasPrefix(l, "WARN rule asleep") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "ruled rule resume r") || !strings.Contains(warned[0], "2026-11-30T08:10:00Z") {
		t.Errorf("warnings %q: want one, for r, with its wake time and the resume command", warned)
	}
}
