package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/wasm"
)

// A plugin's own limits win over the defaults, every one of them
// (init-timeout and stack-kb were parsed and not used).
func TestLimitsFor(t *testing.T) {
	c := Config{Limits: wasm.Limits{Timeout: time.Second, InitTimeout: 5 * time.Second, StackBytes: 64 << 10, Fuel: 7},
		Plugins: map[string]PluginConfig{"p": {Limits: wasm.Limits{Timeout: 2 * time.Second, InitTimeout: 3 * time.Second,
			StackBytes: 256 << 10, MemoryPages: 64, Instances: 2}}}}
	tests := []struct {
		plugin string
		want   wasm.Limits
	}{
		{"p", wasm.Limits{Timeout: 2 * time.Second, InitTimeout: 3 * time.Second, StackBytes: 256 << 10, MemoryPages: 64, Fuel: 7, Instances: 2}},
		{"q", c.Limits},
	}
	for _, tc := range tests {
		if got := c.LimitsFor(tc.plugin); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.plugin, got, tc.want)
		}
		if got := c.PluginOptions(tc.plugin); got.Name != tc.plugin || got.Limits != tc.want {
			t.Errorf("%s: options %+v", tc.plugin, got)
		}
	}
}

// TestValidateDeployed: --redis with neither directory means deployed
// rules and plugins; Validate is idempotent; mixing is refused.
func TestValidateDeployed(t *testing.T) {
	tests := []struct {
		name     string
		c        Config
		err      string
		deployed bool
	}{
		{"redis, no directories", Config{RedisURL: "redis://x", DataDir: "/d"}, "", true},
		{"directories", Config{RedisURL: "redis://x", DataDir: "/d", RulesDir: "r", PluginsDir: "p"}, "", false},
		{"rules only", Config{RedisURL: "redis://x", DataDir: "/d", RulesDir: "r"}, "--plugins required", false},
		{"no redis", Config{DataDir: "/d"}, "--rules, --plugins required", false},
		{"deployed without redis", Config{Deployed: true, DataDir: "/d"}, "need --redis", false},
		{"deployed with a directory", Config{Deployed: true, RedisURL: "redis://x", DataDir: "/d", RulesDir: "r"}, "give neither", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.c.Deployed != tc.deployed {
				t.Errorf("deployed %v; want %v", tc.c.Deployed, tc.deployed)
			}
			if tc.deployed && (tc.c.RulesDir != filepath.Join("/d", "deployed", "rules") || tc.c.PluginsDir != filepath.Join("/d", "deployed", "plugins")) {
				t.Errorf("directories %s, %s", tc.c.RulesDir, tc.c.PluginsDir)
			}
			if err := tc.c.Validate(); err != nil {
				t.Errorf("a second Validate: %v", err)
			}
		})
	}
}

// TestLocation: the daemon's location, from the config file and the
// flags, reaches the sun as given; one half given, or out of range, is
// refused naming what is wrong; none is no location.
func TestLocation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ruled.yaml")
	os.WriteFile(path, []byte("rules: r\nplugins: p\ndata: d\nlocation:\n  latitude: 78.22\n  longitude: 15.63\n  elevation: 10\n"), 0o600)
	var c Config
	if err := Load(path, &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if l, ok := c.Location.Sun(); !ok || l.Latitude != 78.22 || l.Longitude != 15.63 || l.Elevation != 10 {
		t.Errorf("location %+v, %v", l, ok)
	}
	for _, tc := range []struct {
		l   Location
		err string
	}{
		{Location{Latitude: 52, HasLatitude: true}, "location needs both latitude and longitude"},
		{Location{Longitude: 13, HasLongitude: true}, "location needs both latitude and longitude"},
		{Location{Latitude: 95, Longitude: 13, HasLatitude: true, HasLongitude: true}, "latitude 95 is not between -90 and 90"},
		{Location{Latitude: 52, Longitude: 200, HasLatitude: true, HasLongitude: true}, "longitude 200 is not between -180 and 180"},
		{Location{Latitude: 52, Longitude: 13, Elevation: -5, HasLatitude: true, HasLongitude: true}, "elevation -5 m"},
	} {
		c := Config{RulesDir: "r", PluginsDir: "p", DataDir: "d", Location: tc.l}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: %v; want %q", tc.l, err, tc.err)
		}
	}
	if _, ok := (Location{}).Sun(); ok {
		t.Error("no location given is a location")
	}
}

// TestValidateNamesWhere: Validate tells every mistake the settings make
// together, each with where it was given — the file's line and column,
// the environment's variable, the flag —, in that order.
func TestValidateNamesWhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ruled.yaml")
	os.WriteFile(path, []byte(`rules: r
plugins: p
data: d
location:
  latitude: 95
mqtt:
  brokers: [mqtt://localhost:1883]
  non-json: maybe
replay-clock: later
plugin:
  p: {http: {hosts: ["*"]}}
`), 0o600)
	c := fromAll(t, path, map[string]string{"RULED_SHARDS": "2"}, []string{"--tls-cert", "x"})
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate took them")
	}
	want := []string{
		path + `:5:13: location needs both latitude and longitude`,
		path + `:7:12: mqtt: give a topic filter to subscribe to`,
		path + `:8:13: mqtt: non-json "maybe": want wrap or refuse`,
		path + `:9:15: replay clock "later"`,
		path + `:11:21: plugin p: http host "*"`,
		`$RULED_SHARDS: --shards needs --redis`,
		`--tls-cert: --tls-cert and --tls-key go together`,
	}
	got := strings.Split(err.Error(), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d mistakes told, want %d:\n%v", len(got), len(want), err)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("mistake %d: %q, want %q…", i, got[i], want[i])
		}
	}
}
