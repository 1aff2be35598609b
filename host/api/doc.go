// Package api is ruled's HTTP API: its endpoints (status, plugins, rules
// with their definitions and commands, pending steps, runs with their
// trees and commands, health, readiness, the console), a command on the
// control topic (ControlCommand), and the server that listens — on a unix socket always, on TCP
// when asked, with the origin check (SameOrigin), the token guard (Guard,
// CheckBind), the per-client rate limit (Limiter), and connection bounds
// (ConnLimit). These came from package bus (issue 40): they guard the
// API's listeners, and bus is events and their transports. The JSON
// shapes it answers with (Status, RuleStatus, Command …) are host/status's:
// the packages that make the answers use them without importing the HTTP
// server.
//
// It refuses to know how the answers are made. It serves an Engine, an
// interface it declares with the few methods it calls; the daemon is one.
// Handlers that belong to other adapters — event ingest, the event
// stream, the change stream, the metrics — are handed in as Routes. A new admin endpoint goes
// here: a method on Engine if it needs the engine, a route in Handler.
package api
