package wasm_test

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// publisher prints what a plugin publishes, standing in for the bus.
type publisher struct{}

func (publisher) Publish(_ context.Context, from wasm.Origin, topic string, payload []byte) error {
	fmt.Printf("%s published %s %s\n", from.Plugin, topic, payload)
	return nil
}

// Load a plugin, configure a condition and an action the way a rule's steps
// would, and call them with one event decoded once.
func Example() {
	ctx := context.Background()
	rt, err := wasm.NewRuntime(ctx, wasm.Config{Services: wasm.Services{Publisher: publisher{}}})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	// The AssemblyScript SDK's example plugin; the operator grants publish.
	path := filepath.Join(plugintest.Root(), "sdk/assemblyscript/build/example.wasm")
	m, err := rt.LoadFile(ctx, path, wasm.Options{Name: "battery", Grant: []abi.Capability{abi.CapPublish}})
	if err != nil {
		panic(err)
	}
	low, err := m.Configure(ctx, "battery_low", []byte(`{"below": 15}`))
	if err != nil {
		panic(err)
	}
	alert, err := m.Configure(ctx, "alert", []byte(`{"topic": "alerts.battery"}`))
	if err != nil {
		panic(err)
	}

	event := []byte(`{"topic":"scooter.telemetry","vehicle":"s-17","battery":12}`)
	c, err := wasm.NewCall(abi.CallInfo{Topic: "scooter.telemetry", Rule: "low-battery",
		Step: "alert", Run: "run-1", Key: "run-1/alert/0"}, event)
	if err != nil {
		panic(err)
	}
	ok, err := low.When(ctx, c)
	fmt.Println("battery_low:", ok, err)
	if ok {
		_, err := alert.Act(ctx, c)
		fmt.Println("alert:", err)
	}
	// Output:
	// battery_low: true <nil>
	// battery published alerts.battery {"vehicle":"s-17","battery":12}
	// alert: <nil>
}
