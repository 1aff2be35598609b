// Package traces sends runs to an OpenTelemetry collector as traces, over
// OTLP/HTTP, and carries W3C trace context through them.
//
// # What it owns
//
// The ids of a run's spans (ids.go): a run is a trace, or a span under the
// trace its trigger came with (a traceparent from HTTP or MQTT); each node
// of its execution log is a span under the run's. The ids are worked out
// from the run's id and the node's number, not drawn at random, so that
// two processes agree on them without telling each other: a run that
// waited out a durable delay across a restart goes on in the same trace,
// and a step knows the span it is in (StepParent) before its span ends,
// for the traceparent it sends on (an outbound request, an event it
// publishes).
//
// The Exporter: it hears what the execution log hears (Run, Node), keeps
// the closed nodes and ended runs of sampled runs (the parent's flag, else
// the OpenTelemetry SDK's ratio of trace ids) in a bounded queue, and on
// its one goroutine writes them as OTLP protobuf spans (wire.go) and posts
// them in batches to the collector (otlp.go). A run never waits for it: a
// full queue drops the span and counts it; a collector that is down costs
// the queue and one batch, and its failures are counted and logged once a
// second. Close ends the goroutine.
//
// # What it refuses
//
// Deciding what a run is or which node it opens (host/seq's logbook tells
// it, as it tells the execution log); keeping anything (spans not sent are
// gone: the execution log is the record); a span's content beyond what
// the log's node says — inputs and outputs go as their sizes, never their
// values, which may be a customer's data.
package traces
