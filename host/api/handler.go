package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/console"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/task"
)

// Engine is what the API asks of the engine it serves. Every method is
// safe to call from any goroutine, at any time after Start.
type Engine interface {
	Status() status.Status
	Plugins() []status.PluginStatus
	Rules() []status.RuleStatus
	// Rule is one loaded rule with its definition (ErrUnknownRule).
	Rule(id string) (status.RuleDetail, error)
	// Pending lists the waiting durable steps, soonest first.
	Pending() ([]status.PendingRecord, error)
	// Command applies an operator's command to a rule and returns the
	// rule's status after it (errors: ErrUnknownRule, ErrBadCommand,
	// *task.IllegalError, task.MissingUntilError, or the store's).
	Command(rule string, c status.Command) (status.RuleStatus, error)
	// Runs and RunTree read the execution log (ErrNoExecLog when off).
	Runs(f runlog.Filter) ([]runlog.Run, error)
	RunTree(id string) ([]runlog.Row, error)
	// WhyNot says why a rule started no run for the triggers it turned
	// away, by reason (ErrUnknownRule for a rule not loaded).
	WhyNot(rule string) ([]seq.WhyNot, error)
	// ControlRun applies a run command (RunCommands) to run id for by
	// (errors: ErrBadCommand, seq.ErrNoRun, seq.ErrNotWaiting,
	// ErrNotRerunnable, runlog.ErrNotFound, ErrNoExecLog).
	ControlRun(id, command, by string) (status.RunControl, error)
	// Now is the engine's clock: "since 2h" counts back from it.
	Now() time.Time
	// Ready says why the engine must not be sent work now (starting,
	// stopping, its store or bus away); nil when it may.
	Ready(ctx context.Context) error
}

// Routes are the endpoints whose handlers come from elsewhere: event
// ingest (bus.Ingest over the engine's admission), the event stream, and
// the metrics. A nil one is not served.
type Routes struct {
	Ingest  http.Handler // POST bus.IngestPath
	Watch   http.Handler // GET /v1/events/watch
	Changes http.Handler // GET /v1/changes: when to look again (observe.Changes)
	Metrics http.Handler // GET /metrics
	States  States       // GET /v1/state; nil: answered 404, none kept
	Windows Windows      // GET /v1/windows/{name}; nil: answered 404, none kept
	Audit   AuditReader  // GET /v1/audit; nil: answered 404, none kept
	History Charts       // GET /v1/history; nil: answered 404, none kept
}

// Charts are the console's charts' points (host/history.History): the
// answer to a query, as JSON.
type Charts interface {
	JSON(q url.Values) ([]byte, error)
}

// Handler is the whole API over e: status, plugins, rules and their
// commands, pending steps, runs, health and readiness, the console, and
// the routes given.
func Handler(e Engine, r Routes) http.Handler {
	h := handler{e}
	mux := http.NewServeMux()
	if r.Ingest != nil {
		mux.Handle("POST "+bus.IngestPath, r.Ingest)
		// Not the console's 404: the path is right, the method is not.
		mux.HandleFunc("GET "+bus.IngestPath, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Allow", "POST")
			http.Error(w, "POST "+bus.IngestPath+" takes events; GET /v1/events/watch streams them", http.StatusMethodNotAllowed)
		})
	}
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, e.Status()) })
	mux.HandleFunc("GET /v1/plugins", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, e.Plugins()) })
	mux.HandleFunc("GET /v1/pending", func(w http.ResponseWriter, r *http.Request) {
		rule, limit, err := ParsePendingQuery(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p, err := e.Pending()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		p, total := PendingPage(p, rule, limit)
		if p == nil {
			p = []status.PendingRecord{}
		}
		w.Header().Set(TotalHeader, strconv.Itoa(total))
		writeJSON(w, p)
	})
	serveStates(mux, r.States)
	serveWindows(mux, r.Windows)
	serveAudit(mux, r.Audit)
	mux.HandleFunc("GET /v1/history", func(w http.ResponseWriter, req *http.Request) {
		if r.History == nil {
			http.Error(w, "this daemon keeps no charts", http.StatusNotFound)
			return
		}
		b, err := r.History.JSON(req.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	mux.HandleFunc("GET /v1/rules", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, e.Rules()) })
	mux.HandleFunc("POST /v1/rules/{id}/{command}", h.command)
	mux.HandleFunc("GET /v1/rules/{id}", h.rule)
	mux.HandleFunc("GET /v1/rules/{id}/why", h.whyNot)
	mux.HandleFunc("GET /v1/runs", h.runs)
	mux.HandleFunc("GET /v1/runs/{id}/tree", h.runTree)
	mux.HandleFunc("POST /v1/runs/{id}/{command}", h.runCommand)
	if r.Watch != nil {
		mux.Handle("GET /v1/events/watch", r.Watch)
	}
	if r.Changes != nil {
		mux.Handle("GET /v1/changes", r.Changes)
	}
	if r.Metrics != nil {
		mux.Handle("GET /metrics", r.Metrics)
	}
	mux.HandleFunc("GET "+WhoAmIPath, whoAmI)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", h.ready)
	mux.Handle("GET /", console.Handler())
	return mux
}

type handler struct{ e Engine }

// ready answers 200 once the engine says it may be sent work; 503 with
// the reason otherwise. A process that answers /healthz but not /readyz
// is alive and must not be sent work yet, or any more.
func (h handler) ready(w http.ResponseWriter, r *http.Request) {
	if err := h.e.Ready(r.Context()); err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ready\n"))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// maxCommandBody bounds a command's JSON body.
const maxCommandBody = 4 << 10

// command is POST /v1/rules/{id}/{command}, with an optional JSON body
// {"until": RFC 3339} or {"for": "90m"} for sleep. It answers the rule's
// status, or an error: 404 for an unknown rule, 409 for a transition the
// table refuses, 400 for a malformed command, 503 when the state cannot be
// stored.
func (h handler) command(w http.ResponseWriter, r *http.Request) {
	// JSON only: a type no form or simple cross-origin fetch may send, so
	// a web page cannot pause or kill a rule (SameOrigin is the other
	// half).
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, `a command's body is JSON: send Content-Type: application/json (and "{}" when it has no options)`,
			http.StatusUnsupportedMediaType)
		return
	}
	c := status.Command{Command: r.PathValue("command"), By: By(r.Context())}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCommandBody+1))
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case len(body) > maxCommandBody:
		http.Error(w, "command body too large", http.StatusRequestEntityTooLarge)
		return
	case len(bytes.TrimSpace(body)) > 0:
		var opts struct {
			Until *time.Time `json:"until"`
			For   string     `json:"for"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			http.Error(w, fmt.Sprintf("%v: body: %v", status.ErrBadCommand, err), http.StatusBadRequest)
			return
		}
		c.Until, c.For = opts.Until, opts.For
	}
	st, err := h.e.Command(r.PathValue("id"), c)
	if err != nil {
		http.Error(w, err.Error(), commandStatus(err))
		return
	}
	writeJSON(w, st)
}

// commandStatus is the HTTP status for a command's error.
func commandStatus(err error) int {
	var ill *task.IllegalError
	switch {
	case errors.Is(err, status.ErrUnknownRule):
		return http.StatusNotFound
	case errors.As(err, &ill):
		return http.StatusConflict
	case errors.Is(err, status.ErrBadCommand), errors.Is(err, task.MissingUntilError):
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}

func (h handler) runs(w http.ResponseWriter, r *http.Request) {
	f, err := ParseRunFilter(r.URL.Query(), h.e.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	runs, err := h.e.Runs(f)
	if err != nil {
		http.Error(w, err.Error(), runsStatus(err))
		return
	}
	if runs == nil {
		runs = []runlog.Run{}
	}
	writeJSON(w, runs)
}

func (h handler) runTree(w http.ResponseWriter, r *http.Request) {
	rows, err := h.e.RunTree(r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), runsStatus(err))
		return
	}
	writeJSON(w, rows)
}

// runCommand is POST /v1/runs/{id}/{command}: cancel, rerun, now or drop
// (RunCommands), with a JSON body ("{}"), for the same reason a rule's
// command takes one. The run's tree records who asked (By).
func (h handler) runCommand(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, `a command's body is JSON: send Content-Type: application/json and "{}"`, http.StatusUnsupportedMediaType)
		return
	}
	by := cmp.Or(By(r.Context()), "api")
	res, err := h.e.ControlRun(r.PathValue("id"), r.PathValue("command"), by)
	if err != nil {
		http.Error(w, err.Error(), runCommandStatus(err))
		return
	}
	writeJSON(w, res)
}

// runCommandStatus is the HTTP status for a run command's error.
func runCommandStatus(err error) int {
	switch {
	case errors.Is(err, status.ErrBadCommand):
		return http.StatusBadRequest
	case errors.Is(err, seq.ErrNoRun), errors.Is(err, runlog.ErrNotFound), errors.Is(err, status.ErrNoExecLog):
		return http.StatusNotFound
	case errors.Is(err, seq.ErrNotWaiting), errors.Is(err, status.ErrNotRerunnable):
		return http.StatusConflict
	}
	return http.StatusServiceUnavailable
}

// rule is GET /v1/rules/{id}: the rule's status and definition; 404 for
// a rule not loaded.
func (h handler) rule(w http.ResponseWriter, r *http.Request) {
	d, err := h.e.Rule(r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), commandStatus(err))
		return
	}
	writeJSON(w, d)
}

// whyNot is GET /v1/rules/{id}/why: the triggers the rule turned away,
// by reason, each with its count and its last few (seq.WhyNot).
func (h handler) whyNot(w http.ResponseWriter, r *http.Request) {
	ws, err := h.e.WhyNot(r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), commandStatus(err))
		return
	}
	writeJSON(w, ws)
}

func runsStatus(err error) int {
	switch {
	case errors.Is(err, runlog.ErrNotFound), errors.Is(err, status.ErrNoExecLog):
		return http.StatusNotFound
	}
	return http.StatusServiceUnavailable
}
