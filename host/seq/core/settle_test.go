package core_test

import (
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/seq/core"
)

func TestSettle(t *testing.T) {
	live := core.Run{Attempt: 2}
	ended := core.Run{Phase: core.Ended, Attempt: 2}
	final := core.Run{Pos: core.Pos{Final: true}, Attempt: 2}
	stopped := core.Run{Phase: core.Stopped, Attempt: 2}
	failed := core.SettleIn{Failed: true}
	retried := core.SettleIn{Failed: true, RetryIn: time.Second}
	tests := []struct {
		name    string
		r       core.Run
		in      core.SettleIn
		want    core.SettleKind
		attempt uint8 // the run's attempt after
	}{
		{"done", live, core.SettleIn{}, core.SettleGoOn, 0},
		{"done after its run was let go", stopped, core.SettleIn{}, core.SettleGoOn, 0},
		{"failed after its run was let go", stopped, failed, core.SettleCut, 2},
		{"a retry after its run was let go", stopped, retried, core.SettleCut, 2},
		{"failed", live, failed, core.SettleFail, 0},
		{"retried", live, retried, core.SettleRetry, 3},
		{"retried after its run ended", ended, retried, core.SettleFail, 0},
		{"retried while its run closes", final, retried, core.SettleFail, 0},
		{"on-error: continue", live, core.SettleIn{Failed: true, ContinueOnError: true}, core.SettleGoOn, 0},
		{"on-error: continue, retried first", live, core.SettleIn{Failed: true, RetryIn: time.Second, ContinueOnError: true}, core.SettleRetry, 3},
		{"on-error: continue, a trigger not its own", live, core.SettleIn{Failed: true, ContinueOnError: true, Unread: true}, core.SettleFail, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.r
			if got := core.Settle(&r, 2, tt.in); got != tt.want || r.Attempt != tt.attempt {
				t.Errorf("Settle = %d, attempt %d; want %d, attempt %d", got, r.Attempt, tt.want, tt.attempt)
			}
		})
	}
}
