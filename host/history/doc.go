// Package history is what the daemon counted, minute by minute, for the
// console's charts: each rule's runs started, failed and turned away and
// its errors, each plugin's call latency (p50, p99), the queue's depth —
// over the last hour (60 points a minute apart) and the last day (96
// points a quarter of an hour apart).
//
// # What it owns
//
// The rings (History): a Reading of the daemon's cumulative counters
// each step becomes the step's point — the counters' increase since the
// reading before, a histogram's quantiles over the step, a gauge as read
// — and every 15 points of the hour make one of the day. The points as
// the API shows them (Snapshot), and as the store keeps them (Marshal,
// Restore): a restart does not blank the charts where the store can keep
// them. Its bounds: MaxRules rules and MaxPlugins plugins charted; past
// them a name is left out, and counted.
//
// # What it refuses
//
// Reading the daemon (its caller makes each Reading: the engine's rule
// stats, the metrics' histograms, the pool), keeping time (the caller's
// ticker says when a step has passed, and stops with the daemon), storing
// (the caller writes what Marshal gives). Sums over rules, rates per
// second, and alerting: a chart shows a rule's line, an operator's
// Prometheus the rest (dist/grafana).
package history
