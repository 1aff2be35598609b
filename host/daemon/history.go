package daemon

import (
	"context"
	"math"
	"os"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ruled-dev/ruled/host/history"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/internal/lograte"
)

// historyTTL is how long a host's charts outlive its last write on Redis.
const historyTTL = 48 * time.Hour

// historyHost names this process's charts: its host.
func historyHost() string {
	host, _ := os.Hostname()
	if host == "" {
		return "localhost"
	}
	return host
}

// startHistory keeps the console's charts' points (host/history): read
// back from the store, a point a step (a minute) on a goroutine that
// writes them to the store each time, and at a stop the step so far,
// written once more. The goroutine ends with the closer it appends.
func (d *Daemon) startHistory() {
	step := d.cfg.HistoryStep
	if step <= 0 {
		step = time.Minute
	}
	h := history.New(step)
	key := keyspace.HistoryOf(historyHost())
	if kept, err := d.hasher.HGetAll(key); err != nil {
		d.log.Warn("charts: cannot read the points kept; they start empty", "error", err)
	} else if b, ok := kept["rings"]; ok {
		if err := h.Restore([]byte(b)); err != nil {
			d.log.Warn("charts: the points kept do not read; they start empty", "error", err)
		}
	}
	h.Begin(d.reading())
	d.history = h
	var warns lograte.Limiter
	keep := func() {
		b, err := h.Marshal()
		if err == nil {
			err = d.hasher.HSet(key, "rings", b)
		}
		if err == nil && d.redis != nil {
			// A host gone (a pod replaced) takes its charts with it.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = d.redis.Client().Expire(ctx, key, historyTTL).Err()
			cancel()
		}
		if err != nil {
			if folded, ok := warns.Allow("write"); ok {
				d.log.Warn("charts: cannot keep the points; a restart will not show them", "error", err, "folded", folded)
			}
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			// Just after each step's end: a reading's step is the one that
			// ended before it (history.History.Add).
			now := time.Now()
			t := time.NewTimer(now.Truncate(step).Add(step + step/100).Sub(now))
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
			r := d.reading()
			r.At = r.At.Truncate(step) // the step that just ended is the reading's
			h.Add(r)
			if h.TakeChanged() { // an idle daemon writes nothing
				keep()
			}
		}
	}()
	d.closers = append(d.closers, func() error {
		close(stop)
		<-done
		h.Add(d.reading()) // the minute so far: a start within it adds to it
		if h.TakeChanged() {
			keep()
		}
		return nil
	})
}

// reading is what the daemon has counted since it started, for the
// charts: each rule's runs, each plugin's call latency histogram (all
// its functions), the queue.
func (d *Daemon) reading() history.Reading {
	st := d.eng.Status()
	r := history.Reading{At: time.Now(), Rules: map[string]history.RuleCounts{}, Plugins: map[string]history.Buckets{},
		Queued: st.Pool.Queued}
	for _, rs := range st.Rules {
		s := rs.Stats
		r.Rules[rs.ID] = history.RuleCounts{Started: s.Started, Failed: s.Failed, TurnedAway: s.Suppressed + s.Refused, Errors: s.Errors}
	}
	fams, err := d.metrics.Gatherer().Gather()
	if err != nil {
		return r
	}
	for _, f := range fams {
		if f.GetName() != "ruled_plugin_call_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			plugin := label(m, "plugin")
			b := r.Plugins[plugin]
			hs := m.GetHistogram()
			if len(b.Counts) != len(hs.GetBucket())+1 {
				b = history.Buckets{Bounds: make([]float64, 0, len(hs.GetBucket())+1), Counts: make([]uint64, len(hs.GetBucket())+1)}
				for _, bk := range hs.GetBucket() {
					b.Bounds = append(b.Bounds, bk.GetUpperBound())
				}
				b.Bounds = append(b.Bounds, inf)
			}
			for i, bk := range hs.GetBucket() {
				b.Counts[i] += bk.GetCumulativeCount()
			}
			b.Counts[len(b.Counts)-1] += hs.GetSampleCount()
			r.Plugins[plugin] = b
		}
	}
	return r
}

var inf = math.Inf(1)

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
