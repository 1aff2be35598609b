package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ruled-dev/ruled/host/store"
)

func ExampleOpenBolt() {
	dir, _ := os.MkdirTemp("", "ruled")
	defer os.RemoveAll(dir)

	db, err := store.OpenBolt(filepath.Join(dir, "ruled.db"), store.BoltOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	// The sequencer's pending records: a hash of run id -> record.
	_ = db.HSet("ruled:pending", "run-1", `{"id":"run-1","step":2}`)
	records, _ := db.HGetAll("ruled:pending")
	fmt.Println(records["run-1"])
	_ = db.HDel("ruled:pending", "run-1", "already-gone") // removing what is not there is fine

	// A plugin's kv, scoped by the plugin's name.
	ctx := context.Background()
	_ = db.Set(ctx, "battery", "last", []byte("17"))
	v, found, _ := db.Get(ctx, "battery", "last")
	_, foundElsewhere, _ := db.Get(ctx, "publish", "last")
	fmt.Println(string(v), found, foundElsewhere)
	// Output:
	// {"id":"run-1","step":2}
	// 17 true false
}
