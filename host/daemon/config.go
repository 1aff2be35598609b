package daemon

import "github.com/ruled-dev/ruled/host/config"

// Config configures a Daemon: host/config's (its fields, defaults and
// Validate are documented there).
type Config = config.Config

// PluginConfig is the operator's word on one plugin (config.PluginConfig).
type PluginConfig = config.PluginConfig

// MQTT is a broker as a source of events (config.MQTT).
type MQTT = config.MQTT
