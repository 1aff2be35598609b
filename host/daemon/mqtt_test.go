package daemon

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/ruled-dev/ruled/internal/mqtttest"
)

const mqttRules = `
- id: low-battery
  on: scooter.*.telemetry
  mode: parallel
  steps:
    - name: alert
      do: publish.publish
      with: {topic: "alerts.{{vehicle}}", payload: {vehicle: "{{vehicle}}"}}
`

// mqttPublish sends messages at QoS 1 to the broker from a client of its own.
func mqttPublish(t *testing.T, b *mqtttest.Broker, topic string, payloads ...string) {
	t.Helper()
	u, _ := url.Parse(b.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cm, err := autopaho.NewConnection(ctx, autopaho.ClientConfig{ServerUrls: []*url.URL{u}, KeepAlive: 10,
		ClientConfig: paho.ClientConfig{ClientID: "device"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cm.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		if _, err := cm.Publish(ctx, &paho.Publish{Topic: topic, Payload: []byte(p), QoS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	cm.Disconnect(ctx)
}

// TestMQTTSource: a device's MQTT messages are the rules' events
// (scooter/v1/telemetry is scooter.v1.telemetry), and what arrives while
// the daemon is down is delivered when it starts again with the same
// session.
func TestMQTTSource(t *testing.T) {
	b := mqtttest.Start(t)
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), mqttRules)
	cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"),
		MQTT: &MQTT{Brokers: []string{b.URL()}, ClientID: "ruled-test", Subscribe: []string{"scooter/#"}}}
	td := startDaemon(t, cfg)
	eventually(t, "the MQTT connection", func() bool { st := td.Status(); return st.MQTT != nil && st.MQTT.Up })
	time.Sleep(200 * time.Millisecond) // the subscription follows the connection
	mqttPublish(t, b, "scooter/v1/telemetry", `{"vehicle":"v1","battery":12}`)
	eventually(t, "the rule's alert", func() bool { return len(td.topics("alerts.v1")) == 1 })
	if st := td.Status().MQTT; st.Received != 1 || st.Accepted != 1 {
		t.Errorf("mqtt status %+v", st)
	}
	if err := td.Stop(); err != nil {
		t.Fatal(err)
	}

	// Down: the broker keeps the session's messages until it is back.
	mqttPublish(t, b, "scooter/v2/telemetry", `{"vehicle":"v2"}`, `{"vehicle":"v3"}`)
	td2 := startDaemon(t, cfg)
	eventually(t, "the alerts of what arrived while it was down", func() bool {
		return len(td2.topics("alerts.v2")) == 1 && len(td2.topics("alerts.v3")) == 1
	})
}
