package runlog_test

import (
	"fmt"

	"github.com/ruled-dev/ruled/host/runlog"
)

// Keys derive from the run and the node's number, zero-padded so that a
// store's lexicographic order is the order nodes opened in.
func ExampleNodeKey() {
	fmt.Println(runlog.ExecKey("7f3a"))
	fmt.Println(runlog.NodeKey("7f3a", 12))
	run, seq, err := runlog.ParseKey("ruled:log:7f3a:n:000012")
	fmt.Println(run, seq, err)
	_, _, err = runlog.ParseKey("ruled:pending")
	fmt.Println(err)
	// Output:
	// ruled:log:7f3a:exec
	// ruled:log:7f3a:n:000012
	// 7f3a 12 <nil>
	// runlog: key "ruled:pending" is outside "ruled:log:"
}

// A store that keeps a Meta per run indexes them for retention, and a pass
// takes the oldest runs past the count, sparing each rule's newest run per
// outcome (Keep): the failure b outlives the newer successes c and d.
func ExampleIndex() {
	x := runlog.NewIndex([]*runlog.Meta{
		{ID: "a", Rule: "lamp", Outcome: runlog.OK, At: 1, Bytes: 10},
		{ID: "b", Rule: "lamp", Outcome: runlog.Failed, At: 2, Bytes: 10},
		{ID: "c", Rule: "lamp", Outcome: runlog.OK, At: 3, Bytes: 10},
		{ID: "d", Rule: "lamp", Outcome: runlog.OK, At: 4, Bytes: 10},
		{ID: "e", Rule: "lamp", Outcome: runlog.OK, At: 5, Bytes: 10},
	})
	for _, m := range x.Take(runlog.Retention{Runs: 2, Keep: 1}) {
		fmt.Println("delete", m.ID)
	}
	fmt.Println(x.Len(), "kept,", x.Bytes(), "bytes")
	// Output:
	// delete a
	// delete c
	// delete d
	// 2 kept, 20 bytes
}
