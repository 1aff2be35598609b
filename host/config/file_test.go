package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/mqtt"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/wasm"
)

func TestLoadConfigFile(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		err  string // the error contains it; "" for none
		want func(c Config) bool
	}{
		{"durations", "store-wait: 2m\nrules-refresh: 30s\nreplay-window: 2h\n", "",
			func(c Config) bool {
				return c.StoreWait == 2*time.Minute && c.RulesRefresh == 30*time.Second && c.ReplayWindow == 2*time.Hour
			}},
		{"exec log bounds", "exec-log: {runs: 100, keep: 2, max-mb: 8}\n", "",
			func(c Config) bool {
				return !c.NoExecLog && c.ExecLog.Retention == runlog.Retention{Runs: 100, Keep: 2, Bytes: 8 << 20}
			}},
		{"exec log value bound", "exec-log: {value-kb: 16}\n", "", func(c Config) bool { return c.ExecLog.Value == 16<<10 }},
		{"exec log value too large", "exec-log: {value-kb: 4096}\n", "", func(c Config) bool {
			err := c.Validate()
			return err != nil && strings.Contains(err.Error(), "value-kb")
		}},
		{"exec log off", "exec-log: {off: true}\n", "", func(c Config) bool { return c.NoExecLog }},
		{"memory limit", "memory-limit-mb: 16\n", "", func(c Config) bool {
			return c.MemoryLimitMB == 16
		}},
		{"negative memory limit", "memory-limit-mb: -1\n", "memory-limit-mb: must not be negative", nil},
		{"too many memory pages", "plugin:\n  p: {memory-pages: 100000}\n", "over WebAssembly's 65536", nil},
		{"a key twice", "data: a\ndata: b\n", "data is given twice (first at line 1)", nil},
		{"plugin limits", "limits: {timeout: 1s, init-timeout: 5s, stack-kb: 64, fuel: 7}\n" +
			"plugin:\n  p: {timeout: 2s, init-timeout: 3s, stack-kb: 256, memory-pages: 64, instances: 2}\n", "",
			func(c Config) bool {
				// Each as written; daemon merges a plugin's over the defaults.
				return c.Plugins["p"].Limits == wasm.Limits{Timeout: 2 * time.Second, InitTimeout: 3 * time.Second, StackBytes: 256 << 10, MemoryPages: 64, Instances: 2} &&
					c.Limits == wasm.Limits{Timeout: time.Second, InitTimeout: 5 * time.Second, StackBytes: 64 << 10, Fuel: 7}
			}},
		{"bad init timeout", "plugin:\n  p: {init-timeout: later}\n", "init-timeout", nil},
		{"idle timeout", "limits: {idle-timeout: 30s}\nplugin:\n  p: {idle-timeout: never}\n", "", func(c Config) bool {
			return c.Limits.IdleTimeout == 30*time.Second && c.LimitsFor("p").IdleTimeout == -1 && c.LimitsFor("q").IdleTimeout == 30*time.Second
		}},
		{"negative bound", "exec-log: {runs: -1}\n", "must not be negative", nil},
		{"bad duration", "rules-refresh: soon\n", "rules-refresh", nil},
		{"unknown key", "exec-log: {rows: 5}\n", "rows", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ruled.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			var c Config
			err := Load(path, &c)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v; want one containing %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.want != nil && !tc.want(c):
				t.Errorf("config %+v", c)
			}
		})
	}
}

func TestParseGrant(t *testing.T) {
	var c Config
	for _, g := range []string{"p=publish", "p=kv, fire", "q=kv"} {
		if err := c.ParseGrant(g); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(c.Plugins["p"].Grant, c.Plugins["q"].Grant); got != "[publish kv fire] [kv]" {
		t.Errorf("grants %s", got)
	}
	for _, bad := range []string{"publish", "=kv"} {
		if err := c.ParseGrant(bad); err == nil {
			t.Errorf("--grant %q accepted", bad)
		}
	}
}

func TestLoadMQTT(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.yaml")
	os.WriteFile(path, []byte(`rules: r
plugins: p
data: d
mqtt:
  brokers: [mqtt://b:1883]
  subscribe: [scooter/#]
  session-expiry: 2h
  non-json: refuse
  publish:
    - topic: light.>
      retain: true
    - topic: telemetry.*
      qos: 0
    - topic: position.*
      qos: 0
      at-most-once: true
  outbox-limit: 50
`), 0o600)
	var c Config
	if err := Load(path, &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	m := c.MQTT
	if m == nil || m.Brokers[0] != "mqtt://b:1883" || m.Subscribe[0] != "scooter/#" || m.SessionExpiry != 2*time.Hour ||
		m.NonJSON != "refuse" || m.QoS != 1 || !strings.HasPrefix(m.ClientID, "ruled-") {
		t.Errorf("mqtt %+v", m)
	}
	sc, err := m.Client(nil, nil, nil)
	if err != nil || len(sc.Subscribe) != 1 || sc.Subscribe[0].QoS != 1 || sc.WrapNonJSON || sc.SessionExpiry != 2*time.Hour ||
		sc.OutboxLimit != 50 || sc.TLS != nil {
		t.Errorf("client config %+v, %v", sc, err)
	}
	if want := []mqtt.Route{{Pattern: "light.>", QoS: 1, Retain: true}, {Pattern: "telemetry.*", QoS: 0},
		{Pattern: "position.*", QoS: 0, AtMostOnce: true}}; !slices.Equal(sc.Publish, want) {
		t.Errorf("routes %+v, want %+v", sc.Publish, want)
	}
	b := []string{"mqtt://b"}
	for _, bad := range []MQTT{{}, {Brokers: b}, {Brokers: b, Subscribe: []string{"a"}, QoS: 3},
		{Brokers: b, Subscribe: []string{"a"}, NonJSON: "drop"},
		{Brokers: b, Publish: []MQTTRoute{{Topic: "light..x"}}}, {Brokers: b, Publish: []MQTTRoute{{Topic: "a", QoS: 3}}},
		{Brokers: b, Publish: []MQTTRoute{{Topic: "a", QoS: 1, AtMostOnce: true}}},
		{Brokers: b, Subscribe: []string{"a"}, CAFile: "ca.pem"}, {Brokers: []string{"mqtts://b"}, Subscribe: []string{"a"}, CertFile: "c.pem"},
		{Brokers: b, Publish: []MQTTRoute{{Topic: "zigbee2mqtt/+/set"}}}, {Brokers: b, Publish: []MQTTRoute{{Topic: "light.#"}}},
		{Brokers: []string{"http://b:1883"}, Subscribe: []string{"a"}}, {Brokers: []string{"b:1883"}, Subscribe: []string{"a"}}} {
		c := Config{RulesDir: "r", PluginsDir: "p", DataDir: "d", MQTT: &bad}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "mqtt") {
			t.Errorf("mqtt %+v: %v", bad, err)
		}
	}
	zero := filepath.Join(t.TempDir(), "zero.yaml")
	os.WriteFile(zero, []byte("rules: r\nplugins: p\ndata: d\nmqtt: {brokers: [mqtt://b], subscribe: [t/#], qos: 0}\n"), 0o600)
	var cz Config
	if err := Load(zero, &cz); err != nil || cz.Validate() != nil {
		t.Fatal(err)
	}
	if zc, _ := cz.MQTT.Client(nil, nil, nil); !cz.MQTT.AtMostOnce || zc.Subscribe[0].QoS != 0 {
		t.Errorf("qos: 0 → %+v, subscriptions %+v", cz.MQTT, zc.Subscribe)
	}
	route := MQTT{Brokers: b, Publish: []MQTTRoute{{Topic: "zigbee2mqtt/+/set"}}}
	if err := (&Config{RulesDir: "r", PluginsDir: "p", DataDir: "d", MQTT: &route}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "(zigbee2mqtt.*.set)") {
		t.Errorf("an MQTT filter as a publish route: %v, want the pattern it meant", err)
	}
	tm := MQTT{Brokers: []string{"mqtts://b"}, Subscribe: []string{"a"}, CAFile: filepath.Join(t.TempDir(), "none.pem")}
	if _, err := tm.Client(nil, nil, nil); err == nil || !strings.Contains(err.Error(), "none.pem") {
		t.Errorf("a missing CA file: %v", err)
	}
}
