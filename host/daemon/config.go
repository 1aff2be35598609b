package daemon

import "github.com/ruled-dev/ruled/host/config"

// Config configures a Daemon: host/config's (its fields, defaults and
// Validate are documented there).
type Config = config.Config

// PluginConfig is the operator's word on one plugin (config.PluginConfig).
type PluginConfig = config.PluginConfig

// MQTT is a broker as a source of events and a sink of what rules
// publish (config.MQTT).
type MQTT = config.MQTT

// MQTTRoute is one route of what rules publish to the broker
// (config.MQTTRoute).
type MQTTRoute = config.MQTTRoute

// Signatures say where files must be signed, by which keys
// (config.Signatures).
type Signatures = config.Signatures
