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
