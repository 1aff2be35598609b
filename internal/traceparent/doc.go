// Package traceparent reads and writes the W3C trace context's
// traceparent (https://www.w3.org/TR/trace-context/): the value an HTTP
// header and an MQTT 5 user property carry, and an event keeps.
//
// It owns the format and its checks, and nothing of OpenTelemetry:
// host/traces makes spans of it, and the adapters below it (the bus's
// HTTP ingest, the MQTT client) read and send it without linking the SDK.
// It refuses tracestate (not carried: a vendor's, bounded by nobody here).
package traceparent
