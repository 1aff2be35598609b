// Package tmpl fills `{{path}}` placeholders from an event, for the
// first-party plugins' topics, messages and payloads. A template is compiled
// once, when a step's config is configured, into literal bytes and
// placeholders, so a call only copies and looks up; it never parses JSON.
//
// It runs inside plugins (wasip1) and natively, imports only the standard
// library and abi, and owns no goroutine.
package tmpl
