package core_test

import (
	"testing"

	"github.com/ruled-dev/ruled/host/seq/core"
)

func TestDue(t *testing.T) {
	live := core.Run{}
	over := core.Run{Phase: core.Ended}
	final := core.Run{Pos: core.Pos{Final: true}}
	tests := []struct {
		name string
		r    core.Run
		in   core.DueIn
		want core.DueKind
		why  string
	}{
		{"over", over, core.DueIn{Owned: true}, core.DueGone, ""},
		{"closing", final, core.DueIn{Owned: true}, core.DueGone, ""},
		{"over after the judge", over, core.DueIn{Owned: true, Judged: true}, core.DueGone, ""},
		{"place moved", live, core.DueIn{}, core.DueLetGo, ""},
		{"place moved beats the gate", live, core.DueIn{Hold: true, Drop: "killed"}, core.DueLetGo, ""},
		{"paused", live, core.DueIn{Owned: true, Hold: true}, core.DueHold, ""},
		{"killed", live, core.DueIn{Owned: true, Drop: "its rule was killed"}, core.DueDrop, "its rule was killed"},
		{"to judge", live, core.DueIn{Owned: true}, core.DueJudge, ""},
		{"judged gone", live, core.DueIn{Owned: true, Judged: true, Verdict: "step gone"}, core.DueDrop, "step gone"},
		{"judged a wait", live, core.DueIn{Owned: true, Judged: true, Wait: true}, core.DueWaitOver, ""},
		{"judged a step", live, core.DueIn{Owned: true, Judged: true}, core.DueRun, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := core.Due(&tt.r, tt.in)
			if got != tt.want || why != tt.why {
				t.Errorf("Due = %d %q; want %d %q", got, why, tt.want, tt.why)
			}
		})
	}
}
