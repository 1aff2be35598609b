package daemon

import (
	"path/filepath"
	"sort"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/ingest"
	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/internal/release"
)

// serveAPI serves the API over the daemon (api.Engine), with the routes
// other parts own: ingest — HTTP has a client to answer "busy", so a full
// queue is a 503, not a wait —, the event stream and the metrics.
func (d *Daemon) serveAPI() (*api.Server, error) {
	sink := func(e *bus.Event) error { return d.in.Take(e, ingest.FromClient) }
	sinkAll := func(es []*bus.Event) (int, error) { return d.in.TakeAll(es, ingest.FromClient) }
	h := api.Handler(d, api.Routes{
		Ingest:  &bus.Ingest{Sink: sink, SinkAll: sinkAll, Decoder: d.decoder, Counters: d.in.Counters()},
		Watch:   observe.Stream(&d.taps, d.quit),
		Changes: observe.Changes(d.eng.Changes, 0, d.quit),
		Metrics: d.metrics.Handler(),
		States:  d.apiStates(),
		Windows: d.apiWindows(),
		Audit:   d.auditLog(),
		History: d.history,
	})
	return api.Serve(api.ServerConfig{Socket: filepath.Join(d.cfg.DataDir, api.SocketName),
		HTTPAddr: d.cfg.HTTPAddr, Token: d.cfg.Token, Tokens: d.cfg.Tokens, Scopes: d.cfg.TokenScopes, TLSCert: d.cfg.TLSCert, TLSKey: d.cfg.TLSKey,
		Rate: d.cfg.HTTPRate, Burst: d.cfg.HTTPBurst, ConnsPerAddr: d.cfg.HTTPConnsPerAddr, Warn: d.log.Warn,
		Audit: d.audit}, h)
}

// Addr is where the TCP API listens, "" when it does not.
func (d *Daemon) Addr() string { return d.api.Addr() }

var _ api.Engine = (*Daemon)(nil)

// Status reports the daemon's state: the engine's (engine.Engine.Status)
// and its adapters'.
func (d *Daemon) Status() status.Status {
	st := d.eng.Status()
	st.Build, st.Started, st.Store = release.Read(), d.started, d.storeName()
	st.Events, st.Journal = d.in.Counters().Snapshot(), d.in.Status()
	st.Fleet = d.place.Status()
	st.Signatures = d.cfg.Signatures.Gate.Report()
	st.Traces = d.traceStatus()
	if d.audit != nil {
		st.AuditDropped, st.AuditFailed = d.audit.Stats()
	}
	if d.states != nil {
		s := status.StateStatus(d.states.Stats()) // the same fields: a field added to one and not the other fails here
		st.State = &s
	}
	if d.holds != nil {
		h := status.HoldStatus(d.holds.Stats())
		st.Holds = &h
	}
	if ws := d.windowStats(); ws != nil {
		names := make([]string, 0, len(ws))
		for n := range ws {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			w := ws[n]
			st.Windows = append(st.Windows, status.WindowStatus{Name: n, Keys: w.Keys, MaxKeys: w.MaxKeys, Counted: w.Counted,
				Late: w.Late, Future: w.Future, Full: w.Full, Invalid: w.Invalid, Closed: w.Closed})
		}
	}
	if d.deployed != nil {
		st.Deployment = d.deployed.Current()
	}
	st.HTTPRefused = d.api.Refused()
	st.HTTPConnsRefused = d.api.ConnsRefused()
	st.HopsRefused = d.in.Loops()
	if d.mqtt != nil {
		m := status.MQTTStatus(d.mqtt.Stats()) // the same fields: a field added to one and not the other fails here
		st.MQTT = &m
	}
	h := status.HTTPStatus(d.out.Stats())
	st.OutboundHTTP = &h
	if d.redis != nil {
		b := d.busIn.Snapshot()
		st.Bus = &b
	}
	return st
}
