// Package config owns a daemon's settings: each declared once (Settings:
// its config file key, flag, environment variable, kind, default and
// sentence) and read from the config file (Load), the environment
// (ApplyEnv) and the flags (Flags) in that order, so flags win; the
// reference page (Reference); what cannot work together (Validate); and
// how a plugin's grant, limits and HTTP allow-list and the MQTT client's
// settings are read from them (PluginOptions, HTTPPolicy, MQTT.Client).
// sdk/ruletest fills a Config from a harness's options; host/daemon builds
// a process from it.
//
// It refuses doing anything with a setting: opening, listening and
// loading are the daemon's. It owns no goroutine and no state.
package config
