// Package config owns a daemon's settings: every one of them with its
// default and its documentation (Config), what cannot work together
// (Validate), how a plugin's grant and limits and the MQTT source's
// settings are read from them (PluginOptions, MQTT.Source), and the config file's format (Load; --grant's,
// ParseGrant). The CLI reads the file with Load and applies its flags
// after, so flags win; sdk/ruletest fills a Config from a harness's
// options; host/daemon builds a process from it.
//
// It refuses doing anything with a setting: opening, listening and
// loading are the daemon's. It owns no goroutine and no state.
package config
