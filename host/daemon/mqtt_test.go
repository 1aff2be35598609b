package daemon

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/mqtt"
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

// TestMQTT: a device's MQTT messages are the rules' events
// (scooter/v1/telemetry is scooter.v1.telemetry), what arrives while the
// daemon is down is delivered when it starts again with the same session,
// and what the rules publish on a publish route goes to the broker with
// the step's idempotency key.
func TestMQTT(t *testing.T) {
	b := mqtttest.Start(t)
	l := b.Listen(t, "alerts/#")
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), mqttRules)
	cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"),
		MQTT: &MQTT{Brokers: []string{b.URL()}, ClientID: "ruled-test", Subscribe: []string{"scooter/#"},
			Publish: []MQTTRoute{{Topic: "alerts.>", QoS: 1}}}}
	td := startDaemon(t, cfg)
	eventually(t, "the MQTT connection", func() bool { st := td.Status(); return st.MQTT != nil && st.MQTT.Up })
	time.Sleep(200 * time.Millisecond) // the subscription follows the connection
	b.Publish(t, "scooter/v1/telemetry", `{"vehicle":"v1","battery":12}`)
	eventually(t, "the rule's alert", func() bool { return len(td.topics("alerts.v1")) == 1 })
	got := l.Wait(1)
	if len(got) != 1 || got[0].Topic != "alerts/v1" || got[0].Payload != `{"vehicle":"v1"}` ||
		got[0].User[mqtt.PropBy] != "low-battery/alert" || got[0].User[mqtt.PropKey] == "" {
		t.Fatalf("the broker got %+v", got)
	}
	eventually(t, "the outbox emptied", func() bool { return td.Status().MQTT.Published == 1 })
	if st := td.Status().MQTT; st.Received != 1 || st.Accepted != 1 || st.Outbox != 0 {
		t.Errorf("mqtt status %+v", st)
	}
	mf := scrape(t, socketClient(cfg.DataDir))
	found := map[string]float64{}
	for _, name := range []string{"ruled_mqtt_messages_total", "ruled_mqtt_published_total", "ruled_mqtt_connected"} {
		for _, m := range mf[name].GetMetric() {
			key := name
			for _, l := range m.GetLabel() {
				key += "/" + l.GetValue()
			}
			found[key] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	if found["ruled_mqtt_messages_total/accepted"] != 1 || found["ruled_mqtt_published_total/ok"] != 1 || found["ruled_mqtt_connected"] != 1 {
		t.Errorf("/metrics: %v", found)
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
	if got := l.Wait(3); len(got) != 3 {
		t.Errorf("the broker got %d alerts, want 3: %+v", len(got), got)
	}
}
