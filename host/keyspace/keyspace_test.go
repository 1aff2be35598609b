package keyspace

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestKEYSListsEveryName: each name this package spells is in KEYS.md, so
// the table cannot fall behind the code.
func TestKEYSListsEveryName(t *testing.T) {
	b, err := os.ReadFile("KEYS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, name := range []string{
		Pending, Journal, Tasks, KVPrefix, Bus, Control, LogPrefix, RunPrefix, Runs, RunsMeta, ClusterLogTag,
		Deploy, DeployHistory, DeployVersion, BlobPrefix, Audit, AuditHead, History, Ingest, State, Holds, Windows, FleetStates, FleetTriggers, FleetDue, FleetSeen, FleetWindows, FleetWindowsDue, FleetWindowsIdle, FleetWindowsClosed, Members,
		strings.Replace(ShardPending(7), "7", "N", 1), strings.Replace(Shard(7), "7", "N", 1),
	} {
		if !strings.Contains(doc, name) {
			t.Errorf("KEYS.md does not name %q", name)
		}
	}
}

func ExampleShardPending() {
	fmt.Println(ShardPending(3))
	// Output: ruled:{3}:pending
}
