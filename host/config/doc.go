// Package config owns a daemon's settings: every one of them with its
// default and its documentation (Config), what cannot work together
// (Validate), and how a plugin's grant and limits are read from them
// (PluginOptions). The CLI fills a Config from its flags and the config
// file (cmd/ruled), sdk/ruletest from a harness's options; host/daemon
// builds a process from it.
//
// It refuses doing anything with a setting: opening, listening and
// loading are the daemon's. It owns no goroutine and no state.
package config
