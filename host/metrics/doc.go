// Package metrics is ruled's Prometheus exposition: a collector that turns
// the engine's Status (status.Status) into metrics when /metrics is scraped,
// the latency histograms of plugin calls and steps, fleet mode's supply
// cycles (pipeline.Result), and the reload counters.
//
// It owns the metric names, their help and labels, and one registry per
// engine. It refuses to count anything the engine already counts: what a
// Status reports is read at scrape time, so a scrape costs nothing between
// scrapes, and only what Status cannot say (latencies, cycles, reloads) is
// observed as it happens. It reads the engine through Source, which it
// declares; the daemon is one. It starts no goroutine.
package metrics
