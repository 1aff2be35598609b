package config

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/mqtt"
	"github.com/ruled-dev/ruled/internal/mqtttest"
	"github.com/ruled-dev/ruled/internal/testkit"
)

type events struct {
	mu  sync.Mutex
	got []*bus.Event
}

func (e *events) TakeWaiting(_ context.Context, ev *bus.Event) error {
	e.mu.Lock()
	e.got = append(e.got, ev)
	e.mu.Unlock()
	return nil
}

func (e *events) n() int { e.mu.Lock(); defer e.mu.Unlock(); return len(e.got) }

// TestMQTTOverTLS: the settings' CA and client certificate files reach a
// real mosquitto that speaks TLS and requires a client certificate; a
// client without the certificate is refused by it.
func TestMQTTOverTLS(t *testing.T) {
	b, tl := mqtttest.StartTLS(t)
	m := MQTT{Brokers: []string{tl.URL()}, ClientID: "ruled-tls", Subscribe: []string{"door/#"},
		CAFile: tl.CA, CertFile: tl.ClientCert, KeyFile: tl.ClientKey}
	c := Config{RulesDir: "r", PluginsDir: "p", DataDir: "d", MQTT: &m}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := m.Client(&bus.Decoder{}, nil, testkit.LogTo(t))
	if err != nil {
		t.Fatal(err)
	}
	k := &events{}
	cl, err := mqtt.Start(cfg, k)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testkit.Eventually(t, "connected over TLS", func() bool { return cl.Stats().Up })
	time.Sleep(200 * time.Millisecond) // the subscription follows the connection
	b.Publish(t, "door/front", `{"contact":false}`)
	testkit.Eventually(t, "the event", func() bool { return k.n() == 1 })

	// Without a client certificate the broker refuses the handshake.
	bare := m
	bare.ClientID, bare.CertFile, bare.KeyFile = "ruled-bare", "", ""
	cfg, err = bare.Client(&bus.Decoder{}, nil, testkit.LogTo(t))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := mqtt.Start(cfg, &events{})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	time.Sleep(time.Second)
	if nc.Stats().Up {
		t.Error("a client without a certificate connected")
	}
}
