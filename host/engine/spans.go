package engine

import "github.com/ruled-dev/ruled/host/runlog"

// Spans sends runs as traces (host/traces.Exporter): it hears what the
// execution log hears, and gives a step the traceparent it sends on. Its
// methods must not block: the runner calls them under its lock.
type Spans interface {
	Run(runlog.Run)
	Node(runlog.Node)
	StepParent(run, parent string, node int) string
}

// both tells the execution log and the spans what runs do (the runner's
// seq.Tracer, when both are on).
type both struct {
	log   *runlog.Log
	spans Spans
}

func (b both) Run(r runlog.Run) {
	b.log.Run(r)
	b.spans.Run(r)
}

func (b both) Node(n runlog.Node) {
	b.log.Node(n)
	b.spans.Node(n)
}

func (b both) LastSeq(run string) (int, error) { return b.log.LastSeq(run) }

// spansOnly is the runner's seq.Tracer with the execution log off: a
// replayed run numbers its nodes on from its record's (the log that
// would know of later ones is not kept).
type spansOnly struct{ Spans }

func (spansOnly) LastSeq(string) (int, error) { return 0, nil }

// passOn is the runner's StepTrace when no span is sent: the trigger's
// traceparent, as it came.
func passOn(_, parent string, _ int) string { return parent }
