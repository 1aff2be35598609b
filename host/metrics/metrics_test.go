package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/metrics"
	"github.com/ruled-dev/ruled/host/pipeline"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/internal/release"
)

// source is a hand-written Source: the Status a scrape reads.
type source struct{ st status.Status }

func (s *source) Status() status.Status { return s.st }

// slowAction is an action that takes a little while, failing or not.
type slowAction struct{ err error }

func (a slowAction) Act(context.Context, *seq.Call) ([]byte, error) {
	time.Sleep(time.Millisecond)
	return nil, a.err
}

// TestScrape: a scrape shows what the Status says at that moment, the
// reload counters, the supply cycles, and — only with latency on — the
// calls a wrapped action made.
func TestScrape(t *testing.T) {
	for _, latency := range []bool{true, false} {
		src := &source{st: status.Status{
			Events: bus.CountersSnapshot{Accepted: 7},
			Rules:  []status.RuleStatus{{ID: "low-battery", State: "paused", Stats: seq.RuleStats{Started: 3, Errors: 1}}},
			Pool:   status.PoolStatus{ByBand: map[int]int{2: 5}},
		}}
		m := metrics.New(src, latency)
		m.PluginReloaded(true)
		m.PluginReloaded(false)
		m.RulesReloaded(true)
		m.Cycle(0, pipeline.Result{Band: 1, GlobalBand: 1, Selected: 4})
		a := m.Action(slowAction{}, "publish", "publish")
		a.Act(context.Background(), &seq.Call{})
		m.Action(slowAction{errors.New("no")}, "publish", "publish").Act(context.Background(), &seq.Call{})
		src.st.Events.Accepted = 9 // read at scrape time, not at New

		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		text := string(body)
		for _, want := range []string{
			"ruled_events_accepted_total 9",
			`ruled_runs_total{outcome="started",rule="low-battery"} 3`,
			`ruled_rule_errors_total{rule="low-battery"} 1`,
			`ruled_rule_state{rule="low-battery",state="paused"} 1`,
			`ruled_rule_state{rule="low-battery",state="runnable"} 0`,
			`ruled_pool_queued{band="2"} 5`,
			`ruled_reloads_total{result="ok",what="plugin"} 1`,
			`ruled_reloads_total{result="failed",what="plugin"} 1`,
			`ruled_reloads_total{result="ok",what="rules"} 1`,
			`ruled_pipeline_cycles_total{outcome="served"} 1`,
			"ruled_pipeline_selected_total 4",
			fmt.Sprintf(`ruled_build_info{abi="%s",commit="",goversion="%s",platform="%s/%s",version="v%s-dev"} 1`,
				abi.VersionString(abi.Version), runtime.Version(), runtime.GOOS, runtime.GOARCH, release.Next),
		} {
			if !strings.Contains(text, want+"\n") {
				t.Errorf("latency %v: no %q in the scrape", latency, want)
			}
		}
		calls := `ruled_plugin_call_seconds_count{function="publish",kind="action",plugin="publish"} 2`
		if got := strings.Contains(text, calls+"\n"); got != latency {
			t.Errorf("latency %v: two timed calls shown: %v; want %v", latency, got, latency)
		}
	}
}
