package config_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ruled-dev/ruled/host/config"
)

// A config file read into a Config, a --grant flag applied after it, and
// the defaults Validate fills in.
func Example() {
	dir, _ := os.MkdirTemp("", "ruled")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ruled.yaml")
	os.WriteFile(path, []byte(`
rules: /etc/ruled/rules
plugins: /etc/ruled/plugins
data: /var/lib/ruled
replay-window: 2h
plugin:
  publish: {grant: [publish], timeout: 2s}
`), 0o600)
	var c config.Config
	if err := config.Load(path, &c); err != nil {
		fmt.Println(err)
		return
	}
	c.ParseGrant("scooter=kv")
	if err := c.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.RulesDir, c.ReplayWindow, c.QueueCapacity)
	fmt.Println(c.PluginOptions("publish").Grant, c.PluginOptions("publish").Limits.Timeout, c.PluginOptions("scooter").Grant)
	// Output:
	// /etc/ruled/rules 2h0m0s 1024
	// [publish] 2s [kv]
}
