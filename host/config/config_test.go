package config

import (
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
