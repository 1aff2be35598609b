package state_test

import (
	"fmt"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/state"
)

// A door reports three times: open, open again (no change: only when it
// was last seen moves), closed. A fleet's telemetry names its entities
// by a key field.
func ExampleTable_Observe() {
	key, _ := state.ParseKeyRule("scooter.telemetry=vehicle")
	tb, _ := state.New(state.Config{Keys: []state.KeyRule{key}}) // no Store: kept in memory
	defer tb.Close()
	var d bus.Decoder
	for _, js := range []string{
		`{"topic":"door.front","open":true}`,
		`{"topic":"door.front","open":true,"id":"r2"}`,
		`{"topic":"door.front","open":false}`,
		`{"topic":"scooter.telemetry","vehicle":"sc-42","battery":80}`,
	} {
		e, _ := d.Decode([]byte(js))
		c := tb.Observe(e)
		fmt.Printf("%s changed=%v had a state before=%v\n", c.Entity, c.Changed, c.Prev != nil)
	}
	// Output:
	// door.front changed=true had a state before=false
	// door.front changed=false had a state before=true
	// door.front changed=true had a state before=true
	// scooter.telemetry/sc-42 changed=true had a state before=false
}
