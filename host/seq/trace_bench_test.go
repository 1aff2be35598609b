package seq

import (
	"context"
	"testing"

	"github.com/ruled-dev/ruled/abi/tmpl"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/pool"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// dropTracer takes the log's entries and drops them: the runner's own
// cost of tracing, without a writer.
type dropTracer struct{}

func (dropTracer) Run(runlog.Run)              {}
func (dropTracer) Node(runlog.Node)            {}
func (dropTracer) LastSeq(string) (int, error) { return 0, nil }

type yesCond struct{}

func (yesCond) When(context.Context, *Call) (bool, error) { return true, nil }

type resultAction struct{}

func (resultAction) Act(context.Context, *Call) ([]byte, error) {
	return []byte(`{"result":"ok"}`), nil
}

// BenchmarkTraceOverhead is the sequencer's own cost of the execution
// log: a run of a rule with an expression-like condition and three steps
// whose configs are templates (BenchmarkExecLog's shape), with a tracer
// that drops what it is told and without one. It isolates what the
// nodes' details cost (their rendered inputs, condition values, effects)
// from the writer's store; compare the two sides' ns/op, B/op and
// allocs/op.
func BenchmarkTraceOverhead(b *testing.B) {
	for _, traced := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[traced], func(b *testing.B) {
			clk := sched.NewVirtual(t0)
			p := pool.New(pool.Config{Workers: 2, Capacity: 1 << 20})
			defer p.Stop()
			cfg := RunnerConfig{Pool: p, Scheduler: clk, Log: &testkit.Log{}}
			if traced {
				cfg.Tracer = dropTracer{}
			}
			rn := NewRunner(cfg)
			defer rn.Stop()
			r := &rules.Rule{ID: "r", Mode: rules.ModeParallel, Max: 1 << 30, Repeat: rules.Repeat{Passes: 1}}
			in, _ := tmpl.JSON(map[string]any{"level": "trace", "message": "{{vehicle}} one"})
			vals, _ := tmpl.JSON(map[string]any{"battery": "{{battery}}"})
			s := &Sequence{Rule: r, When: yesCond{}, WhenValues: vals, Steps: []CompiledStep{
				{Name: "one", Action: resultAction{}, Input: in}, {Name: "two", Action: resultAction{}, Input: in}, {Name: "three", Action: resultAction{}, Input: in}}}
			var dec bus.Decoder
			e, _ := dec.Decode([]byte(`{"topic":"bench.in","vehicle":"s-1","battery":12}`))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rn.Fire(Trigger{Seq: s, Event: e})
			}
			rn.Quiet(context.Background(), 0)
		})
	}
}
