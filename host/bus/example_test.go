package bus_test

import (
	"context"
	"fmt"

	"github.com/ruled-dev/ruled/host/bus"
)

func ExampleLocal() {
	var b bus.Local
	var dec bus.Decoder

	// A subscriber, like ruled's rule runner, only looks at the event and
	// queues work: Publish calls it on the publisher's goroutine.
	queue := make(chan *bus.Event, 16)
	cancel := b.Subscribe(func(e *bus.Event) { queue <- e })
	defer cancel()

	e, err := dec.Decode([]byte(`{"topic":"vehicle.s1.battery","id":"e1","level":12}`))
	if err != nil {
		panic(err)
	}
	if err := b.Publish(context.Background(), e); err != nil {
		panic(err)
	}
	got := <-queue
	fmt.Println(got.ID, got.Topic)

	// Reserved topics are ruled's own: ingest refuses them.
	_, err = dec.Decode([]byte(`{"topic":"ruled.cmd.r1"}`))
	fmt.Println(bus.ReasonOf(err))
	// Output:
	// e1 vehicle.s1.battery
	// reserved topic
}
