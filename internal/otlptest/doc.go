// Package otlptest is a real OTLP/HTTP receiver for tests: an httptest
// server that decodes each request with the official protobuf types
// (go.opentelemetry.io/proto/otlp), as a collector does, and keeps the
// spans. Tests only: it links the collector's generated service code.
package otlptest
