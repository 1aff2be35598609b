package daemon

import (
	"path/filepath"
	"testing"
	"time"

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
	b.Publish(t, "scooter/v1/telemetry", `{"vehicle":"v1","battery":12}`)
	eventually(t, "the rule's alert", func() bool { return len(td.topics("alerts.v1")) == 1 })
	if st := td.Status().MQTT; st.Received != 1 || st.Accepted != 1 {
		t.Errorf("mqtt status %+v", st)
	}
	if err := td.Stop(); err != nil {
		t.Fatal(err)
	}

	// Down: the broker keeps the session's messages until it is back.
	b.Publish(t, "scooter/v2/telemetry", `{"vehicle":"v2"}`, `{"vehicle":"v3"}`)
	td2 := startDaemon(t, cfg)
	eventually(t, "the alerts of what arrived while it was down", func() bool {
		return len(td2.topics("alerts.v2")) == 1 && len(td2.topics("alerts.v3")) == 1
	})
}
