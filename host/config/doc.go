// Package config owns a daemon's settings: every one of them with its
// default and its documentation (Config), what cannot work together
// (Validate), how a plugin's grant, limits and HTTP allow-list and the
// MQTT client's settings are read from them (PluginOptions, HTTPPolicy,
// MQTT.Client), and the config file's format (Load; --grant's,
// --http-allow's: ParseGrant, ParseHTTPAllow). The CLI reads the file with Load and applies its flags
// after, so flags win; sdk/ruletest fills a Config from a harness's
// options; host/daemon builds a process from it.
//
// It refuses doing anything with a setting: opening, listening and
// loading are the daemon's. It owns no goroutine and no state.
package config
