package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/ruled-dev/ruled/host/audit"
	"github.com/ruled-dev/ruled/host/store"
)

// AuditPath is the audit trail's endpoint (ScopeAudit): GET
// /v1/audit?from=SEQ&limit=N, the chain's entries oldest first with where
// they sit in it (store.AuditChain); without from, the newest limit
// (default 100).
const AuditPath = "/v1/audit"

// Recorder takes audit entries (audit.Trail); it must not block.
type Recorder interface {
	Record(audit.Entry)
}

// AuditReader reads the audit trail (store.Bolt, store.RedisAudit).
type AuditReader interface {
	AuditRead(ctx context.Context, from uint64, limit int) (*store.AuditChain, error)
}

// DefaultAuditLimit is how many of the newest entries GET /v1/audit
// answers when not asked for a number.
const DefaultAuditLimit = 100

func serveAudit(mux *http.ServeMux, a AuditReader) {
	mux.HandleFunc("GET "+AuditPath, func(w http.ResponseWriter, r *http.Request) {
		if a == nil {
			http.Error(w, "this daemon keeps no audit trail", http.StatusNotFound)
			return
		}
		q := r.URL.Query()
		from, limit := uint64(0), DefaultAuditLimit
		var err error
		if s := q.Get("from"); s != "" {
			if from, err = strconv.ParseUint(s, 10, 64); err != nil {
				http.Error(w, "from: want an entry's seq", http.StatusBadRequest)
				return
			}
		}
		if s := q.Get("limit"); s != "" {
			if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > store.MaxAuditRead {
				http.Error(w, fmt.Sprintf("limit: want 1 to %d", store.MaxAuditRead), http.StatusBadRequest)
				return
			}
		}
		ch, err := a.AuditRead(r.Context(), from, limit)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, ch)
	})
}

// Audited records every request h serves that needs the control scope
// (ScopeOf: a command, a state deleted) in rec, with who sent it, from
// where, and the status it got — refused or not. A request no route of
// h's takes (h a ServeMux: a method or path the API does not have) is not
// a command, and not recorded.
func Audited(h http.Handler, rec Recorder) http.Handler {
	if rec == nil {
		return h
	}
	mux, _ := h.(*http.ServeMux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ScopeOf(r) != ScopeControl {
			h.ServeHTTP(w, r)
			return
		}
		if mux != nil {
			if _, pattern := mux.Handler(r); pattern == "" {
				h.ServeHTTP(w, r)
				return
			}
		}
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		rec.Record(commandEntry(r, sw.code, ""))
	})
}

// commandEntry is the audit entry of request r answered code.
func commandEntry(r *http.Request, code int, why string) audit.Entry {
	from := r.RemoteAddr
	if from == "" || from == "@" {
		from = "unix socket"
	}
	d := fmt.Sprintf("%s %s → %d", r.Method, r.URL.Path, code)
	if why != "" {
		d += " (" + why + ")"
	}
	return audit.Entry{Who: By(r.Context()), From: from, What: audit.Command, Detail: d}
}

// statusWriter keeps the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
