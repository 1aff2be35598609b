package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/ruled-dev/ruled/internal/mqtttest"
)

// TestMQTTKill9: a device publishes 200 jobs over MQTT (QoS 1) to a ruled
// whose rule has a durable step; the process is killed with SIGKILL while
// it takes them, and a new one starts on the same data and MQTT session.
// Every job fires: what the first process acknowledged it had journaled or
// recorded, and what it had not acknowledged the broker delivers again.
// Repeats are allowed (at least once) and counted.
func TestMQTTKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	const n = 200
	b := mqtttest.Start(t)
	rules, plugins := fixture(t, durableRules)
	data := t.TempDir()
	args := []string{"--rules", rules, "--plugins", plugins, "--mqtt", b.URL(), "--mqtt-subscribe", "job/#",
		"--mqtt-client-id", "ruled-kill9"}
	a := startRuled(t, data, args...)
	a.waitLog("mqtt: connected and subscribed", 1)

	u, _ := url.Parse(b.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dev, err := autopaho.NewConnection(ctx, autopaho.ClientConfig{ServerUrls: []*url.URL{u}, KeepAlive: 10,
		ClientConfig: paho.ClientConfig{ClientID: "device"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	published := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if _, err := dev.Publish(ctx, &paho.Publish{Topic: "job/start", QoS: 1,
				Payload: []byte(fmt.Sprintf(`{"n":"m%d"}`, i))}); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	}()
	a.waitLogWithin("FIRST m", n/4, time.Minute)
	a.kill()
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	dev.Disconnect(ctx)
	took := strings.Count(a.out.String(), "FIRST m")

	b2 := startRuled(t, data, args...)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := fired(a.out.String(), b2.out.String())
		missing := 0
		for i := 1; i <= n; i++ {
			if got["m"+strconv.Itoa(i)] == 0 {
				missing++
			}
		}
		if missing == 0 {
			repeats := 0
			for _, c := range got {
				repeats += c - 1
			}
			t.Logf("%d jobs: the killed process started %d; all fired after the restart, %d repeats", n, took, repeats)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs never fired", missing, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
