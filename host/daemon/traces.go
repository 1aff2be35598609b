package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/traces"
	"github.com/ruled-dev/ruled/internal/release"
)

// TracesCloseWithin bounds how long a stop waits for the collector to
// take the spans still queued: a collector that does not answer does not
// hold a stop longer.
const TracesCloseWithin = 5 * time.Second

// openTraces starts sending runs as traces when a collector is named
// (Config.Traces). It closes after the execution log, so the runs that
// end while the daemon stops are sent.
func (d *Daemon) openTraces() error {
	if d.cfg.Traces.Endpoint == "" {
		return nil
	}
	cfg := d.cfg.Traces
	cfg.Version, cfg.Instance = release.Read().Version, d.procID
	cfg.Warn = d.log.Named("traces").Warn
	x, err := traces.New(cfg)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	d.spans = x
	d.closers = append(d.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), TracesCloseWithin)
		defer cancel()
		x.Close(ctx)
		return nil
	})
	d.log.Info("sending runs as traces", "endpoint", x.Endpoint(), "sample-ratio", cfg.Ratio)
	return nil
}

// traceStatus is what the exporter did, for Status; nil when it is off.
func (d *Daemon) traceStatus() *status.TraceStatus {
	if d.spans == nil {
		return nil
	}
	s := d.spans.Stats()
	return &status.TraceStatus{Endpoint: d.spans.Endpoint(), Ratio: d.cfg.Traces.Ratio, Exported: s.Exported,
		Dropped: s.Dropped, Failed: s.Failed, Queued: s.Queued, LastError: s.LastError}
}
